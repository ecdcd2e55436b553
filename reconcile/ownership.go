package reconcile

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// consent is what lets the set of pass s adopt an existing object of no
// set (see applyset.Owns): the stencil.dev/adopt annotation naming the
// parent (its resource as the API server serves its kind), or a kind the
// Bundle's spec.permissions.adopt lists. It reads only cached objects and
// the RESTMapper: no request.
func (r *CompositionReconciler) consent(ctx context.Context, s *scope) applyset.Consent {
	return r.Consent(ctx, s.comp)
}

// Consent is what lets parent's set adopt an existing object of no set
// (see applyset.Owns), as the controller applies it: the admission
// webhook's dry runs use it too. It reads only cached objects and the
// RESTMapper.
func (r *CompositionReconciler) Consent(ctx context.Context, parent applyset.Parent) applyset.Consent {
	resource := ""
	gvk := parent.ParentGVK()
	if m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		resource = m.Resource.Resource
	}
	var kinds []v1alpha1.GroupKind
	b := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: parent.ParentSpec().Bundle}, b); err == nil {
		kinds = b.Spec.Permissions.Adopt
	}
	return applyset.ConsentOf(parent, resource, kinds)
}
