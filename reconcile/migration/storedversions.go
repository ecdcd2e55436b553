package migration

import (
	"context"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apidiscovery "k8s.io/apiserver/pkg/endpoints/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// storing reports whether the API server's discovery says that crd's
// kind is stored in version storage: its storageVersionHash is the
// hash of the kind in that version. Discovery is updated from the same
// watch of the CRD as the API server's storage of the kind, so from then
// on what it writes is stored in that version. A kind for which
// discovery reports no hash at all (an API server that does not publish
// it) passes.
func (m *Migrator) storing(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, storage string) (bool, error) {
	gv := crd.Spec.Group + "/" + storage
	list, err := m.discovery.ServerResourcesForGroupVersionWithContext(ctx, gv)
	if apierrors.IsNotFound(err) {
		return false, nil // not served yet
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", gv, err)
	}
	want := apidiscovery.StorageVersionHash(crd.Spec.Group, storage, crd.Spec.Names.Kind)
	for _, r := range list.APIResources {
		if r.Name == crd.Spec.Names.Plural {
			return r.StorageVersionHash == "" || r.StorageVersionHash == want, nil
		}
	}
	return false, nil
}

// trim sets the status.storedVersions of the CRD named name to
// [storage], once every instance was rewritten in storage at CRD
// generation gen. It reads the CRD again and writes its status on the
// condition that it has not changed since (a Conflict is returned, for
// another pass); a CRD whose storage version or generation changed since
// is not written, and ok is false: the migration starts over.
func (m *Migrator) trim(ctx context.Context, name, storage string, gen int64) (ok bool, err error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := m.reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		return false, fmt.Errorf("read CustomResourceDefinition %s: %w", name, err)
	}
	if crd.Generation != gen || !crd.DeletionTimestamp.IsZero() {
		return false, nil
	}
	if !slices.ContainsFunc(crd.Spec.Versions, func(v apiextensionsv1.CustomResourceDefinitionVersion) bool { return v.Name == storage && v.Storage }) {
		return false, nil
	}
	if slices.Equal(crd.Status.StoredVersions, []string{storage}) {
		return true, nil
	}
	crd.Status.StoredVersions = []string{storage}
	if err := m.client.Status().Update(ctx, crd, client.FieldOwner(FieldManager)); err != nil {
		return false, fmt.Errorf("trim status.storedVersions of CustomResourceDefinition %s to [%s]: %w", name, storage, err)
	}
	return true, nil
}
