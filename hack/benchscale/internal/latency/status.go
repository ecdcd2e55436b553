package latency

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
)

// Status rolls the Deployment of a Composition -samples times and times,
// for each, the Deployment being Current to the Composition being Ready,
// into res.Latencies.
func Status(ctx context.Context, h *harness.Harness, res *table.Results) error {
	comp := &v1alpha1.Composition{
		ObjectMeta: metav1.ObjectMeta{Name: fixture.RollName, Namespace: fixture.NSRoll},
		Spec:       v1alpha1.CompositionSpec{Bundle: fixture.RollBundleName, Values: &apiextensionsv1.JSON{Raw: []byte(`{"image":"registry.example/app:0"}`)}},
	}
	if err := h.Admin.Create(ctx, comp); err != nil {
		return err
	}
	key := fixture.NSRoll + "/" + fixture.RollName
	if err := h.Watch.Until(ctx, 2*time.Minute, "the rolling Composition Ready", func() bool {
		_, ok := h.Watch.ReadySince(key, comp.Generation)
		return ok
	}); err != nil {
		return err
	}
	progress.Logf("status latency: %d rollouts", h.Options.Samples)
	for i := 1; i <= h.Options.Samples; i++ {
		d, err := rollOnce(ctx, h, comp, i)
		if err != nil {
			return fmt.Errorf("sample %d: %w", i, err)
		}
		res.Latencies = append(res.Latencies, d)
	}
	// Gone before the unrelated objects load the cluster: kwok's node
	// heartbeats may then lag, and the node controller mark its pods not
	// ready, which no measurement after this one is about.
	return deleteAndWait(ctx, h, comp)
}

// rollOnce gives the Deployment a new image and returns the time from its
// being Current with that image to the Composition being Ready for the
// generation that set it.
func rollOnce(ctx context.Context, h *harness.Harness, comp *v1alpha1.Composition, i int) (time.Duration, error) {
	image := fmt.Sprintf("registry.example/app:%d", i)
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"values": map[string]string{"image": image}}})
	if err := h.Admin.Patch(ctx, comp, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return 0, err
	}
	key, gen := fixture.NSRoll+"/"+fixture.RollName, comp.Generation
	var current, ready time.Time
	err := h.Watch.Until(ctx, 2*time.Minute, "the rollout and the Composition's Ready", func() bool {
		var okC, okR bool
		current, okC = h.Watch.CurrentSince(key, image)
		ready, okR = h.Watch.ReadySince(key, gen)
		return okC && okR
	})
	if err != nil {
		return 0, err
	}
	return ready.Sub(current), nil
}
