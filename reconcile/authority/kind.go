package authority

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kinds keeps the check of the published kinds: for each, a binding of
// the policy and its keys in the parameters (see params.go). The Bundle
// controller calls it: Claim before the kind's CRD is created and on every
// pass after, Release when the Bundle stops publishing it, Forget once its
// CRD is gone.
type Kinds struct {
	// Client writes (the controller's client); Reader reads live.
	Client client.Client
	Reader client.Reader
	// Namespace is the controller's own, where the parameters are.
	Namespace string
}

// ClaimedError is Claim's error when another Bundle that still publishes
// the kind holds it in the parameters.
type ClaimedError struct{ Kind, Bundle string }

func (e *ClaimedError) Error() string {
	return fmt.Sprintf("%s is claimed by Bundle %s in the parameters of stencil's admission policy", e.Kind, e.Bundle)
}

// Claim makes the API server check the instances of gr as bundle's (whose
// spec.api.defaults.serviceAccountName is account, "" none): the
// parameters name bundle and account, and gr has a binding, made now if
// missing and owned by crd when it exists (so that it goes with it). It
// returns the binding's creation time: the kind's CRD may be created
// only once every API server applies the binding (that time and a
// margin), so that no instance is ever admitted unchecked. Another
// Bundle holding the kind in the parameters is a *ClaimedError, unless
// stillClaims says it no longer publishes the kind or crd is labelled
// for bundle.
func (k *Kinds) Claim(ctx context.Context, gr schema.GroupResource, bundle, account string, crd *apiextensionsv1.CustomResourceDefinition,
	stillClaims func(other string) (bool, error)) (time.Time, error) {
	if !KindKeyFits(gr) {
		return time.Time{}, fmt.Errorf("the name of the CustomResourceDefinition %s is longer than stencil's admission policy allows (%d characters)", gr, maxKindKey)
	}
	bundleKey, saKey := KindKeys(gr)
	var claimErr error
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		claimErr = nil
		return setParams(ctx, k.Client, k.Reader, k.Namespace, func(p Params, patch map[string]*string, now time.Time) {
			if other := p[bundleKey]; other != "" && other != bundle && crd == nil {
				if claims, err := stillClaims(other); err != nil || claims {
					claimErr = err
					if err == nil {
						claimErr = &ClaimedError{Kind: gr.String(), Bundle: other}
					}
					return
				}
			}
			if p[bundleKey] != bundle {
				patch[bundleKey] = ptr.To(bundle)
			}
			p.set(patch, saKey, account, now)
		})
	})
	if err != nil {
		return time.Time{}, err
	}
	if claimErr != nil {
		return time.Time{}, claimErr
	}
	return k.keepBinding(ctx, gr, crd)
}

// keepBinding makes gr's binding when it is missing, applies it again
// when it differs, has crd own it, and returns its creation time.
func (k *Kinds) keepBinding(ctx context.Context, gr schema.GroupResource, crd *apiextensionsv1.CustomResourceDefinition) (time.Time, error) {
	want := KindBinding(k.Namespace, gr)
	live := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	err := k.Reader.Get(ctx, client.ObjectKey{Name: want.Name}, live)
	switch {
	case apierrors.IsNotFound(err):
		if err := k.Client.Create(ctx, want.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			return time.Time{}, fmt.Errorf("create ValidatingAdmissionPolicyBinding %s: %w", want.Name, err)
		}
		if err := k.Reader.Get(ctx, client.ObjectKey{Name: want.Name}, live); err != nil {
			return time.Time{}, fmt.Errorf("read ValidatingAdmissionPolicyBinding %s: %w", want.Name, err)
		}
	case err != nil:
		return time.Time{}, fmt.Errorf("read ValidatingAdmissionPolicyBinding %s: %w", want.Name, err)
	}
	owned := crd == nil || ownedBy(live, crd)
	if same := live.Spec.PolicyName == want.Spec.PolicyName && sameMatch(live.Spec.MatchResources, want.Spec.MatchResources) &&
		live.Annotations[AnnotationKind] == gr.String() && live.Labels[LabelManagedBy] == "stencil" &&
		fmt.Sprint(live.Spec.ParamRef) == fmt.Sprint(want.Spec.ParamRef) && fmt.Sprint(live.Spec.ValidationActions) == fmt.Sprint(want.Spec.ValidationActions); !same || !owned {
		if crd != nil {
			want.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition",
				Name: crd.Name, UID: crd.UID}}
		}
		if err := apply(ctx, k.Client, want); err != nil {
			return time.Time{}, forbiddenBinding(err, gr)
		}
	}
	return live.CreationTimestamp.Time, nil
}

