package admission

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/published"
)

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// The fail-closed webhook: who may make a parent act as a ServiceAccount,
// and in which namespaces a Bundle may be used.
const (
	// AccessWebhookPath is the path of the access check (accessReviewer):
	// no render, only a SubjectAccessReview and the Bundle's namespace
	// selector, so its entries can fail closed.
	AccessWebhookPath = "/validate-stencil-access"
	// AccessWebhookName is the static entry of the access check for
	// Compositions (config/webhook), failurePolicy Fail; the controller
	// copies its clientConfig into PublishedAccessWebhookName.
	AccessWebhookName = "access.compositions.stencil.dev"
	// PublishedAccessWebhookName is the entry of the access check the
	// controller keeps for the published kinds, failurePolicy Fail.
	PublishedAccessWebhookName = "access.published.stencil.dev"
)

// accessReviewer refuses a parent whose requester could not use, itself,
// the ServiceAccount the parent's writes impersonate, and a parent in a
// namespace its Bundle's spec.namespaceSelector does not select. It is
// served alone at AccessWebhookPath (entries failing closed), and the
// render review runs it first (reviewer.Handle), so that a configuration
// pointing every entry at WebhookPath (the loopback of `make run`) checks
// it too.
type accessReviewer struct {
	r *reconcile.CompositionReconciler
}

var _ admission.Handler = (*accessReviewer)(nil)

// Handle allows or refuses one request. Anything it cannot decide (a
// review that fails, an object it cannot decode) refuses: this check
// fails closed.
func (a *accessReviewer) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update {
		return admission.Allowed("")
	}
	if r := a.check(ctx, req); r != nil {
		return r.response()
	}
	return admission.Allowed("")
}

// refusal is why the access check refuses a request.
type refusal struct {
	msg string
	// invalid: the object itself is invalid (422), not the requester
	// without the right (403).
	invalid bool
}

// refuse is a refusal for want of a right, or for a check that could not be made.
func refuse(format string, args ...any) *refusal {
	return &refusal{msg: fmt.Sprintf(format, args...)}
}

// response refuses with reason Forbidden (403), or Invalid (422).
func (r *refusal) response() admission.Response {
	res := admission.Denied(r.msg)
	res.Result.Code, res.Result.Reason = http.StatusForbidden, metav1.StatusReasonForbidden
	if r.invalid {
		res.Result.Code, res.Result.Reason = http.StatusUnprocessableEntity, metav1.StatusReasonInvalid
	}
	return res
}

// check returns why req is refused, nil when it is allowed. A CREATE is
// checked, and an UPDATE that changes the spec, the labels or the
// annotations (what the render reads and what names the ServiceAccount):
// a requester who may not use the ServiceAccount must not change what a
// parent running as it renders. An update of status, finalizers or the
// ApplySet's own metadata (the controller's writes) is not checked, nor
// is a parent being deleted.
func (a *accessReviewer) check(ctx context.Context, req admission.Request) *refusal {
	obj, err := decodeObject(req.Object.Raw)
	if err != nil {
		return refuse("stencil: could not decode the object: %v", err)
	}
	if obj.GetDeletionTimestamp() != nil {
		return nil
	}
	if req.Operation == admissionv1.Update {
		old, err := decodeObject(req.OldObject.Raw)
		if err != nil {
			return refuse("stencil: could not decode the old object: %v", err)
		}
		if sameAccessRequest(old, obj) {
			return nil
		}
	}
	parent, bundle, r := a.parent(ctx, obj)
	if parent == nil {
		return r
	}
	if bundle != nil {
		if r := a.namespaceAllowed(ctx, bundle, parent.GetNamespace()); r != nil {
			return r
		}
	}
	sa, ok := a.r.Options.EffectiveServiceAccount(parent)
	if !ok {
		return nil // written as the controller (the admin's choice), or Stalled by it
	}
	return mayUse(ctx, a.r.Client, req.UserInfo, parent.GetNamespace(), sa)
}

// sameAccessRequest reports whether an update leaves the spec, the labels
// and the annotations as they were, ignoring the ApplySet metadata the
// controller writes on the parent (applyset.kubernetes.io/*).
func sameAccessRequest(old, obj *unstructured.Unstructured) bool {
	own := func(m map[string]string) map[string]string {
		out := maps.Clone(m)
		maps.DeleteFunc(out, func(k, _ string) bool { return strings.HasPrefix(k, "applyset.kubernetes.io/") })
		if out == nil {
			out = map[string]string{}
		}
		return out
	}
	return equality.Semantic.DeepEqual(old.Object["spec"], obj.Object["spec"]) &&
		maps.Equal(own(old.GetLabels()), own(obj.GetLabels())) &&
		maps.Equal(own(old.GetAnnotations()), own(obj.GetAnnotations()))
}

