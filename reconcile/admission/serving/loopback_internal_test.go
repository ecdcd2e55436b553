package serving

import (
	"testing"

	"github.com/stencil-dev/stencil/reconcile/admission"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/utils/ptr"
)

// TestPointAtKeepsPaths: a controller outside the cluster points every
// entry at itself, each at its own path (an entry of another path, as an
// earlier stencil had, keeps it), so no entry reaches another handler.
func TestPointAtKeepsPaths(t *testing.T) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{Webhooks: []admissionregistrationv1.ValidatingWebhook{
		{Name: "compositions.stencil.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Path: ptr.To(admission.WebhookPath)}}},
		{Name: "other.stencil.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Path: ptr.To("/other")}}},
		{Name: "published.stencil.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://elsewhere:1/other")}},
	}}
	url := "https://localhost:9443" + admission.WebhookPath
	if !pointAt(clientConfigs(cfg), url) {
		t.Fatal("pointAt changed nothing")
	}
	want := []string{"https://localhost:9443" + admission.WebhookPath, "https://localhost:9443/other", "https://localhost:9443/other"}
	for i, w := range cfg.Webhooks {
		if w.ClientConfig.Service != nil || w.ClientConfig.URL == nil || *w.ClientConfig.URL != want[i] {
			t.Errorf("%s: client config %+v, want URL %s", w.Name, w.ClientConfig, want[i])
		}
	}
	if pointAt(clientConfigs(cfg), url) {
		t.Error("pointAt changed an entry already pointed")
	}
	// The mutating configuration's entry, at its own path.
	mutating := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{
		{Name: "compositions.stencil.dev", ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "s", Path: ptr.To(admission.MutatePath)}}},
	}}
	if !pointAt(clientConfigs(mutating), url) || *mutating.Webhooks[0].ClientConfig.URL != "https://localhost:9443"+admission.MutatePath {
		t.Errorf("mutating entry: client config %+v, want URL https://localhost:9443%s", mutating.Webhooks[0].ClientConfig, admission.MutatePath)
	}
}
