package serving

import (
	"context"
	"fmt"
	neturl "net/url"
	"strings"

	"github.com/stencil-dev/stencil/reconcile/admission"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// loopbackFieldOwner is the field manager of the client configs the
// loopback controller writes. Constant forever.
const loopbackFieldOwner = "stencil-webhook-loopback"

// loopback points every entry of the webhook configuration at the
// controller's own URL (ServingOptions.Host), for a controller that runs
// outside the cluster (`make run`, the e2e test): the configuration
// config/webhook installs names the in-cluster Service, which does not
// lead to a process on the host. It watches the configuration, so an entry
// added later (the Bundle controller's published.stencil.dev) is pointed
// there too; the caBundle is left to the rotator.
type loopback struct {
	cache    client.Reader
	writer   client.Client
	name     string
	mutating string
	url      string
}

func setupLoopback(mgr ctrl.Manager, o ServingOptions, c cache.Cache) error {
	l := &loopback{cache: c, writer: mgr.GetClient(), name: o.ConfigName, mutating: o.mutatingConfigName(), url: o.URL()}
	return builder.ControllerManagedBy(mgr).
		Named("webhook-loopback").
		WatchesRawSource(source.Kind(c, &admissionregistrationv1.ValidatingWebhookConfiguration{},
			&handler.TypedEnqueueRequestForObject[*admissionregistrationv1.ValidatingWebhookConfiguration]{})).
		WatchesRawSource(source.Kind(c, &admissionregistrationv1.MutatingWebhookConfiguration{},
			&handler.TypedEnqueueRequestForObject[*admissionregistrationv1.MutatingWebhookConfiguration]{})).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 1}).
		Complete(l)
}

// Reconcile sets clientConfig.url of every entry of the configurations
// (the validating and the mutating one, both named in the request's name)
// to the controller's URL, dropping clientConfig.service. A conflict with
// another writer (the rotator, the Bundle controller) is retried.
func (l *loopback) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var cfgs []client.Object
	switch req.NamespacedName {
	case types.NamespacedName{Name: l.name}:
		cfgs = append(cfgs, &admissionregistrationv1.ValidatingWebhookConfiguration{})
	}
	if req.NamespacedName == (types.NamespacedName{Name: l.mutating}) {
		cfgs = append(cfgs, &admissionregistrationv1.MutatingWebhookConfiguration{})
	}
	for _, cfg := range cfgs {
		if err := l.cache.Get(ctx, req.NamespacedName, cfg); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return ctrl.Result{}, err
			}
			continue
		}
		if !cfg.GetDeletionTimestamp().IsZero() || !pointAt(clientConfigs(cfg), l.url) {
			continue
		}
		if err := l.writer.Update(ctx, cfg, client.FieldOwner(loopbackFieldOwner)); err != nil {
			return ctrl.Result{}, fmt.Errorf("point %T %s at %s: %w", cfg, req.Name, l.url, err)
		}
		ctrl.LoggerFrom(ctx).Info("pointed the webhook configuration at the controller", "name", req.Name, "url", l.url, "webhooks", len(clientConfigs(cfg)))
	}
	return ctrl.Result{}, nil
}

// clientConfigs are the client configs of cfg's entries, to change in place.
func clientConfigs(cfg client.Object) []*admissionregistrationv1.WebhookClientConfig {
	var out []*admissionregistrationv1.WebhookClientConfig
	switch cfg := cfg.(type) {
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for i := range cfg.Webhooks {
			out = append(out, &cfg.Webhooks[i].ClientConfig)
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for i := range cfg.Webhooks {
			out = append(out, &cfg.Webhooks[i].ClientConfig)
		}
	}
	return out
}

// pointAt points every client config at the host and port of url
// (which ends in admission.WebhookPath), each at its own path, keeping its caBundle,
// and reports whether it changed any.
func pointAt(ccs []*admissionregistrationv1.WebhookClientConfig, url string) bool {
	base := strings.TrimSuffix(url, admission.WebhookPath)
	changed := false
	for _, cc := range ccs {
		// Each entry keeps its own path (the render's, or the fail-closed
		// access check's), on the controller's host and port.
		path := admission.WebhookPath
		switch {
		case cc.Service != nil && cc.Service.Path != nil:
			path = *cc.Service.Path
		case cc.URL != nil:
			if u, err := neturl.Parse(*cc.URL); err == nil && u.Path != "" {
				path = u.Path
			}
		}
		want := base + path
		if cc.Service == nil && cc.URL != nil && *cc.URL == want {
			continue
		}
		cc.Service, cc.URL = nil, ptr.To(want)
		changed = true
	}
	return changed
}
