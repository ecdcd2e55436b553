package published

import (
	"context"
	"errors"
	"fmt"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
)

// keepStored refuses next, the CRD b asks for, when it drops a version
// that live, the CRD b keeps, still holds in status.storedVersions
// (publish.CheckVersionRemoval): the publication is refused with reason
// VersionStillStored, naming the versions and how many instances remain
// to be rewritten (the storage migration, package reconcile/migration,
// reports its progress in b's status.storage), and live is left as it
// was (not even taken over), its kind's controller, if running, running
// on. The storage migration's trim of status.storedVersions changes live,
// which brings the next pass. A count that fails is said instead.
func (r *BundleReconciler) keepStored(ctx context.Context, b *v1alpha1.Bundle, live, next *apiextensionsv1.CustomResourceDefinition, what string) publication {
	err := publish.CheckVersionRemoval(live, next)
	var stored *publish.VersionStillStoredError
	if !errors.As(err, &stored) {
		return publication{}
	}
	var remain string
	if n, cerr := r.countInstances(ctx, live, stored.Storage); cerr != nil {
		remain = fmt.Sprintf("; the instances that remain to be rewritten could not be counted: %v", cerr)
	} else {
		if st := b.Status.Storage; st != nil && st.Phase == v1alpha1.StorageMigrating && st.TargetVersion == stored.Storage {
			n = max(n-st.Migrated, 0)
		}
		remain = fmt.Sprintf("; up to %d instances remain to be rewritten", n)
	}
	return publication{reason: v1alpha1.ReasonVersionStillStored, message: fmt.Sprintf("%s is not changed: %v%s", what, err, remain)}
}

// countInstances counts the instances of live's kind, listing their
// metadata in version (as the controller: they are the Bundle's kind).
func (r *BundleReconciler) countInstances(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition, version string) (int64, error) {
	gvk := schema.GroupVersionKind{Group: live.Spec.Group, Version: version, Kind: live.Spec.Names.Kind + "List"}
	var n int64
	cont := ""
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk)
		if err := r.APIReader.List(ctx, list, client.Limit(500), client.Continue(cont)); err != nil {
			return 0, fmt.Errorf("count the instances of %s: %w", live.Name, err)
		}
		n += int64(len(list.Items))
		if cont = list.GetContinue(); cont == "" {
			return n, nil
		}
	}
}