// BindingForbiddenError is the error of a write of a published kind's
// binding the controller may not make: the controller writes a binding
// only by the name the kind's ClusterRole grants (publish.ClusterRoles,
// `stencil bundle rbac`), and that role is missing or older.
type BindingForbiddenError struct {
	Kind schema.GroupResource
	Err  error
}

func (e *BindingForbiddenError) Error() string {
	return fmt.Sprintf("the controller may not write ValidatingAdmissionPolicyBinding %s, which checks %s: grant it by name with the kind's ClusterRole "+
		"labelled rbac.stencil.dev/aggregate-to-manager: \"true\" (`stencil bundle rbac` prints it)", KindBindingName(e.Kind), e.Kind)
}

func (e *BindingForbiddenError) Unwrap() error { return e.Err }

// forbiddenBinding is err, a *BindingForbiddenError when the API server
// refused it.
func forbiddenBinding(err error, gr schema.GroupResource) error {
	if apierrors.IsForbidden(err) {
		return &BindingForbiddenError{Kind: gr, Err: err}
	}
	return err
}

// ownedBy reports whether crd owns b.
func ownedBy(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, o := range b.OwnerReferences {
		if o.UID == crd.UID {
			return true
		}
	}
	return false
}

// Release stops bundle holding any published kind in the parameters but
// keep (the zero GroupResource: none): the API server refuses their
// instances from then on ("no Bundle publishes"), until a Bundle claims
// them again. Their bindings stay while their CRDs do (their instances
// are checked whoever publishes them), and so do their default
// ServiceAccounts, so a Bundle deleted and applied again (a GitOps tool
// syncing it) with the same default admits its instances as before.
func (k *Kinds) Release(ctx context.Context, bundle string, keep schema.GroupResource) error {
	keepKey, _ := KindKeys(keep)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return setParams(ctx, k.Client, k.Reader, k.Namespace, func(p Params, patch map[string]*string, _ time.Time) {
			for key, v := range p {
				if v == bundle && strings.HasPrefix(key, "kind.") && strings.HasSuffix(key, ".bundle") && (keep.Empty() || key != keepKey) {
					patch[key] = nil
				}
			}
		})
	})
}

// Forget removes what checked gr once its CRD is gone (and with it every
// instance): its keys and its binding, unless another Bundle than bundle
// holds it already.
func (k *Kinds) Forget(ctx context.Context, gr schema.GroupResource, bundle string) error {
	bundleKey, saKey := KindKeys(gr)
	other := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		return setParams(ctx, k.Client, k.Reader, k.Namespace, func(p Params, patch map[string]*string, _ time.Time) {
			if holder := p[bundleKey]; holder != "" && holder != bundle {
				other = true
				return
			}
			for _, key := range []string{bundleKey, saKey, epochKey(saKey)} {
				if _, ok := p[key]; ok {
					patch[key] = nil
				}
			}
		})
	})
	if err != nil || other {
		return err
	}
	// Deleted now, not left to the garbage collector (the CRD owns it):
	// a Bundle publishing the kind again must find no binding, and wait
	// for a new one to apply, before it makes the CRD.
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: KindBindingName(gr)}}
	if err := k.Client.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete ValidatingAdmissionPolicyBinding %s: %w", b.Name, forbiddenBinding(err, gr))
	}
	return nil
}
