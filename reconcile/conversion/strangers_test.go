package conversion_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	neturl "net/url"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/admission"
)

// The API server calls a CRD's conversion webhook with no client
// certificate: a caller without one is answered, and not throttled at a
// stranger's few requests a second (which would fail the API server's
// conversions). What it gets is its own object converted, or a Failure
// naming why: here, a kind no Bundle publishes.
func TestConvertWithoutCertificate(t *testing.T) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Get(context.Background(), suite.Key("", "stencil-conversion-test"), cfg); err != nil {
		t.Fatal(err)
	}
	var base *admissionregistrationv1.WebhookClientConfig
	for i := range cfg.Webhooks {
		if cfg.Webhooks[i].Name == admission.CompositionsWebhookName {
			base = &cfg.Webhooks[i].ClientConfig
		}
	}
	if base == nil || base.URL == nil {
		t.Fatalf("no %s entry with a URL", admission.CompositionsWebhookName)
	}
	u, err := neturl.Parse(*base.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/convert"
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(base.CABundle)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	review, err := json.Marshal(&apiextensionsv1.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "stranger", DesiredAPIVersion: "nobody.example.com/v2",
			Objects: []runtime.RawExtension{{Raw: []byte(`{"apiVersion":"nobody.example.com/v1","kind":"Thing","metadata":{"name":"x","namespace":"default"}}`)}}}})
	if err != nil {
		t.Fatal(err)
	}
	// More than a stranger's burst (10) from one address, at once.
	for i := range 25 {
		res, err := hc.Post(u.String(), "application/json", bytes.NewReader(review))
		if err != nil {
			t.Fatalf("review %d: %v", i, err)
		}
		out := &apiextensionsv1.ConversionReview{}
		derr := json.NewDecoder(res.Body).Decode(out)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK || derr != nil || out.Response == nil {
			t.Fatalf("review %d: status %d, %v", i, res.StatusCode, derr)
		}
		if r := out.Response; r.UID != "stranger" || r.Result.Status != metav1.StatusFailure || len(r.ConvertedObjects) != 0 {
			t.Fatalf("review %d: %+v", i, r)
		}
	}
}
