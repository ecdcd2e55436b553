package published

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/crds"
)

// adminApproved says why live, a CRD labelled for a Bundle in a group of
// Kubernetes' own (publish.ReservedGroup), may not be kept for it, or ""
// when it may. The API server admits such a CRD only with the annotation
// publish.AnnotationAPIApproved, and only whoever may write CRDs (a
// cluster admin) can make or label one; so a CRD that carries the
// annotation, set by anyone but stencil, and the Bundle's label is the
// cluster admin's opt-in, the same way Kubernetes' own: a Bundle author,
// who writes only the Bundle, cannot give it. stencil never makes the CRD
// of a published kind in such a group; a Bundle's render may make a CRD
// there (as the parent's account, plan.checkCRDs), but never one with
// the Bundle label, and an annotation any of stencil's field managers
// wrote (a rendered CRD's, applyset.FieldManager, or a chart's crds/
// CRD's, crds.FieldManager) is not the admin's. The group must still be
// served by nothing else: not by the API server itself, nor an
// aggregated API server.
func (r *BundleReconciler) adminApproved(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) (string, error) {
	served, err := r.groups.ServedGroup(ctx, live.Spec.Group)
	switch {
	case err != nil:
		return "", err
	case served != "":
		return "cannot serve it: the group is " + served, nil
	case live.Annotations[publish.AnnotationAPIApproved] == "":
		return fmt.Sprintf("carries no %s annotation of a cluster admin's", publish.AnnotationAPIApproved), nil
	}
	ours, err := stencilSet(live, publish.AnnotationAPIApproved)
	if err != nil {
		return "", fmt.Errorf("read the managed fields of CustomResourceDefinition %s: %w", live.Name, err)
	}
	if ours {
		return fmt.Sprintf("has its %s annotation from stencil, not from a cluster admin", publish.AnnotationAPIApproved), nil
	}
	return "", nil
}

// stencilSet reports whether an entry of one of stencil's field managers
// (the members', applyset.FieldManager, or the crds/ CRDs',
// crds.FieldManager) in live's managedFields owns its annotation key.
func stencilSet(live *apiextensionsv1.CustomResourceDefinition, key string) (bool, error) {
	path := fieldpath.MakePathOrDie("metadata", "annotations", key)
	for _, f := range live.ManagedFields {
		if f.Manager != applyset.FieldManager && f.Manager != crds.FieldManager || f.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(f.FieldsV1.GetRawReader()); err != nil {
			return false, err
		}
		if s.Has(path) {
			return true, nil
		}
	}
	return false, nil
}

// optIn says, in a refusal of a kind in a group of Kubernetes' own, how a
// cluster admin lets the Bundle serve it.
func optIn(crd, bundle string) string {
	return fmt.Sprintf("; stencil makes no CustomResourceDefinition there: a cluster admin may let this Bundle serve the kind by creating CustomResourceDefinition %s with the annotation %s (as the API server requires there) and the label %s: %s",
		crd, publish.AnnotationAPIApproved, publish.LabelBundle, bundle)
}
