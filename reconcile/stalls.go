package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/stencil-dev/stencil/reconcile/status"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// stall is what the stalls memo keeps, per Composition, under the inputs
// it had (inputKey): a terminal failure of its last
// apply (an object the API server rejects, a refused member, a member that
// flaps) with the inputs it had. The same inputs would fail the same way,
// so until the Composition's spec or its Bundle changes the failure is
// reported again without writing anything. A Forbidden failure is
// remembered only for ForbiddenRecheck: RBAC and quotas change without an
// event.
type stall struct {
	reason  string
	message string
	expires time.Time // zero: until the inputs change
}

// inputKey identifies the inputs of a Composition's pass that stencil
// treats as "no change": the Composition (by UID, so one made anew under
// the same name starts afresh), its generation (spec.values and the rest of
// the spec) and the Bundle's revision.
func inputKey(comp applyset.Parent, bundleRevision string) string {
	return fmt.Sprintf("%s/%d/%s", comp.GetUID(), comp.GetGeneration(), bundleRevision)
}

// recall ends the pass, writing nothing, when the last pass with the same
// inputs stalled on a terminal failure: the status says so again.
func (r *CompositionReconciler) recall(_ context.Context, s *scope) (ctrl.Result, error) {
	name := types.NamespacedName{Namespace: s.comp.GetNamespace(), Name: s.comp.GetName()}
	if s.comp.ParentSpec().Suspend {
		return ctrl.Result{}, nil
	}
	st, ok := r.stalls.get(name, inputKey(s.comp, s.plan.BundleRevision))
	if !ok || !st.expires.IsZero() && time.Now().After(st.expires) {
		r.stalls.forget(name)
		return ctrl.Result{}, nil
	}
	status.SetStalled(&s.status, s.comp.GetGeneration(), st.reason, st.message)
	s.done = true
	if !st.expires.IsZero() {
		return ctrl.Result{RequeueAfter: time.Until(st.expires) + time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// stallTerminal stalls the Composition on a terminal failure and remembers
// it for these inputs (see stalls).
func (r *CompositionReconciler) stallTerminal(s *scope, reason, msg string) ctrl.Result {
	status.SetStalled(&s.status, s.comp.GetGeneration(), reason, msg)
	st := stall{reason: reason, message: msg}
	var res ctrl.Result
	if reason == v1alpha1.ReasonForbidden {
		st.expires = time.Now().Add(ForbiddenRecheck)
		res.RequeueAfter = ForbiddenRecheck
	}
	r.stalls.put(types.NamespacedName{Namespace: s.comp.GetNamespace(), Name: s.comp.GetName()}, inputKey(s.comp, s.plan.BundleRevision), st)
	s.done = true
	return res
}
