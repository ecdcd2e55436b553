package latency

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
)

// Outputs times, -samples times, a change of a member's field (the
// ConfigMap's data.extra, which the template leaves to other writers)
// until the Composition's status.outputs.extra shows it: from the change's
// answer to the harness's watch seeing the parent's status with it
// (res.Outputs). It also counts what p spent over the samples
// (res.OutputsPass): each is one pass that changes only an output.
func Outputs(ctx context.Context, h *harness.Harness, p *controller.Process, res *table.Results) error {
	comp := &v1alpha1.Composition{
		ObjectMeta: metav1.ObjectMeta{Name: fixture.OutputsName, Namespace: fixture.NSRoll},
		Spec:       v1alpha1.CompositionSpec{Bundle: fixture.OutputsBundleName},
	}
	if err := h.Admin.Create(ctx, comp); err != nil {
		return err
	}
	key := fixture.NSRoll + "/" + fixture.OutputsName
	if err := h.Watch.Until(ctx, 2*time.Minute, "the outputs Composition Ready with its output", func() bool {
		_, ready := h.Watch.ReadySince(key, comp.Generation)
		_, out := h.Watch.OutputSince(key, `""`)
		return ready && out
	}); err != nil {
		return err
	}
	progress.Logf("outputs latency: %d changes of a member", h.Options.Samples)
	w, err := h.Begin(ctx, p)
	if err != nil {
		return err
	}
	cpu, _ := p.CPU()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fixture.OutputsName, Namespace: fixture.NSRoll}}
	for i := 1; i <= h.Options.Samples; i++ {
		d, err := changeOnce(ctx, h, cm, key, fmt.Sprintf("v%d", i))
		if err != nil {
			return fmt.Errorf("sample %d: %w", i, err)
		}
		res.Outputs = append(res.Outputs, d)
	}
	cpuEnd, _ := p.CPU()
	res.OutputsPass.CPU = cpuEnd - cpu
	if res.OutputsPass.Requests, err = h.End(ctx, p, w); err != nil {
		return err
	}
	return deleteAndWait(ctx, h, comp)
}

// changeOnce sets the member cm's data.extra to value and returns the time
// from the change's answer to the Composition key seen with the output.
func changeOnce(ctx context.Context, h *harness.Harness, cm *corev1.ConfigMap, key, value string) (time.Duration, error) {
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{"extra": value}})
	if err := h.Admin.Patch(ctx, cm, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return 0, err
	}
	changed := time.Now()
	want, _ := json.Marshal(value)
	var seen time.Time
	if err := h.Watch.Until(ctx, 2*time.Minute, "the parent's output", func() bool {
		var ok bool
		seen, ok = h.Watch.OutputSince(key, string(want))
		return ok
	}); err != nil {
		return 0, err
	}
	return max(seen.Sub(changed), 0), nil
}

// deleteAndWait deletes comp and waits until it is gone.
func deleteAndWait(ctx context.Context, h *harness.Harness, comp *v1alpha1.Composition) error {
	if err := h.Admin.Delete(ctx, comp); err != nil {
		return err
	}
	return wait.Poll(ctx, 2*time.Minute, func() (bool, error) {
		err := h.Admin.Get(ctx, client.ObjectKeyFromObject(comp), &v1alpha1.Composition{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
