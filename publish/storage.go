package publish

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// VersionStillStoredError says that the CRD a Bundle asks for drops
// versions that the live CRD's status.storedVersions still holds: the
// API server would refuse it, and the instances stored in them would be
// lost to every client. The storage migration (package
// reconcile/migration) rewrites them in the storage version and trims
// status.storedVersions; only then may the versions go.
type VersionStillStoredError struct {
	// CRD is the CRD's name.
	CRD string
	// Versions are the versions dropped while stored, in the order of
	// status.storedVersions.
	Versions []string
	// Storage is the live CRD's storage version.
	Storage string
}

// Error names the versions, the CRD, and what to do.
func (e *VersionStillStoredError) Error() string {
	which := "version " + e.Versions[0] + " is"
	if len(e.Versions) > 1 {
		which = "versions " + strings.Join(e.Versions, ", ") + " are"
	}
	msg := fmt.Sprintf("%s still in status.storedVersions of CustomResourceDefinition %s", which, e.CRD)
	if slices.Contains(e.Versions, e.Storage) {
		return msg + fmt.Sprintf(" (%s is its storage version): publish the new version beside it as the storage version first, and remove %s once the storage migration trimmed it (status.storage of the Bundle)", e.Storage, e.Storage)
	}
	return msg + fmt.Sprintf(": the storage migration to %s must finish first (status.storage of the Bundle)", e.Storage)
}

// CheckVersionRemoval checks that next, the CRD a Bundle asks for, keeps
// every version live's status.storedVersions holds (served or not): a
// version may leave spec.versions only once no instance is stored in it.
// It returns a *VersionStillStoredError naming those it drops, or nil.
// live nil (no CRD yet) passes.
func CheckVersionRemoval(live, next *apiextensionsv1.CustomResourceDefinition) error {
	if live == nil || next == nil {
		return nil
	}
	var dropped []string
	for _, v := range live.Status.StoredVersions {
		if !slices.ContainsFunc(next.Spec.Versions, func(nv apiextensionsv1.CustomResourceDefinitionVersion) bool { return nv.Name == v }) {
			dropped = append(dropped, v)
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	return &VersionStillStoredError{CRD: live.Name, Versions: dropped, Storage: StorageVersionOf(live)}
}

// StorageVersionOf is the name of crd's storage version (the one marked
// storage), or "" when none is.
func StorageVersionOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}
