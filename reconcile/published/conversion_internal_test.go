package published

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"

	"github.com/stencil-dev/stencil/publish"
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

// withToken keeps the live CRD's token, in either form of clientConfig,
// and makes a new one only when the live CRD has none.
func TestWithToken(t *testing.T) {
	token := strings.Repeat("5e", publish.ConversionTokenBytes)
	crdWith := func(cc *apiextensionsv1.WebhookClientConfig) *apiextensionsv1.CustomResourceDefinition {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{ClientConfig: cc}}
		return crd
	}
	service := func(path string) *apiextensionsv1.WebhookClientConfig {
		return &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{Namespace: "s", Name: "w", Path: ptr.To(path)}}
	}
	url := func(path string) *apiextensionsv1.WebhookClientConfig {
		return &apiextensionsv1.WebhookClientConfig{URL: ptr.To("https://127.0.0.1:9443" + path)}
	}
	for name, tt := range map[string]struct {
		cc   func(string) *apiextensionsv1.WebhookClientConfig
		live *apiextensionsv1.CustomResourceDefinition
		keep bool
	}{
		"service, live has a token":       {service, crdWith(url(publish.ConversionPath(token))), true},
		"url, live has a token":           {url, crdWith(service(publish.ConversionPath(token))), true},
		"no live CRD":                     {url, nil, false},
		"live has no webhook":             {service, &apiextensionsv1.CustomResourceDefinition{}, false},
		"live has the path with no token": {service, crdWith(service(publish.ConversionWebhookPath)), false},
	} {
		t.Run(name, func(t *testing.T) {
			crd := crdWith(tt.cc(publish.ConversionWebhookPath))
			if err := withToken(crd, tt.live); err != nil {
				t.Fatal(err)
			}
			got, ok := publish.ConversionToken(crd)
			switch {
			case !ok:
				t.Fatalf("no token in %+v", crd.Spec.Conversion.Webhook.ClientConfig)
			case tt.keep && got != token:
				t.Errorf("token %s, want the live CRD's %s", got, token)
			case !tt.keep && got == token:
				t.Errorf("kept a token the live CRD does not have")
			}
			if diff := cmp.Diff(tt.cc(publish.ConversionPath(got)), crd.Spec.Conversion.Webhook.ClientConfig); diff != "" {
				t.Errorf("clientConfig (-want +got):\n%s", diff)
			}
		})
	}
	a, b := crdWith(url("/convert")), crdWith(url("/convert"))
	if err := errors.Join(withToken(a, nil), withToken(b, nil)); err != nil {
		t.Fatal(err)
	}
	if ta, _ := publish.ConversionToken(a); ta == func() string { tb, _ := publish.ConversionToken(b); return tb }() {
		t.Errorf("two new CRDs got the same token %s", ta)
	}
}
