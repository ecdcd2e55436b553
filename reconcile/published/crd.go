package published

import (
	"context"
	"errors"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/authority"
	"github.com/stencil-dev/stencil/reconcile/engine"
)

// keepCRD makes the CRD of b's kind, or brings the one b made up to
// date, and never touches one b did not make:
//
//   - none exists: the kind's group must be one that only CRDs serve
//     (not built in or aggregated: see GroupServer) and not Kubernetes'
//     own (k8s.io, kubernetes.io: a Bundle alone never gets a CRD
//     there), then the CRD is created (createCRD). Of two Bundles (or two
//     controllers) creating it at once, one succeeds; the other's next
//     pass finds it labelled for another Bundle.
//   - it is labelled publish.LabelBundle=b: it is server-side applied,
//     on the condition that it has not changed since it was read
//     (applyCRD). The first time, b takes the whole spec over from
//     whoever made it (recordAsApplied). In a group of Kubernetes' own,
//     only a CRD a cluster admin approved is (see adminApproved): the
//     admin's opt-in, which the applies keep.
//   - otherwise (made by hand, another Bundle's, an orphan of a deleted
//     Bundle of another name): a KindConflict naming it. It is not
//     written, and b stops serving the kind.
//
// b carries BundleFinalizer (finalize) before its CRD is created or
// applied.
func (r *BundleReconciler) keepCRD(ctx context.Context, b *v1alpha1.Bundle, crd *apiextensionsv1.CustomResourceDefinition, what string, finalize bool) (publication, error) {
	group := crd.Spec.Group
	live := &apiextensionsv1.CustomResourceDefinition{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: crd.Name}, live)
	switch {
	case apierrors.IsNotFound(err):
		if reason, err := r.groups.ReservedGroup(ctx, group); err != nil || reason != "" {
			if err != nil {
				return publication{}, err
			}
			msg := fmt.Sprintf("%s is not published: its group %s is %s", what, group, reason)
			if served, err := r.groups.ServedGroup(ctx, group); err != nil {
				return publication{}, err
			} else if served == "" {
				msg += optIn(crd.Name, b.Name)
			}
			return r.conflict(ctx, b, msg), nil
		}
		if err := r.setFinalizer(ctx, b, finalize); err != nil {
			return publication{}, err
		}
		if p, err := r.claim(ctx, b, nil, what); err != nil || p.reason != "" {
			return p, err
		}
		return r.createCRD(ctx, b, crd, what)
	case err != nil:
		return publication{}, fmt.Errorf("read CustomResourceDefinition %s: %w", crd.Name, err)
	case live.Labels[publish.LabelBundle] != b.Name:
		owner := "not made by stencil"
		if o := live.Labels[publish.LabelBundle]; o != "" {
			owner = "published by Bundle " + o
		}
		return r.conflict(ctx, b, fmt.Sprintf("%s is not published: CustomResourceDefinition %s exists and is %s", what, crd.Name, owner)), nil
	}
	if publish.ReservedGroup(group) {
		why, err := r.adminApproved(ctx, live)
		if err != nil || why != "" {
			if err != nil {
				return publication{}, err
			}
			return r.conflict(ctx, b, fmt.Sprintf("%s is not published: its group %s is Kubernetes' own, and CustomResourceDefinition %s %s", what, group, crd.Name, why)), nil
		}
	}
	if err := r.setFinalizer(ctx, b, finalize); err != nil {
		return publication{}, err
	}
	if p, err := r.claim(ctx, b, live, what); err != nil || p.reason != "" {
		return p, err
	}
	if p := r.keepStored(ctx, b, live, crd, what); p.reason != "" {
		return p, nil // a version still stored is not dropped (storage.go)
	}
	if err := r.recordAsApplied(ctx, live, b.Name); err != nil {
		return publication{}, err
	}
	return r.applyCRD(ctx, crd, live, what)
}

