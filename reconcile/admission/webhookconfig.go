package admission

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/stencil-dev/stencil/reconcile/applyset"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/cluster"
)

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch;patch;update

// webhookConfigReconciler keeps the PublishedWebhookName entry of the
// ValidatingWebhookConfiguration name: one rule for every kind a Bundle
// publishes and the controller serves, sent where the
// CompositionsWebhookName entry sends its requests (its clientConfig,
// whether a Service or a URL, and its selectors, timeout and match
// policy), failurePolicy Ignore. With no kind served, the entry is
// removed. The configuration is installed with the controller (config/);
// when it or its Compositions entry is missing, nothing is written and
// that is logged once.
type webhookConfigReconciler struct {
	client client.Client
	reader client.Reader
	kinds  Kinds
	name   string
	// missing is set once the configuration's absence was logged.
	missing atomic.Bool
}

// setupWebhookConfig registers the controller of the published entry. It
// runs when the configuration changes and when the kinds served change.
func setupWebhookConfig(mgr ctrl.Manager, kinds Kinds, name string) error {
	md, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	w := &webhookConfigReconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), kinds: kinds, name: name}
	toConfig := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrlreconcile.Request {
		return []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Name: w.name}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("webhookconfig").
		WatchesRawSource(webhookConfigSource(md, w.name)).
		WatchesRawSource(source.Channel(kinds.Changes(), toConfig)).
		Complete(w)
}

// webhookConfigSource is a metadata watch of the configuration name.
func webhookConfigSource(md metadata.Interface, name string) source.Source {
	return cluster.MetadataSource(md, admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"),
		"ValidatingWebhookConfiguration "+name,
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		},
		func(q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request], _ metav1.Object) {
			q.Add(ctrlreconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		})
}

// Reconcile brings the published entry to the kinds served.
func (w *webhookConfigReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := w.reader.Get(ctx, client.ObjectKey{Name: w.name}, cfg); err != nil {
		if apierrors.IsNotFound(err) {
			if !w.missing.Swap(true) {
				ctrl.LoggerFrom(ctx).Info("no ValidatingWebhookConfiguration; the published kinds are not validated at admission", "name", w.name)
			}
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("read ValidatingWebhookConfiguration %s: %w", w.name, err)
	}
	var base, current *admissionregistrationv1.ValidatingWebhook
	for i := range cfg.Webhooks {
		switch cfg.Webhooks[i].Name {
		case CompositionsWebhookName:
			base = &cfg.Webhooks[i]
		case PublishedWebhookName:
			current = &cfg.Webhooks[i]
		}
	}
	if base == nil && !w.missing.Swap(true) {
		ctrl.LoggerFrom(ctx).Info("the ValidatingWebhookConfiguration has no entry "+CompositionsWebhookName+"; the published kinds are not validated at admission", "name", w.name)
	}
	if base != nil {
		w.missing.Store(false)
	}
	served := w.kinds.Served()
	if base == nil || len(served) == 0 {
		if current == nil {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, w.remove(ctx, cfg)
	}
	want := publishedWebhook(base, served)
	if current != nil && equality.Semantic.DeepEqual(*current, want) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, w.apply(ctx, want)
}

// publishedWebhook is the entry for the kinds served, sent as base is.
func publishedWebhook(base *admissionregistrationv1.ValidatingWebhook, served []reconcile.Kind) admissionregistrationv1.ValidatingWebhook {
	want := admissionregistrationv1.ValidatingWebhook{
		Name:                    PublishedWebhookName,
		ClientConfig:            *base.ClientConfig.DeepCopy(),
		FailurePolicy:           ptr.To(admissionregistrationv1.Ignore),
		MatchPolicy:             ptr.To(admissionregistrationv1.Equivalent),
		SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
		TimeoutSeconds:          base.TimeoutSeconds,
		NamespaceSelector:       base.NamespaceSelector.DeepCopy(),
		ObjectSelector:          base.ObjectSelector.DeepCopy(),
	}
	if base.MatchPolicy != nil {
		want.MatchPolicy = ptr.To(*base.MatchPolicy)
	}
	for _, k := range served {
		want.Rules = append(want.Rules, admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule: admissionregistrationv1.Rule{
				APIGroups:   []string{k.GVK.Group},
				APIVersions: []string{k.GVK.Version},
				Resources:   []string{k.Resource},
				Scope:       ptr.To(admissionregistrationv1.NamespacedScope),
			},
		})
	}
	return want
}

// apply server-side applies the entry, under stencil's field manager.
func (w *webhookConfigReconciler) apply(ctx context.Context, want admissionregistrationv1.ValidatingWebhook) error {
	entry, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&want)
	if err != nil {
		return fmt.Errorf("apply ValidatingWebhookConfiguration %s: %w", w.name, err)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"webhooks": []any{entry}}}
	u.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"))
	u.SetName(w.name)
	if err := w.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(applyset.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply ValidatingWebhookConfiguration %s: %w", w.name, applyset.Scrub(err))
	}
	return nil
}

// remove drops the entry. It is an update at the version read, not an
// apply of no entry: a field of the entry another manager owns (a CA
// injected) would keep a part of it.
func (w *webhookConfigReconciler) remove(ctx context.Context, cfg *admissionregistrationv1.ValidatingWebhookConfiguration) error {
	cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(h admissionregistrationv1.ValidatingWebhook) bool { return h.Name == PublishedWebhookName })
	if err := w.client.Update(ctx, cfg, client.FieldOwner(applyset.FieldManager)); err != nil {
		return fmt.Errorf("remove %s from ValidatingWebhookConfiguration %s: %w", PublishedWebhookName, w.name, err)
	}
	return nil
}
