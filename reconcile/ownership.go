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
	var c applyset.Consent
	gvk := s.comp.ParentGVK()
	if m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		c.Parent = applyset.AdoptValue(s.comp, m.Resource.Resource)
	}
	b := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: s.comp.ParentSpec().Bundle}, b); err == nil {
		c.Kinds = b.Spec.Permissions.Adopt
	}
	return c
}
