package reconcile

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
)

// watch makes sure every kind the plan renders is watched, so that changes
// to members bring their Composition back. A kind the controller may not
// list and watch cluster-wide stalls the Composition (reason Forbidden)
// before any informer is started for it and before anything is applied.
func (r *CompositionReconciler) watch(ctx context.Context, s *scope) (ctrl.Result, error) {
	gvks := make([]schema.GroupVersionKind, 0, len(s.plan.Objects))
	for _, o := range s.plan.Objects {
		if gvk := o.GroupVersionKind(); !slices.Contains(gvks, gvk) {
			gvks = append(gvks, gvk)
		}
	}
	if _, err := r.watches.Ensure(ctx, gvks); err != nil {
		return r.stallIfDenied(s, "Watch", err)
	}
	return ctrl.Result{}, nil
}
