package migration

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// migrated is the pass of a kind stored in its storage version alone:
// its instances' metadata is listed to count writtenIn, and
// status.storage says Migrated (keeping the record of the migration
// that got there, if any).
func (p *pass) migrated(ctx context.Context) error {
	if st := p.bundle.Status.Storage; st != nil && st.Phase == v1alpha1.StorageMigrated && st.TargetVersion == p.storage {
		p.st = *st.DeepCopy()
	} else {
		p.st = v1alpha1.StorageStatus{Phase: v1alpha1.StorageMigrated, TargetVersion: p.storage, CRDGeneration: p.crd.Generation}
		if st != nil && st.TargetVersion == p.storage {
			// Trimmed by another (an earlier controller, a cluster admin).
			p.st.StartTime, p.st.Migrated = st.StartTime, st.Migrated
		}
	}
	n, err := p.count(ctx)
	if err != nil {
		p.st.Message = fmt.Sprintf("the instances could not be counted: %v", err)
		if serr := p.save(ctx); serr != nil {
			ctrl.LoggerFrom(ctx).Error(serr, "record status.storage", "bundle", p.bundle.Name)
		}
		return err
	}
	p.st.Listed, p.st.WrittenIn, p.st.LastKey = n, p.written.list(), ""
	p.st.Message = migratedMessage(p.storage)
	p.warn()
	return p.save(ctx)
}

// waiting records that the migration waits for discovery to report the
// storage version as the kind's storage.
func (p *pass) waiting(ctx context.Context) error {
	p.st = p.resumed()
	p.st.Message = fmt.Sprintf("waiting for the API server to store %s in %s (the storageVersionHash of its discovery)", p.crd.Spec.Names.Kind, p.storage)
	return p.save(ctx)
}

// count lists the metadata of every instance, in pages, counting
// writtenIn; it returns how many there are.
func (p *pass) count(ctx context.Context) (int64, error) {
	gvk := schema.GroupVersionKind{Group: p.crd.Spec.Group, Version: p.storage, Kind: listKind(p.crd)}
	p.written = counts{}
	var n int64
	cont := ""
	for {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk)
		err := p.m.reader.List(ctx, list, client.Limit(p.m.opts.PageSize), client.Continue(cont))
		if apierrors.IsResourceExpired(err) && cont != "" {
			cont, p.written, n = "", counts{}, 0
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("list the instances of %s: %w", p.crd.Spec.Names.Kind, err)
		}
		for i := range list.Items {
			p.written.add(&list.Items[i])
			n++
		}
		if cont = list.GetContinue(); cont == "" {
			return n, nil
		}
	}
}

// warn appends to st.Message, and records as a VersionStillWritten
// Warning event when it is new, the versions that instances were last
// written in and that the Bundle no longer lists or serves.
func (p *pass) warn() {
	served := servedVersions(p.bundle.Spec.API)
	var gone []string
	for _, c := range p.st.WrittenIn {
		if c.Instances > 0 && !slices.Contains(served, c.Version) {
			gone = append(gone, fmt.Sprintf("%d in %s", c.Instances, c.Version))
		}
	}
	if len(gone) == 0 {
		return
	}
	warning := fmt.Sprintf("instances of %s were last written in versions the Bundle no longer serves (%s): their writers (a GitOps repository's YAML, say; `stencil migrate` rewrites it) fail on their next write until they use a version served (%s)",
		p.crd.Spec.Names.Kind, strings.Join(gone, ", "), strings.Join(served, ", "))
	p.st.Message += "; " + warning
	if old := p.bundle.Status.Storage; old == nil || !strings.Contains(old.Message, warning) {
		p.m.recorder.Eventf(p.bundle, nil, "Warning", v1alpha1.ReasonVersionStillWritten, "RemoveVersion", "%s", warning)
	}
}

// servedVersions are the versions api serves (publish.Versions: the
// single version of the old form as one), nil for no api.
func servedVersions(api *v1alpha1.BundleAPI) []string {
	if api == nil {
		return nil
	}
	var out []string
	for _, v := range publish.Versions(*api) {
		if v.Served == nil || *v.Served {
			out = append(out, v.Name)
		}
	}
	return out
}

// save writes st as the Bundle's status.storage (a merge patch of it
// alone: status.storage has no other writer) unless it is there already.
// A Bundle gone meanwhile is not an error: its deletion ends the
// migration.
func (p *pass) save(ctx context.Context) error {
	if equality.Semantic.DeepEqual(p.bundle.Status.Storage, &p.st) {
		return nil
	}
	orig := p.bundle.DeepCopy()
	p.bundle.Status.Storage = p.st.DeepCopy()
	if err := p.m.client.Status().Patch(ctx, p.bundle, client.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("patch status.storage of Bundle %s: %w", p.bundle.Name, err)
	}
	return nil
}

// counts are the instances by the version of their latest write.
type counts map[string]int64

// add counts obj under the version of its latest write (writtenIn), if
// it has one.
func (c counts) add(obj metav1.Object) {
	if v := writtenIn(obj.GetManagedFields()); v != "" {
		c[v]++
	}
}

// list is c as status.storage.writtenIn, by version.
func (c counts) list() []v1alpha1.VersionCount {
	out := make([]v1alpha1.VersionCount, 0, len(c))
	for v, n := range c {
		out = append(out, v1alpha1.VersionCount{Version: v, Instances: n})
	}
	slices.SortFunc(out, func(a, b v1alpha1.VersionCount) int { return strings.Compare(a.Version, b.Version) })
	return out
}

// writtenIn is the version of the newest managedFields entry of the main
// resource (not a subresource's: the status is stencil's) by a manager
// other than stencil's own (its metadata applies and the migration's
// rewrites), the later of two at the same time; "" when there is none.
func writtenIn(managed []metav1.ManagedFieldsEntry) string {
	var latest *metav1.ManagedFieldsEntry
	for i := range managed {
		f := &managed[i]
		if f.Subresource != "" || f.Manager == applyset.FieldManager || f.Manager == FieldManager {
			continue
		}
		if latest == nil || f.Time == nil || latest.Time == nil || !f.Time.Before(latest.Time) {
			latest = f
		}
	}
	if latest == nil {
		return ""
	}
	gv, err := schema.ParseGroupVersion(latest.APIVersion)
	if err != nil {
		return ""
	}
	return gv.Version
}