// claim has the API server check the instances of b's kind as b's
// (authority.Kinds.Claim): the parameters of stencil's admission policy
// name b and its default ServiceAccount, and the kind has a binding of
// the policy. crd is the kind's CRD, labelled for b, nil when it does not
// exist yet: then the CRD may be created only once the binding applies in
// every API server (its creation and the admission margin), so that no
// instance is admitted unchecked; until then the publication waits.
// Another Bundle that publishes the kind and claimed it first is a
// KindConflict. A binding the controller may not write (the kind's
// ClusterRole does not grant it by name, authority.KindBindingRule) is
// Forbidden, looked at again after engine.ForbiddenRecheck.
func (r *BundleReconciler) claim(ctx context.Context, b *v1alpha1.Bundle, crd *apiextensionsv1.CustomResourceDefinition, what string) (publication, error) {
	api := publish.Defaulted(*b.Spec.API)
	gr := schema.GroupResource{Group: api.Group, Resource: api.Plural}
	gk := publish.GVK(api).GroupKind()
	created, err := r.admission.Claim(ctx, gr, b.Name, api.Defaults.ServiceAccountName, crd, func(other string) (bool, error) {
		o := &v1alpha1.Bundle{}
		if err := r.Client.Get(ctx, client.ObjectKey{Name: other}, o); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return o.DeletionTimestamp.IsZero() && o.Spec.API != nil && publish.GVK(*o.Spec.API).GroupKind() == gk, nil
	})
	var claimed *authority.ClaimedError
	var forbidden *authority.BindingForbiddenError
	switch {
	case errors.As(err, &claimed):
		return r.conflict(ctx, b, fmt.Sprintf("%s is not published: %v", what, err)), nil
	case errors.As(err, &forbidden):
		return publication{reason: v1alpha1.ReasonForbidden, message: fmt.Sprintf("%s is not published: %v", what, forbidden), wait: engine.ForbiddenRecheck}, nil
	case err != nil:
		return publication{}, fmt.Errorf("claim %s in stencil's admission policy: %w", what, err)
	}
	if wait := time.Until(created.Add(r.margin)); crd == nil && wait > 0 {
		return publication{reason: v1alpha1.ReasonEstablishing, wait: wait + time.Second,
			message: fmt.Sprintf("waiting %s for stencil's admission policy to check %s in every API server before its CustomResourceDefinition is made", r.margin, what)}, nil
	}
	return publication{}, nil
}

// GroupServer says what, besides CRDs, serves an API group (see
// cluster.APIs).
type GroupServer interface {
	// ReservedGroup says why stencil may not create the CRD of a kind
	// published in group (Kubernetes' own, or served by more than CRDs),
	// or "".
	ReservedGroup(ctx context.Context, group string) (string, error)
	// ServedGroup says what, besides CRDs, serves group, or "".
	ServedGroup(ctx context.Context, group string) (string, error)
}

// conflict stops the controllers b runs and returns a KindConflict
// publication saying msg.
func (r *BundleReconciler) conflict(ctx context.Context, b *v1alpha1.Bundle, msg string) publication {
	r.stop(ctx, b.Name, schema.GroupVersionKind{}, schema.GroupResource{})
	return publication{reason: v1alpha1.ReasonKindConflict, message: msg}
}

// stop stops the controllers of the kinds bundle publishes but keep, and
// has the admission policy refuse their instances (authority.Kinds.Release)
// but those of keepResource. A failure to release is logged: the pass
// that follows a change tries again.
func (r *BundleReconciler) stop(ctx context.Context, bundle string, keep schema.GroupVersionKind, keepResource schema.GroupResource) {
	r.kinds.stopBundle(bundle, keep)
	if err := r.admission.Release(ctx, bundle, keepResource); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "release the published kinds in stencil's admission policy", "bundle", bundle)
	}
}

// createCRD creates crd, which must not exist: if another made it in the
// meantime the create fails and the error brings another pass. The
// fields the creation set are then recorded as applied (recordAsApplied).
// Its conversion path, if any, gets a new token (withToken).
func (r *BundleReconciler) createCRD(ctx context.Context, b *v1alpha1.Bundle, crd *apiextensionsv1.CustomResourceDefinition, what string) (publication, error) {
	if err := withToken(crd, nil); err != nil {
		return publication{}, err
	}
	obj := crd.DeepCopy()
	err := r.Client.Create(ctx, obj, client.FieldOwner(applyset.FieldManager))
	switch {
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		return publication{reason: v1alpha1.ReasonInvalidAPI, message: fmt.Sprintf("%s is not published: CustomResourceDefinition %s: %v", what, crd.Name, applyset.Scrub(err))}, nil
	case err != nil:
		return publication{}, fmt.Errorf("create CustomResourceDefinition %s: %w", crd.Name, err)
	}
	return publication{}, r.recordAsApplied(ctx, obj, b.Name)
}

// recordAsApplied makes stencil's Apply entry of live's managedFields
// own the fields it is to own from now on, so that later applies own
// them and drop what the Bundle no longer asks for:
//
//   - the fields stencil's field manager set when it created live (an
//     Update entry), merged into its Apply entry if the CRD was applied
//     since;
//   - the first time the Bundle takes a CRD over (no Apply entry of
//     stencil's yet: a CRD a cluster admin made and labelled for it),
//     every other manager's fields under spec too: the kind's spec is
//     the Bundle's alone, whatever the admin created it with, while the
//     admin keeps what it set in metadata (the label, an
//     api-approved.kubernetes.io annotation).
//
// It writes live's managedFields alone, on the condition that live has
// not changed since it was read; on a conflict (the API server writes a
// new CRD's status at once) it reads live again and tries again while
// live is still labelled for bundle. It leaves live as the API server
// then holds it.
func (r *BundleReconciler) recordAsApplied(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition, bundle string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		err := r.recordOnce(ctx, live)
		if !apierrors.IsConflict(err) {
			return err
		}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(live), live); err != nil {
			return fmt.Errorf("read CustomResourceDefinition %s: %w", live.Name, err)
		}
		if live.Labels[publish.LabelBundle] != bundle {
			return nil // not the Bundle's any more: its pass reports the conflict
		}
		return err
	})
}

