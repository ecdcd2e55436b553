package published

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
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
)

// keepCRD makes the CRD of b's kind, or brings the one b made up to
// date, and never touches one b did not make:
//
//   - none exists: the kind's group must be one that only CRDs serve
//     (not Kubernetes' own, built in or aggregated: see GroupServer),
//     then the CRD is created (createCRD). Of two Bundles (or two
//     controllers) creating it at once, one succeeds; the other's next
//     pass finds it labelled for another Bundle.
//   - it is labelled publish.LabelBundle=b: it is server-side applied,
//     on the condition that it has not changed since it was read
//     (applyCRD).
//   - otherwise (made by hand, another Bundle's, an orphan of a deleted
//     Bundle of another name): a KindConflict naming it. It is not
//     written, and b stops serving the kind.
//
// b carries BundleFinalizer (finalize) before its CRD is created or
// applied.
func (r *BundleReconciler) keepCRD(ctx context.Context, b *v1alpha1.Bundle, crd *apiextensionsv1.CustomResourceDefinition, what string, finalize bool) (publication, error) {
	live := &apiextensionsv1.CustomResourceDefinition{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: crd.Name}, live)
	switch {
	case apierrors.IsNotFound(err):
		if reason, err := r.groups.ReservedGroup(ctx, crd.Spec.Group); err != nil || reason != "" {
			if err != nil {
				return publication{}, err
			}
			return r.conflict(ctx, b, fmt.Sprintf("%s is not published: its group %s is %s", what, crd.Spec.Group, reason)), nil
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
	if err := r.setFinalizer(ctx, b, finalize); err != nil {
		return publication{}, err
	}
	if p, err := r.claim(ctx, b, live, what); err != nil || p.reason != "" {
		return p, err
	}
	if err := r.recordAsApplied(ctx, live, b.Name); err != nil {
		return publication{}, err
	}
	return r.applyCRD(ctx, crd, live.ResourceVersion, what)
}

// claim has the API server check the instances of b's kind as b's
// (authority.Kinds.Claim): the parameters of stencil's admission policy
// name b and its default ServiceAccount, and the kind has a binding of
// the policy. crd is the kind's CRD, labelled for b, nil when it does not
// exist yet: then the CRD may be created only once the binding applies in
// every API server (its creation and the admission margin), so that no
// instance is admitted unchecked; until then the publication waits.
// Another Bundle that publishes the kind and claimed it first is a
// KindConflict.
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
	switch {
	case errors.As(err, &claimed):
		return r.conflict(ctx, b, fmt.Sprintf("%s is not published: %v", what, err)), nil
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
// cluster.APIs.ReservedGroup).
type GroupServer interface {
	// ReservedGroup says why no CRD may define a kind of group, or "".
	ReservedGroup(ctx context.Context, group string) (string, error)
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
func (r *BundleReconciler) createCRD(ctx context.Context, b *v1alpha1.Bundle, crd *apiextensionsv1.CustomResourceDefinition, what string) (publication, error) {
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

// recordAsApplied makes the fields stencil's field manager set when it
// created live (an Update entry of its managedFields) owned by its Apply
// entry, merged into it if the CRD was applied since, so that later
// applies own them and drop what the Bundle no longer asks for. It writes
// live's managedFields alone, on the condition that live has not changed
// since it was read; on a conflict (the API server writes a new CRD's
// status at once) it reads live again and tries again while live is
// still labelled for bundle. It leaves live as the API server then holds
// it.
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
	created, applied := -1, -1
	for i, f := range live.ManagedFields {
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
	if created < 0 {
		return nil
	}
	if applied < 0 {
		live.ManagedFields[created].Operation = metav1.ManagedFieldsOperationApply
	} else {
		fields, err := unionFields(live.ManagedFields[applied].FieldsV1, live.ManagedFields[created].FieldsV1)
		if err != nil {
			return fmt.Errorf("record the fields of CustomResourceDefinition %s as applied: %w", live.Name, err)
		}
		live.ManagedFields[applied].FieldsV1 = fields
		live.ManagedFields = slices.Delete(live.ManagedFields, created, created+1)
	}
	if err := r.Client.Update(ctx, live, client.FieldOwner(applyset.FieldManager)); err != nil {
		return fmt.Errorf("record the fields of CustomResourceDefinition %s as applied: %w", live.Name, err)
	}
	return nil
}

// unionFields is the union of two managedFields field sets.
func unionFields(a, b *metav1.FieldsV1) (*metav1.FieldsV1, error) {
	sets := [2]*fieldpath.Set{{}, {}}
	for i, f := range []*metav1.FieldsV1{a, b} {
		if f == nil {
			continue
		}
		if err := sets[i].FromJSON(bytes.NewReader(f.Raw)); err != nil {
			return nil, err
		}
	}
	raw, err := sets[0].Union(sets[1]).ToJSON()
	if err != nil {
		return nil, err
	}
	return &metav1.FieldsV1{Raw: raw}, nil
}
