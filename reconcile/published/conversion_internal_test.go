package published

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
)

// The conversion webhook is sent as the base entry is, at /convert.
func TestConvertClientConfig(t *testing.T) {
	ca := []byte("ca")
	tests := []struct {
		name string
		base admissionregistrationv1.WebhookClientConfig
		want *apiextensionsv1.WebhookClientConfig
		why  bool
	}{
		{"service", admissionregistrationv1.WebhookClientConfig{CABundle: ca,
			Service: &admissionregistrationv1.ServiceReference{Namespace: "stencil-system", Name: "stencil-webhook", Path: ptr.To("/validate-stencil"), Port: ptr.To[int32](443)}},
			&apiextensionsv1.WebhookClientConfig{CABundle: ca,
				Service: &apiextensionsv1.ServiceReference{Namespace: "stencil-system", Name: "stencil-webhook", Path: ptr.To("/convert"), Port: ptr.To[int32](443)}}, false},
		{"url", admissionregistrationv1.WebhookClientConfig{CABundle: ca, URL: ptr.To("https://127.0.0.1:9443/validate-stencil?x=1")},
			&apiextensionsv1.WebhookClientConfig{CABundle: ca, URL: ptr.To("https://127.0.0.1:9443/convert")}, false},
		{"neither", admissionregistrationv1.WebhookClientConfig{CABundle: ca}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why, err := convertClientConfig(tt.base)
			if err != nil || (why != "") != tt.why {
				t.Fatalf("why %q, err %v", why, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("clientConfig (-want +got):\n%s", diff)
			}
		})
	}
}
