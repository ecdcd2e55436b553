package engine

import (
	"context"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PublishingBundle finds the Bundle that publishes gvk among those
// bundles lists: the only one whose api serves it or, when several claim
// it, the one its CustomResourceDefinition (read with crds) is labelled
// with, the one the controller serves it for. With none it returns nil,
// and the names of the claimants when there are several and the CRD
// names none of them (or does not exist yet).
func PublishingBundle(ctx context.Context, bundles, crds client.Reader, gvk schema.GroupVersionKind) (*v1alpha1.Bundle, []string, error) {
	list := &v1alpha1.BundleList{}
	if err := bundles.List(ctx, list); err != nil {
		return nil, nil, fmt.Errorf("list Bundles: %w", err)
	}
	var found []*v1alpha1.Bundle
	for i := range list.Items {
		if publish.Serves(list.Items[i].Spec.API, gvk) {
			found = append(found, &list.Items[i])
		}
	}
	if len(found) <= 1 {
		if len(found) == 0 {
			return nil, nil, nil
		}
		return found[0], nil, nil
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	err := crds.Get(ctx, client.ObjectKey{Name: publish.CRDName(*found[0].Spec.API)}, crd)
	if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		return nil, nil, fmt.Errorf("read the CustomResourceDefinition of %s: %w", gvk.GroupKind(), err)
	}
	names := make([]string, len(found))
	for i, b := range found {
		if b.Name == crd.GetLabels()[publish.LabelBundle] {
			return b, nil, nil
		}
		names[i] = b.Name
	}
	return nil, names, nil
}
