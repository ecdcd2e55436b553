package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// fetch reads the parent key names from r's cache: a Composition, or an
// instance of r's published kind with its effective spec (see
// publish.InstanceSpec). It returns no parent when the instance's Bundle
// no longer publishes the kind: such instances are left alone. specErr is a
// stencil.dev/* annotation stencil cannot read: the instance comes with its
// Bundle's defaults, and a pass that does not delete it stalls.
func (r *CompositionReconciler) fetch(ctx context.Context, key types.NamespacedName) (p applyset.Parent, specErr, err error) {
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
