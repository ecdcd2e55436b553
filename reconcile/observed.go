package reconcile

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/engine"
	rlookup "github.com/stencil-dev/stencil/reconcile/lookup"
	"github.com/stencil-dev/stencil/reconcile/observe"
)

// MaxObservedPasses is observe.MaxPasses: this many unsettled passes in
// a row stall the parent (reason Flapping).
const MaxObservedPasses = observe.MaxPasses

// observerPass names pass s, rendering bundleRevision, to the observer
// (package observe): the lookups of a parent are made for its
// ServiceAccount, or for the controller itself when it writes as itself.
func (r *Controller) observerPass(s *scope, bundleRevision string) observe.Pass {
	var id rlookup.Identity
	if sa := engine.ServiceAccount(s.comp, r.Options.DefaultServiceAccount); sa != "" && s.writer != r.Client {
		id = rlookup.Identity{Namespace: s.comp.GetNamespace(), Name: sa}
	}
	return observe.Pass{Parent: s.comp, Kind: r.parentGVK().GroupKind(), Identity: id, Record: s.parent.Record, Key: memoKey(s.comp, bundleRevision)}
}

// lookupParent names s's parent to the lookup server.
func (r *Controller) lookupParent(s *scope) rlookup.Parent {
	return rlookup.Parent{Kind: r.parentGVK().GroupKind(), Key: client.ObjectKeyFromObject(s.comp)}
}

// settle runs after the apply (observe.Observer.Settle): a value the
// render used that moved makes the pass unsettled (its snapshot is not
// kept, nothing is pruned, the next pass renders with the new value); an
// answer only an outside change moved leaves the set as it is; too many
// unsettled passes in a row stall the parent (reason Flapping).
func (r *Controller) settle(ctx context.Context, s *scope) (ctrl.Result, error) {
	st := r.observer.Settle(ctx, r.observerPass(s, s.plan.BundleRevision), s.observed, s.results)
	if len(st.Stale) > 0 || len(st.Rerender) > 0 {
		s.snapshot = nil
		s.stale, s.rerender = st.Stale, st.Rerender
	}
	if st.Flapping == "" {
		return ctrl.Result{}, nil
	}
	r.Recorder.Eventf(s.comp, nil, "Warning", v1alpha1.ReasonFlapping, "Render", "%s", st.Flapping)
	return r.stallTerminal(s, v1alpha1.ReasonFlapping, st.Flapping), nil
}