// parent makes obj a parent with its Bundle (nil when not found: the
// controller reports it, and a Bundle made later is checked by the
// controller's pass). With no parent, the refusal, or nil when no Bundle
// publishes obj's kind (no controller acts on it).
func (a *accessReviewer) parent(ctx context.Context, obj *unstructured.Unstructured) (applyset.Parent, *v1alpha1.Bundle, *refusal) {
	gvk := obj.GroupVersionKind()
	if gvk.GroupKind() == applyset.CompositionGroupKind {
		spec := v1alpha1.CompositionSpec{}
		spec.Bundle, _, _ = unstructured.NestedString(obj.Object, "spec", "bundle")
		spec.ServiceAccountName, _, _ = unstructured.NestedString(obj.Object, "spec", "serviceAccountName")
		b := &v1alpha1.Bundle{}
		if err := a.r.Client.Get(ctx, client.ObjectKey{Name: spec.Bundle}, b); err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, nil, refuse("stencil: could not read Bundle %s: %v", spec.Bundle, err)
			}
			b = nil
		}
		return applyset.NewInstance(obj, spec), b, nil
	}
	b, _, err := published.PublishingBundle(ctx, a.r.Client, a.r.APIReader, gvk)
	switch {
	case err != nil:
		return nil, nil, refuse("stencil: could not find the Bundle that publishes %s: %v", gvk.Kind, err)
	case b == nil:
		return nil, nil, nil
	}
	spec, err := publish.InstanceSpec(b.Name, b.Spec.API, obj)
	if err != nil {
		// Its stencil.dev/* annotations are invalid: the ServiceAccount
		// cannot be told, and the controller would stall it.
		return nil, nil, &refusal{msg: err.Error(), invalid: true}
	}
	return applyset.NewInstance(obj, spec), b, nil
}

// namespaceAllowed returns why Bundle b may not be used in namespace ns
// (its spec.namespaceSelector does not select it), nil when it may.
func (a *accessReviewer) namespaceAllowed(ctx context.Context, b *v1alpha1.Bundle, ns string) *refusal {
	ok, err := reconcile.NamespaceSelected(ctx, a.r.Client, b, ns)
	switch {
	case err != nil:
		return refuse("stencil: could not check Bundle %s's spec.namespaceSelector: %v", b.Name, err)
	case !ok:
		return refuse("Bundle %s may not be used in namespace %s: its spec.namespaceSelector does not select the namespace", b.Name, ns)
	}
	return nil
}

// mayUse returns why user may not use ServiceAccount sa of namespace ns,
// nil when it may: as Kubernetes treats the use of a ServiceAccount, the
// user may impersonate it, or may create pods in its namespace (a pod may
// run as any ServiceAccount of its namespace). The SubjectAccessReviews
// are made by the controller, with c.
func mayUse(ctx context.Context, c client.Client, user authenticationv1.UserInfo, ns, sa string) *refusal {
	asks := []authorizationv1.ResourceAttributes{
		{Verb: "impersonate", Resource: "serviceaccounts", Name: sa, Namespace: ns},
		{Verb: "create", Resource: "pods", Namespace: ns},
	}
	for _, attrs := range asks {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user.Username, Groups: user.Groups, UID: user.UID, Extra: extra(user.Extra),
			ResourceAttributes: &attrs,
		}}
		if err := c.Create(ctx, review); err != nil {
			return refuse("stencil: could not check that %q may use ServiceAccount %s/%s: %v", user.Username, ns, sa, err)
		}
		if review.Status.Allowed {
			return nil
		}
	}
	return refuse("user %q may not use ServiceAccount %s/%s: needs impersonate on serviceaccounts %q or create on pods in %s",
		user.Username, ns, sa, sa, ns)
}

// extra converts a request's user extras for a SubjectAccessReview.
func extra(in map[string]authenticationv1.ExtraValue) map[string]authorizationv1.ExtraValue {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]authorizationv1.ExtraValue, len(in))
	for k, v := range in {
		out[k] = authorizationv1.ExtraValue(v)
	}
	return out
}
