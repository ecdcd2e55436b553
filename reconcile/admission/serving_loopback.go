package admission

import (
	"context"
	"fmt"
	neturl "net/url"
	"strings"

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
	cache  client.Reader
	writer client.Client
	name   string
	url    string
}

func setupLoopback(mgr ctrl.Manager, o ServingOptions, c cache.Cache) error {
	l := &loopback{cache: c, writer: mgr.GetClient(), name: o.ConfigName, url: o.URL()}
	return builder.ControllerManagedBy(mgr).
		Named("webhook-loopback").
		WatchesRawSource(source.Kind(c, &admissionregistrationv1.ValidatingWebhookConfiguration{},
			&handler.TypedEnqueueRequestForObject[*admissionregistrationv1.ValidatingWebhookConfiguration]{})).
		WithOptions(controller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: 1}).
		Complete(l)
}

// Reconcile sets clientConfig.url of every entry of the configuration to
// the controller's URL, dropping clientConfig.service. A conflict with
// another writer (the rotator, the Bundle controller) is retried.
func (l *loopback) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.NamespacedName != (types.NamespacedName{Name: l.name}) {
		return ctrl.Result{}, nil
	}
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := l.cache.Get(ctx, req.NamespacedName, cfg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !cfg.DeletionTimestamp.IsZero() || !pointAt(cfg, l.url) {
		return ctrl.Result{}, nil
	}
	if err := l.writer.Update(ctx, cfg, client.FieldOwner(loopbackFieldOwner)); err != nil {
		return ctrl.Result{}, fmt.Errorf("point ValidatingWebhookConfiguration %s at %s: %w", l.name, l.url, err)
	}
	ctrl.LoggerFrom(ctx).Info("pointed the webhook configuration at the controller", "url", l.url, "webhooks", len(cfg.Webhooks))
	return ctrl.Result{}, nil
}

// pointAt points every entry's client config at the host and port of url
// (which ends in WebhookPath), each at its own path, keeping its caBundle,
// and reports whether it changed any.
func pointAt(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, url string) bool {
	base := strings.TrimSuffix(url, WebhookPath)
	changed := false
	for i := range cfg.Webhooks {
		cc := &cfg.Webhooks[i].ClientConfig
		// Each entry keeps its own path (the render's, or the fail-closed
		// access check's), on the controller's host and port.
		path := WebhookPath
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
