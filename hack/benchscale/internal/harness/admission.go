package harness

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// WaitAdmission waits until the API server admits a Composition naming no
// ServiceAccount (stencil's admission policy refuses it until the
// controller has published its default one) and, when the controller
// serves its webhooks, until the mutating one answers: a dry-run create
// gets the ApplySet id label.
func (h *Harness) WaitAdmission(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		probe := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: fixture.NSBench}, Spec: v1alpha1.CompositionSpec{Bundle: fixture.BenchBundleName}}
		last = h.Admin.Create(ctx, probe, client.DryRunAll)
		if last == nil && (len(h.Ctrl.Webhook) == 0 || probe.Labels[applyset.LabelApplySetID] != "") {
			progress.Logf("the API server admits Compositions (and the controller's admission webhooks answer)")
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("a Composition was not admitted (or the mutating webhook did not answer) in 2m (last error: %v)", last)
}
