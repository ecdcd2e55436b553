package admission

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"

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

	"github.com/stencil-dev/stencil/reconcile/cluster"
)

// The controller writes only its own configuration, by name (RBAC
// resourceNames): a --webhook-config other than DefaultWebhookConfigName
// needs a grant of update and patch on that name (docs/operating.md).
//
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=get;list;watch
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,resourceNames=stencil-validating,verbs=patch;update

// webhookConfigReconciler keeps the published kinds' entries of the
// ValidatingWebhookConfiguration name (publishedEntries): one rule for
// every kind a Bundle publishes and the controller serves, each entry
// sent where its base entry of config/webhook sends its requests (its
// clientConfig, whether a Service or a URL, and its selectors, timeout and
// match policy): PublishedWebhookName as CompositionsWebhookName,
// failurePolicy Ignore. With no kind served, or no base entry, an entry
// is removed, and so are the entries of the access check an earlier
// stencil served (legacyEntries). The configuration is installed with the controller (config/);
// when it or its Compositions entry is missing, nothing is written and
// that is logged once.
type webhookConfigReconciler struct {
	client client.Client
	reader client.Reader
	kinds  Kinds
	name   string
	// missing is set once the configuration's absence was logged.
	missing atomic.Bool
	// mutating keeps the mutating configuration's published entry, on
	// each pass of this one.
	mutating *mutatingConfigReconciler
}

// setupWebhookConfig registers the controller of the published entry. It
// runs when the configuration changes and when the kinds served change.
func setupWebhookConfig(mgr ctrl.Manager, kinds Kinds, name, mutating string) error {
	md, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	w := &webhookConfigReconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), kinds: kinds, name: name,
		mutating: &mutatingConfigReconciler{client: mgr.GetClient(), reader: mgr.GetAPIReader(), kinds: kinds, name: mutating}}
	toConfig := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []ctrlreconcile.Request {
		return []ctrlreconcile.Request{{NamespacedName: types.NamespacedName{Name: w.name}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("webhookconfig").
		WatchesRawSource(webhookConfigSource(md, w.name)).
		WatchesRawSource(mutatingConfigSource(md, mutating, ctrlreconcile.Request{NamespacedName: types.NamespacedName{Name: w.name}})).
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

// Reconcile brings the published entries of the validating and the
// mutating configuration to the kinds served.
func (w *webhookConfigReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	res, err := w.reconcileValidating(ctx)
	if w.mutating == nil {
		return res, err
	}
	mres, merr := w.mutating.Reconcile(ctx, req)
	if res.IsZero() {
		res = mres
	}
	return res, errors.Join(err, merr)
}

// reconcileValidating brings the validating configuration's published
// entries to the kinds served.
func (w *webhookConfigReconciler) reconcileValidating(ctx context.Context) (ctrl.Result, error) {
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
	var wants []admissionregistrationv1.ValidatingWebhook
	var drop []string
	served := w.kinds.Served()
	for _, pair := range publishedEntries {
		base, current := entry(cfg, pair.base), entry(cfg, pair.published)
		if base == nil && pair.base == CompositionsWebhookName && !w.missing.Swap(true) {
			ctrl.LoggerFrom(ctx).Info("the ValidatingWebhookConfiguration has no entry "+CompositionsWebhookName+"; the published kinds are not validated at admission", "name", w.name)
		}
		if base != nil && pair.base == CompositionsWebhookName {
			w.missing.Store(false)
		}
		if base == nil || len(served) == 0 {
			if current != nil {
				drop = append(drop, pair.published)
			}
			continue
		}
		wants = append(wants, publishedWebhook(base, served, pair.published, pair.policy))
	}
	for _, name := range legacyEntries {
		if entry(cfg, name) != nil {
			drop = append(drop, name)
		}
	}
	if len(drop) > 0 {
		// The update's event brings the next pass, which applies the rest.
		return ctrl.Result{}, w.remove(ctx, cfg, drop)
	}
	for _, want := range wants {
		if current := entry(cfg, want.Name); current == nil || !equality.Semantic.DeepEqual(*current, want) {
			return ctrl.Result{}, w.apply(ctx, wants)
		}
	}
	return ctrl.Result{}, nil
}

// publishedEntries are the entries kept for the published kinds, each
// sent as its base entry of config/webhook is: the render review, which
// fails open (a stopped controller never blocks the API), and the access
// check (serviceaccount.go), which fails closed (a check that an
// overloaded or stopped webhook skips is no check).
var publishedEntries = []struct {
	base, published string
	policy          admissionregistrationv1.FailurePolicyType
}{
	{base: CompositionsWebhookName, published: PublishedWebhookName, policy: admissionregistrationv1.Ignore},
}

// legacyEntries are the entries of the access check an earlier stencil
// served (the ServiceAccount check is the API server's own now, package
// authority): removed where found, since their path is no longer served
// and they fail closed.
var legacyEntries = []string{"access.compositions.stencil.dev", "access.published.stencil.dev"}

// entry returns cfg's entry name, nil when it has none.
func entry(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, name string) *admissionregistrationv1.ValidatingWebhook {
	for i := range cfg.Webhooks {
		if cfg.Webhooks[i].Name == name {
			return &cfg.Webhooks[i]
		}
	}
	return nil
}

// publishedWebhook is the entry name for the kinds served, sent as base
// is, with failure policy policy.
func publishedWebhook(base *admissionregistrationv1.ValidatingWebhook, served []engine.Kind, name string, policy admissionregistrationv1.FailurePolicyType) admissionregistrationv1.ValidatingWebhook {
	want := admissionregistrationv1.ValidatingWebhook{
		Name:                    name,
		ClientConfig:            *base.ClientConfig.DeepCopy(),
		FailurePolicy:           ptr.To(policy),
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

// apply server-side applies the entries, under stencil's field manager:
// all of them in one apply, since an entry left out of it would be dropped.
func (w *webhookConfigReconciler) apply(ctx context.Context, wants []admissionregistrationv1.ValidatingWebhook) error {
	var entries []any
	for i := range wants {
		e, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&wants[i])
		if err != nil {
			return fmt.Errorf("apply ValidatingWebhookConfiguration %s: %w", w.name, err)
		}
		entries = append(entries, e)
	}
	u := &unstructured.Unstructured{Object: map[string]any{"webhooks": entries}}
	u.SetGroupVersionKind(admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingWebhookConfiguration"))
	u.SetName(w.name)
	if err := w.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(applyset.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply ValidatingWebhookConfiguration %s: %w", w.name, applyset.Scrub(err))
	}
	return nil
}

// remove drops the entries names. It is an update at the version read, not
// an apply of no entry: a field of the entry another manager owns (a CA
// injected) would keep a part of it.
func (w *webhookConfigReconciler) remove(ctx context.Context, cfg *admissionregistrationv1.ValidatingWebhookConfiguration, names []string) error {
	cfg.Webhooks = slices.DeleteFunc(cfg.Webhooks, func(h admissionregistrationv1.ValidatingWebhook) bool { return slices.Contains(names, h.Name) })
	if err := w.client.Update(ctx, cfg, client.FieldOwner(applyset.FieldManager)); err != nil {
		return fmt.Errorf("remove %s from ValidatingWebhookConfiguration %s: %w", strings.Join(names, ", "), w.name, err)
	}
	return nil
}
