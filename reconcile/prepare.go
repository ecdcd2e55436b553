package reconcile

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/status"
)

// The phases between render and apply that may stall the pass before
// anything is written: allowed, recall, watch and authorize.

// stall is what the stalls memo keeps, per Composition, under the inputs
// it had (memoKey): a terminal failure of its last
// apply (an object the API server rejects, a refused member, a member that
// flaps) with the inputs it had. The same inputs would fail the same way,
// so until the Composition's spec or its Bundle changes the failure is
// reported again without writing anything. A Forbidden failure is
// remembered only for engine.ForbiddenRecheck: RBAC and quotas change without an
// event.
type stall struct {
	reason  string
	message string
	expires time.Time // zero: until the inputs change
}

// memoKey identifies the inputs of a Composition's pass that stencil
// treats as "no change": the Composition (by UID, so one made anew under
// the same name starts afresh), its generation (spec.values and the rest of
// the spec) and the Bundle's revision.
func memoKey(comp applyset.Parent, bundleRevision string) string {
	return fmt.Sprintf("%s/%d/%s", comp.GetUID(), comp.GetGeneration(), bundleRevision)
}

// recall ends the pass, writing nothing, when the last pass with the same
// inputs stalled on a terminal failure: the status says so again.
func (r *Controller) recall(_ context.Context, s *scope) (ctrl.Result, error) {
	name := types.NamespacedName{Namespace: s.comp.GetNamespace(), Name: s.comp.GetName()}
	if s.comp.ParentSpec().Suspend {
		return ctrl.Result{}, nil
	}
	st, ok := r.stalls.Get(name, memoKey(s.comp, s.plan.BundleRevision))
	if !ok || !st.expires.IsZero() && time.Now().After(st.expires) {
		r.stalls.Forget(name)
		return ctrl.Result{}, nil
	}
	status.SetStalled(&s.status, s.comp.GetGeneration(), st.reason, st.message)
	s.done = true
	if !st.expires.IsZero() {
		return ctrl.Result{RequeueAfter: time.Until(st.expires) + time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// watch makes sure every kind the plan renders is watched, so that changes
// to members bring their Composition back. A kind the controller may not
// list and watch cluster-wide stalls the Composition (reason Forbidden)
// before any informer is started for it and before anything is applied.
func (r *Controller) watch(ctx context.Context, s *scope) (ctrl.Result, error) {
	objs := s.plan.Objects
	if s.stores != nil && s.stores.Controller() != nil {
		objs = append(slices.Clone(objs), s.stores.Controller()) // its changes bring a pass too
	}
	gvks := make([]schema.GroupVersionKind, 0, len(objs))
	for _, o := range objs {
		if gvk := o.GroupVersionKind(); !slices.Contains(gvks, gvk) {
			gvks = append(gvks, gvk)
		}
	}
	if _, err := r.watches.Ensure(ctx, gvks); err != nil {
		return r.stallIfDenied(s, "Watch", err)
	}
	return ctrl.Result{}, nil
}

// authorize checks, before anything is applied, that the ServiceAccount a
// Composition applies as (spec.serviceAccountName or the controller's
// default) may get (the live reads of what the cache does not hold),
// create and patch every rendered kind where it is rendered,
// and delete it when pruning is on, so that a missing permission is
// reported up front (Stalled, reason Forbidden) rather than as a half-made
// apply. Kinds the API server does not serve yet (defined by a CRD in the
// same render) are left to the apply itself.
func (r *Controller) authorize(ctx context.Context, s *scope) (ctrl.Result, error) {
	sa := engine.ServiceAccount(s.comp, r.Options.DefaultServiceAccount)
	if sa == "" || s.comp.ParentSpec().Suspend {
		return ctrl.Result{}, nil
	}
	verbs := []string{"create", "patch", "get"}
	if s.comp.ParentSpec().Prune == nil || *s.comp.ParentSpec().Prune {
		verbs = append(verbs, "delete")
	}
	type target struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	var seen []target
	for _, o := range s.plan.Objects {
		t := target{o.GroupVersionKind(), o.GetNamespace()}
		if slices.Contains(seen, t) {
			continue
		}
		seen = append(seen, t)
		m, err := r.Mapper.RESTMapping(t.gvk.GroupKind(), t.gvk.Version)
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("find the API of %s: %w", t.gvk.Kind, err)
		}
		if err := r.Access.AccountMay(ctx, s.comp.GetNamespace(), sa, m, t.ns, verbs...); err != nil {
			return r.stallIfDenied(s, "Authorize", err)
		}
	}
	return ctrl.Result{}, nil
}

// allowed stalls the pass (reason NotAllowed), before anything is
// rendered, applied or pruned, when the parent's Bundle restricts the
// namespaces that may use it (spec.namespaceSelector) and does not select
// the parent's. The Bundle and the Namespace are read from the cache every
// pass; a change of a Namespace's labels brings a pass of the parents in
// it (see parentsInNamespace). A Bundle not found is left to render,
// which reports it.
func (r *Controller) allowed(ctx context.Context, s *scope) (ctrl.Result, error) {
	bundle := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.comp.ParentSpec().Bundle}, bundle); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ok, err := engine.NamespaceSelected(ctx, r.Client, bundle, s.comp.GetNamespace())
	if err != nil || ok {
		return ctrl.Result{}, err
	}
	r.passes.Forget(client.ObjectKeyFromObject(s.comp))
	r.stall(s, v1alpha1.ReasonNotAllowed, fmt.Sprintf(
		"Bundle %s may not be used in namespace %s: its spec.namespaceSelector does not select the namespace; nothing is applied or pruned",
		bundle.Name, s.comp.GetNamespace()))
	return ctrl.Result{}, nil
}