// recordOnce is one attempt of recordAsApplied.
func (r *BundleReconciler) recordOnce(ctx context.Context, live *apiextensionsv1.CustomResourceDefinition) error {
	fields, changed, err := takeFields(live.ManagedFields)
	if err != nil {
		return fmt.Errorf("record the fields of CustomResourceDefinition %s as applied: %w", live.Name, err)
	}
	if !changed {
		return nil
	}
	live.ManagedFields = fields
	if err := r.Client.Update(ctx, live, client.FieldOwner(applyset.FieldManager)); err != nil {
		return fmt.Errorf("record the fields of CustomResourceDefinition %s as applied: %w", live.Name, err)
	}
	return nil
}

// takeFields returns managedFields with the fields recordAsApplied moves
// into stencil's Apply entry moved there, and whether anything moved.
func takeFields(managed []metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, bool, error) {
	created, applied := -1, -1
	for i, f := range managed {
		if f.Manager != applyset.FieldManager || f.Subresource != "" {
			continue
		}
		switch f.Operation {
		case metav1.ManagedFieldsOperationUpdate:
			created = i
		case metav1.ManagedFieldsOperationApply:
			applied = i
		}
	}
	taken := []*metav1.FieldsV1{}
	out := make([]metav1.ManagedFieldsEntry, 0, len(managed)+1)
	for i, f := range managed {
		switch {
		case i == created:
			taken = append(taken, f.FieldsV1)
			continue
		case applied >= 0 || f.Manager == applyset.FieldManager || f.Subresource != "":
		default:
			spec, rest, err := splitSpec(f.FieldsV1)
			if err != nil {
				return nil, false, err
			}
			if spec != nil {
				taken = append(taken, spec)
				if rest == nil {
					continue
				}
				f.FieldsV1 = rest
			}
		}
		out = append(out, f)
	}
	if len(taken) == 0 {
		return managed, false, nil
	}
	if applied < 0 {
		now := metav1.Now()
		out = append(out, metav1.ManagedFieldsEntry{Manager: applyset.FieldManager, Operation: metav1.ManagedFieldsOperationApply,
			APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Time: &now, FieldsType: "FieldsV1"})
		applied = len(out) - 1
	} else if created >= 0 && created < applied {
		applied-- // the Update entry before it was dropped
	}
	fields, err := unionFields(append(taken, out[applied].FieldsV1)...)
	if err != nil {
		return nil, false, err
	}
	out[applied].FieldsV1 = fields
	return out, true, nil
}

// splitSpec splits a managedFields field set into its fields under spec
// and the rest, either nil when empty.
func splitSpec(f *metav1.FieldsV1) (spec, rest *metav1.FieldsV1, err error) {
	if f == nil {
		return nil, nil, nil
	}
	all := &fieldpath.Set{}
	if err := all.FromJSON(f.GetRawReader()); err != nil {
		return nil, nil, err
	}
	under, other := &fieldpath.Set{}, &fieldpath.Set{}
	all.Iterate(func(p fieldpath.Path) {
		if len(p) > 0 && p[0].FieldName != nil && *p[0].FieldName == "spec" {
			under.Insert(p)
		} else {
			other.Insert(p)
		}
	})
	if spec, err = fieldsOf(under); err != nil {
		return nil, nil, err
	}
	rest, err = fieldsOf(other)
	return spec, rest, err
}

// fieldsOf is s as managedFields hold it, nil when s is empty.
func fieldsOf(s *fieldpath.Set) (*metav1.FieldsV1, error) {
	if s.Empty() {
		return nil, nil
	}
	raw, err := s.ToJSON()
	if err != nil {
		return nil, err
	}
	return metav1.NewFieldsV1(string(raw)), nil
}

// unionFields is the union of managedFields field sets (nil ones count
// as empty).
func unionFields(fs ...*metav1.FieldsV1) (*metav1.FieldsV1, error) {
	all := &fieldpath.Set{}
	for _, f := range fs {
		if f == nil {
			continue
		}
		s := &fieldpath.Set{}
		if err := s.FromJSON(f.GetRawReader()); err != nil {
			return nil, err
		}
		all = all.Union(s)
	}
	raw, err := all.ToJSON()
	if err != nil {
		return nil, err
	}
	return metav1.NewFieldsV1(string(raw)), nil
}
