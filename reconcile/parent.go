package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/parent"
)

// fetch reads the parent key names from r's cache: a Composition, or an
// instance of r's published kind with its effective spec (see
// publish.InstanceSpec). It returns no parent when the instance's Bundle
// no longer publishes the kind: such instances are left alone. specErr is a
// stencil.dev/* annotation stencil cannot Read: the instance comes with its
// Bundle's defaults, and a pass that does not delete it stalls.
func (r *Controller) fetch(ctx context.Context, key types.NamespacedName) (p applyset.Parent, specErr, err error) {
	if r.kind == nil {
		comp := &v1alpha1.Composition{}
		if err := r.parents.Get(ctx, key, comp); err != nil {
			return nil, nil, err
		}
		return comp, nil, nil
	}
	u := instanceObject(r.kind.GVK)
	if err := r.parents.Get(ctx, key, u); err != nil {
		return nil, nil, err
	}
	b := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: r.kind.Bundle}, b); err != nil {
		return nil, nil, client.IgnoreNotFound(err)
	}
	if b.Spec.API == nil || publish.GVK(publish.Defaulted(*b.Spec.API)) != r.kind.GVK {
		return nil, nil, nil
	}
	// With an error, spec holds the Bundle's defaults alone.
	spec, specErr := publish.InstanceSpec(b.Name, b.Spec.API, u)
	return applyset.NewInstance(u, spec), specErr, nil
}

// ensureParent reads the recorded applyset.Inventory and finalizer (see
// recordedParent). Nothing is written yet: widen writes the finalizer, the
// ApplySet id and tooling with the widened applyset.Inventory, in one patch, before
// anything is applied.
func (r *Controller) ensureParent(ctx context.Context, s *scope) (ctrl.Result, error) {
	var err error
	s.parent, err = r.store.Recorded(ctx, s.comp)
	return ctrl.Result{}, err
}

// widen records old ∪ new group-kinds and namespaces on the parent, with
// its finalizer, ApplySet id and tooling, before anything is applied, so a
// crash mid-apply leaves every member findable and the parent undeletable
// until its members are gone.
func (r *Controller) widen(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.comp.ParentSpec().Suspend {
		return ctrl.Result{}, nil
	}
	r.store.WarnIgnored(s.comp, s.parent.Ignored.Minus(s.plan.Inventory.Normalize(s.comp.GetNamespace())))
	var err error
	s.parent, err = r.store.Write(ctx, s.comp, s.parent, parent.State{Inventory: s.parent.Inventory.Union(s.plan.Inventory), Finalizer: true})
	return ctrl.Result{}, err
}

// consent is what lets the set of pass s adopt an existing object of no
// set (see applyset.Owns): the stencil.dev/adopt annotation naming the
// parent (its resource as the API server serves its kind), or a kind the
// rendered Bundle's spec.permissions.adopt lists (for a revision, within
// its Bundle's current one). It reads only the RESTMapper: no request.
func (r *Controller) consent(_ context.Context, s *scope) applyset.Consent {
	return r.Consent(s.comp, s.plan)
}
