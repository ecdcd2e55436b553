package scale

import (
	"context"
	"fmt"
	"time"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
)

// restart starts a new controller with every Composition Ready and waits
// until it has reported each Ready again (its stencil_compositions gauge)
// and is idle: res.Restart, and its memory then, res.MemRestart.
func restart(ctx context.Context, h *harness.Harness, res *table.Results) (*controller.Process, error) {
	w, err := h.Begin(ctx, nil)
	if err != nil {
		return nil, err
	}
	p, err := controller.Start(ctx, h.Ctrl, 2)
	if err != nil {
		return nil, err
	}
	total := float64(h.Options.N)
	err = wait.Poll(ctx, 10*time.Minute+time.Duration(h.Options.N)*100*time.Millisecond, func() (bool, error) {
		m, err := p.Scrape(ctx)
		return err == nil && m.Sum("stencil_compositions", map[string]string{"ready": "True"}) >= total, nil
	})
	if err != nil {
		return p, fmt.Errorf("restart: %w", err)
	}
	res.Restart.Elapsed = time.Since(p.Started)
	progress.Logf("restart: every Composition reported Ready %s after the controller started", res.Restart.Elapsed.Round(time.Millisecond))
	if _, err := p.Idle(ctx, total, 5*time.Minute); err != nil {
		return p, err
	}
	res.Restart.Requests, err = h.End(ctx, p, w)
	if err != nil {
		return p, err
	}
	res.MemRestart, err = p.Memory()
	return p, err
}
