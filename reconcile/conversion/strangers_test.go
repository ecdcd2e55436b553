package conversion_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/admission"
	"github.com/stencil-dev/stencil/reconcile/metrics"
)

// webhook is the controller's webhook server, as a caller with no
// client certificate reaches it (the API server, when it converts).
type webhook struct {
	base *neturl.URL
	hc   *http.Client
}

func newWebhook(t *testing.T) *webhook {
	t.Helper()
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
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(base.CABundle)
	return &webhook{base: u, hc: &http.Client{Timeout: 30 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}}
}

// post sends body to path and returns the status and the body of the
// answer.
func (w *webhook) post(t *testing.T, path string, body io.Reader) (int, []byte) {
	t.Helper()
	u := *w.base
	u.Path = path
	res, err := w.hc.Post(u.String(), "application/json", body)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer func() { _ = res.Body.Close() }()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	return res.StatusCode, out
}

// conversionReview asks for obj in desired.
func conversionReview(t *testing.T, desired, obj string) []byte {
	t.Helper()
	review, err := json.Marshal(&apiextensionsv1.ConversionReview{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "ConversionReview"},
		Request: &apiextensionsv1.ConversionRequest{UID: "caller", DesiredAPIVersion: desired,
			Objects: []runtime.RawExtension{{Raw: []byte(obj)}}}})
	if err != nil {
		t.Fatal(err)
	}
	return review
}

// crdToken is the token of the conversion path of group's AppService.
func crdToken(t *testing.T, group string) string {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Get(context.Background(), suite.Key("", "appservices."+group), crd); err != nil {
		t.Fatal(err)
	}
	token, ok := publish.ConversionToken(crd)
	if !ok {
		t.Fatalf("the CRD's conversion has no token: %+v", crd.Spec.Conversion)
	}
	return token
}

// A caller that presents no token of a CRD stencil keeps (the prefix
// alone, or a token of no CRD) is a stranger: it is answered 404 (its
// body unread: package admission's TestGuardConversionTokens), or 429
// past the strangers' rate, and nothing is converted for it.
func TestStrangersGetNotFound(t *testing.T) {
	_, group := publishAppService(t) // a kind whose token is known
	wh := newWebhook(t)
	review := conversionReview(t, "app-x.example.com/v2", `{"apiVersion":"app-x.example.com/v1","kind":"AppService","metadata":{"name":"x","namespace":"default"}}`)
	wrong := []byte(crdToken(t, group))
	wrong[0] ^= 1 // still hex, still of the length of a token
	counted := func() float64 {
		return testutil.ToFloat64(metrics.WebhookThrottled.WithLabelValues(publish.ConversionWebhookPath, "other", "token"))
	}
	before := counted()
	notFound := 0
	for i, path := range []string{"/convert", "/convert/", publish.ConversionPath(string(wrong)), publish.ConversionPath(strings.Repeat("0", 2*publish.ConversionTokenBytes)), "/convert/x/y"} {
		for range 5 {
			code, body := wh.post(t, path, bytes.NewReader(review))
			switch code {
			case http.StatusNotFound:
				notFound++
			case http.StatusTooManyRequests: // past the strangers' rate
			default:
				t.Fatalf("POST %s (%d): status %d, %s; want 404 (or 429)", path, i, code, body)
			}
			if bytes.Contains(body, []byte("ConversionReview")) {
				t.Fatalf("POST %s: a review was answered: %s", path, body)
			}
		}
	}
	if notFound == 0 {
		t.Fatal("no stranger was answered 404")
	}
	if got := counted() - before; got < float64(notFound) {
		t.Errorf("stencil_webhook_throttled_total{why=token} rose by %v, want at least %d", got, notFound)
	}

}

// A CRD's token converts that CRD's kind only: a review of another
// kind's objects at one kind's path is a Failure naming why, and the
// kind's own objects still convert there.
func TestTokenConvertsItsKindOnly(t *testing.T) {
	ns, group := publishAppService(t)
	_, other := publishAppService(t)
	wh := newWebhook(t)
	path := publish.ConversionPath(crdToken(t, group))

	obj := `{"apiVersion":"` + other + `/v1","kind":"AppService","metadata":{"name":"x","namespace":"` + ns + `"},"spec":{"size":2}}`
	var res *apiextensionsv1.ConversionResponse
	testenv.Eventually(t, 0, "an answer to a review of another kind", func() (bool, error) {
		code, body := wh.post(t, path, bytes.NewReader(conversionReview(t, other+"/v2", obj)))
		if code != http.StatusOK {
			return false, nil // the token not cached yet, or past the rate
		}
		out := &apiextensionsv1.ConversionReview{}
		if err := json.Unmarshal(body, out); err != nil {
			return false, err
		}
		res = out.Response
		return res != nil, nil
	})
	if res.Result.Status != metav1.StatusFailure || len(res.ConvertedObjects) != 0 ||
		!strings.Contains(res.Result.Message, "AppService."+other) || !strings.Contains(res.Result.Message, "converts no other kind") {
		t.Errorf("another kind's object at %s's path: %+v", group, res.Result)
	}

	own := strings.ReplaceAll(obj, other, group)
	code, body := wh.post(t, path, bytes.NewReader(conversionReview(t, group+"/v2", own)))
	out := &apiextensionsv1.ConversionReview{}
	if code != http.StatusOK || json.Unmarshal(body, out) != nil || out.Response == nil ||
		out.Response.Result.Status != metav1.StatusSuccess || !bytes.Contains(out.Response.ConvertedObjects[0].Raw, []byte(`"replicas":2`)) {
		t.Errorf("the kind's own object at its path: status %d, %s", code, body)
	}
}

// The token is the live CRD's: a change of the Bundle (a printer
// column) rewrites the CRD and keeps its conversion path, and the API
// server's conversions keep working.
func TestTokenSurvivesAPass(t *testing.T) {
	ns, group := publishAppService(t)
	ctx := context.Background()
	token := crdToken(t, group)
	env.UpdateBundle(t, "appservice-"+ns, func(s *v1alpha1.BundleSpec) {
		s.API.Versions[1].PrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"}}
	})
	crd := &apiextensionsv1.CustomResourceDefinition{}
	testenv.Eventually(t, 0, "the CRD's new printer column", func() (bool, error) {
		if err := env.Get(ctx, suite.Key("", "appservices."+group), crd); err != nil {
			return false, err
		}
		for _, v := range crd.Spec.Versions {
			for _, c := range v.AdditionalPrinterColumns {
				if v.Name == "v2" && c.Name == "Replicas" {
					return true, nil
				}
			}
		}
		return false, nil
	})
	if got, ok := publish.ConversionToken(crd); !ok || got != token {
		t.Errorf("the CRD's conversion token after a pass: %q (%v); want the token it had, %q", got, ok, token)
	}
	if err := env.Create(ctx, appService(t, group, "v1", ns, "after", "size: 1")); err != nil {
		t.Errorf("a write through v1 after the pass: %v", err)
	}
}
