package scale

import (
	"context"
	"fmt"
	"time"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/floor"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/latency"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/profile"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
)

// Run runs the scale benchmark's measurements in order, into res.
func Run(ctx context.Context, h *harness.Harness, res *table.Results) error {
	if err := floor.Measure(ctx, h, res); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	p, err := controller.Start(ctx, h.Ctrl, 1)
	if err != nil {
		return err
	}
	defer func() { p.Stop() }()
	progress.Logf("controller started (pid %d); its log is in %s", p.PID(), h.Ctrl.LogDir)
	if err := h.WaitAdmission(ctx); err != nil {
		return err
	}
	if err := floor.MeasureParents(ctx, h, p, res); err != nil {
		return fmt.Errorf("floor with parents: %w", err)
	}
	if err := h.Plane.WaitIdle(ctx, "cold converge", time.Minute); err != nil {
		return err
	}
	if err := coldConverge(ctx, h, p, &res.Cold); err != nil {
		return fmt.Errorf("cold converge: %w", err)
	}
	if res.Noop, err = noopPass(ctx, h, p, "1"); err != nil {
		return fmt.Errorf("no-op pass: %w", err)
	}
	if res.MemBefore, err = p.Memory(); err != nil {
		return err
	}
	if h.Options.HeapProfile != "" {
		if err := profile.SaveHeap(ctx, h.Ctrl.PProf, h.Options.HeapProfile); err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
		progress.Logf("heap profile with the members written to %s", h.Options.HeapProfile)
	}
	if err := latency.Status(ctx, h, res); err != nil {
		return fmt.Errorf("status latency: %w", err)
	}
	if err := latency.Outputs(ctx, h, p, res); err != nil {
		return fmt.Errorf("outputs latency: %w", err)
	}
	if err := unrelated(ctx, h, p, res); err != nil {
		return fmt.Errorf("unrelated objects: %w", err)
	}
	p.Stop()
	p, err = restart(ctx, h, res)
	if err != nil {
		return err
	}
	return floor.MeasureCosts(ctx, h, res)
}
