package admission

import (
	"context"
	"fmt"
	"slices"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
)

// mutatingConfigReconciler keeps the PublishedWebhookName entry of the
// MutatingWebhookConfiguration name: one rule for every kind a Bundle
// publishes and the controller serves, sent where the configuration's
// CompositionsWebhookName entry sends its requests (its clientConfig,
// selectors, timeout and match policy), failing open. With no kind
// served, or no Compositions entry, the entry is removed; with no
// configuration, nothing is written (the instances then get their
// ApplySet metadata from the controller, as without the webhook).
type mutatingConfigReconciler struct {
	client client.Client
	reader client.Reader
	kinds  Kinds
	name   string
}

// mutatingConfigSource is a metadata watch of the configuration name,
// whose events enqueue request.
func mutatingConfigSource(md metadata.Interface, name string, request ctrlreconcile.Request) source.Source {
	return cluster.MetadataSource(md, admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"),
		"MutatingWebhookConfiguration "+name,
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		},
		func(q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request], _ metav1.Object) {
			q.Add(request)
		})
}

// Reconcile brings the published entry to the kinds served. The
// validating configuration's controller (webhookConfigReconciler) calls
// it on each of its passes: one controller takes the notices of the kinds
// served, which a channel gives to one reader only.
func (m *mutatingConfigReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	if err := m.reader.Get(ctx, client.ObjectKey{Name: m.name}, cfg); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("read MutatingWebhookConfiguration %s: %w", m.name, err)
	}
	var base, current *admissionregistrationv1.MutatingWebhook
	for i := range cfg.Webhooks {
		switch cfg.Webhooks[i].Name {
		case CompositionsWebhookName:
			base = &cfg.Webhooks[i]
		case PublishedWebhookName:
			current = &cfg.Webhooks[i]
		}
	}
	served := m.kinds.Served()
	if base == nil || len(served) == 0 {
		if current == nil {
			return ctrl.Result{}, nil
		}
		// An update at the version read: an apply of no entry would leave
		// the fields another manager owns (the CA injected).
		cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(h admissionregistrationv1.MutatingWebhook) bool { return h.Name == PublishedWebhookName })
		if err := m.client.Update(ctx, cfg, client.FieldOwner(applyset.FieldManager)); err != nil {
			return ctrl.Result{}, fmt.Errorf("remove %s from MutatingWebhookConfiguration %s: %w", PublishedWebhookName, m.name, err)
		}
		return ctrl.Result{}, nil
	}
	want := admissionregistrationv1.MutatingWebhook{
		Name:                    PublishedWebhookName,
		ClientConfig:            *base.ClientConfig.DeepCopy(),
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		ReinvocationPolicy:      ptr.To(admissionregistrationv1.NeverReinvocationPolicy),
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          base.TimeoutSeconds,
		NamespaceSelector:       base.NamespaceSelector.DeepCopy(),
		ObjectSelector:          base.ObjectSelector.DeepCopy(),
	}
	if base.MatchPolicy != nil {
		want.MatchPolicy = ptr.To(*base.MatchPolicy)
	}
	// The same rules as the validating published entry's.
	want.Rules = publishedWebhook(&admissionregistrationv1.ValidatingWebhook{}, served, PublishedWebhookName, admissionregistrationv1.Ignore).Rules
	if current != nil && equality.Semantic.DeepEqual(*current, want) {
		return ctrl.Result{}, nil
	}
	e, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&want)
	if err != nil {
		return ctrl.Result{}, err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"webhooks": []any{e}}}
	u.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind("MutatingWebhookConfiguration"))
	u.SetName(m.name)
	if err := m.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(applyset.FieldManager), client.ForceOwnership); err != nil {
		return ctrl.Result{}, fmt.Errorf("apply MutatingWebhookConfiguration %s: %w", m.name, applyset.Scrub(err))
	}
	return ctrl.Result{}, nil
}
