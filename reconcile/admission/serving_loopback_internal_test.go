package admission

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
)

// TestPointAtKeepsPaths: a controller outside the cluster points every
// entry at itself, each at its own path, so the fail-closed access entry
// reaches the access check, not the render.
func TestPointAtKeepsPaths(t *testing.T) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{
		{Name: "compositions.stencil.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Path: ptr.To(WebhookPath)}}},
		{Name: "access.compositions.stencil.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Path: ptr.To(AccessWebhookPath)}}},
		{Name: "published.stencil.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://elsewhere:1" + AccessWebhookPath)}},
	}}
	url := "https://localhost:9443" + WebhookPath
	if !pointAt(cfg, url) {
		t.Fatal("pointAt changed nothing")
	}
	want := []string{"https://localhost:9443" + WebhookPath, "https://localhost:9443" + AccessWebhookPath, "https://localhost:9443" + AccessWebhookPath}
	for i, w := range cfg.Webhooks {
		if w.ClientConfig.Service != nil || w.ClientConfig.URL == nil || *w.ClientConfig.URL != want[i] {
			t.Errorf("%s: client config %+v, want URL %s", w.Name, w.ClientConfig, want[i])
		}
	}
	if pointAt(cfg, url) {
		t.Error("pointAt changed an entry already pointed")
	}
}
