package versions

import (
	"context"
	"fmt"
	"slices"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
)

// setBundle writes spec into the Bundle name, again on a conflict.
func setBundle(ctx context.Context, c client.Client, name string, spec v1alpha1.BundleSpec) error {
	return wait.Poll(ctx, time.Minute, func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
			return false, err
		}
		b.Spec = spec
		err := c.Update(ctx, b)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// revision waits until the Bundle name is Ready for its generation on a
// revision other than not, and returns it. A Bundle that is not Ready
// (its kind not served: ConversionUnavailable, VersionStillStored, ...)
// times out with its condition's reason and message.
func revision(ctx context.Context, c client.Client, name, not string) (string, error) {
	var rev, last string
	err := wait.Poll(ctx, 2*time.Minute, func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, b); err != nil {
			return false, err
		}
		rev = b.Status.Revision
		cond := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.ConditionReady)
		if cond != nil {
			last = fmt.Sprintf("Ready=%s %s: %s", cond.Status, cond.Reason, cond.Message)
		}
		return b.Status.ObservedGeneration == b.Generation && cond != nil && cond.Status == "True" && rev != "" && rev != not, nil
	})
	if err != nil {
		return "", fmt.Errorf("the Bundle %s: %w (%s)", name, err, last)
	}
	return rev, nil
}

// getCRD reads the kind's CRD.
func getCRD(ctx context.Context, c client.Reader) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	return crd, c.Get(ctx, client.ObjectKey{Name: crdName}, crd)
}

// versionsOf are the names of crd's versions, and its storage version.
func versionsOf(crd *apiextensionsv1.CustomResourceDefinition) (names []string, storage string) {
	for _, v := range crd.Spec.Versions {
		names = append(names, v.Name)
		if v.Storage {
			storage = v.Name
		}
	}
	slices.Sort(names)
	return names, storage
}

// waitCRD polls the CRD every 100ms until done holds of it and returns
// when it saw that; what names the wait.
func waitCRD(ctx context.Context, c client.Reader, timeout time.Duration, what string, done func(*apiextensionsv1.CustomResourceDefinition) bool) (time.Time, error) {
	var last string
	err := wait.Poll(ctx, timeout, func() (bool, error) {
		crd, err := getCRD(ctx, c)
		if err != nil {
			last = err.Error()
			return false, client.IgnoreNotFound(err)
		}
		names, storage := versionsOf(crd)
		last = fmt.Sprintf("versions %v, storage %s, status.storedVersions %v", names, storage, crd.Status.StoredVersions)
		return done(crd), nil
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("CRD %s, waiting for %s: %w (%s)", crdName, what, err, last)
	}
	return time.Now(), nil
}

// established reports whether crd is Established.
func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// storedIn reports whether crd stores in version.
func storedIn(version string) func(*apiextensionsv1.CustomResourceDefinition) bool {
	return func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		_, storage := versionsOf(crd)
		return storage == version && established(crd)
	}
}

// only reports whether crd has version alone, stored.
func only(version string) func(*apiextensionsv1.CustomResourceDefinition) bool {
	return func(crd *apiextensionsv1.CustomResourceDefinition) bool {
		names, _ := versionsOf(crd)
		return slices.Equal(names, []string{version}) && slices.Equal(crd.Status.StoredVersions, []string{version}) && established(crd)
	}
}

// waitMigrated waits, polling every 250ms, until the Bundle's
// status.storage says Migrated to version at the CRD's generation and the
// CRD's status.storedVersions is [version]; it returns the status and
// when it saw it.
func waitMigrated(ctx context.Context, c client.Reader, version string, timeout time.Duration) (*v1alpha1.StorageStatus, time.Time, error) {
	var st *v1alpha1.StorageStatus
	var last string
	err := wait.PollEvery(ctx, 250*time.Millisecond, timeout, "the storage migration to "+version, func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := c.Get(ctx, client.ObjectKey{Name: bundleName}, b); err != nil {
			return false, err
		}
		crd, err := getCRD(ctx, c)
		if err != nil {
			return false, err
		}
		st = b.Status.Storage
		last = fmt.Sprintf("status.storage %+v, CRD generation %d, status.storedVersions %v", st, crd.Generation, crd.Status.StoredVersions)
		return st != nil && st.Phase == v1alpha1.StorageMigrated && st.TargetVersion == version && st.CRDGeneration == crd.Generation &&
			slices.Equal(crd.Status.StoredVersions, []string{version}), nil
	})
	if err != nil {
		return st, time.Time{}, fmt.Errorf("%w (%s)", err, last)
	}
	return st, time.Now(), nil
}
