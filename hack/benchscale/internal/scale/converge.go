package scale

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/parallel"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
)

// coldConverge creates N Compositions at once and waits until all are
// Ready, then until p is idle, into cold.
func coldConverge(ctx context.Context, h *harness.Harness, p *controller.Process, cold *table.Pass) error {
	n := h.Options.N
	before, err := p.Scrape(ctx)
	if err != nil {
		return err
	}
	w, err := h.Begin(ctx, p)
	if err != nil {
		return err
	}
	profs, err := h.StartProfiles(ctx)
	if err != nil {
		return err
	}
	cpu, workersCPU := p.CPU()
	plane := h.Plane.CPU()
	progress.Logf("cold converge: creating %d Compositions", n)
	err = parallel.ForEach(ctx, 16, n, func(ctx context.Context, i int) error {
		return h.Admin.Create(ctx, &v1alpha1.Composition{
			ObjectMeta: metav1.ObjectMeta{Name: fixture.CompositionName(i), Namespace: fixture.NSBench},
			Spec:       v1alpha1.CompositionSpec{Bundle: fixture.BenchBundleName},
		})
	})
	if err != nil {
		return err
	}
	timeout := 5*time.Minute + time.Duration(n)*300*time.Millisecond
	if err := h.Watch.Until(ctx, timeout, "every Composition Ready", func() bool { return h.Watch.ReadyCount(fixture.NSBench) == n }); err != nil {
		return err
	}
	cold.Elapsed = time.Since(w.From)
	cpuEnd, workersEnd := p.CPU()
	cold.CPU, cold.WorkersCPU = cpuEnd-cpu, workersEnd-workersCPU
	cold.Plane = h.Plane.CPU().Since(plane)
	progress.Logf("cold converge: %d Compositions Ready in %s", n, cold.Elapsed.Round(time.Millisecond))
	reconciles := before.Sum("controller_runtime_reconcile_total", map[string]string{"controller": "composition"})
	if _, err := p.Idle(ctx, reconciles+float64(n), 5*time.Minute); err != nil {
		return err
	}
	after, err := p.Scrape(ctx)
	if err != nil {
		return err
	}
	cold.Passes = after.CountsSince(before, "stencil_reconcile_passes_total", "outcome")
	cold.Applies = after.CountsSince(before, "stencil_applies_total", "result")
	if err := h.StopProfiles(ctx, profs, "the cold converge", ""); err != nil {
		return err
	}
	cold.Requests, err = h.End(ctx, p, w)
	return err
}
