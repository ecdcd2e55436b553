package source_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/source/sourcetest"
)

// TestSourceErrorBodies: what a registry or repository sends with an
// error (its body, its reason phrase, its certificate's names) never
// reaches a message: an attacker's registry would fill a Bundle's status,
// its events and the controller's log with it. A message keeps the
// reason, the status code and a fixed description.
func TestSourceErrorBodies(t *testing.T) {
	const leak = "LEAKED-by-the-registry"
	reg := sourcetest.NewRegistry(t, "", "")
	reg.Push(t, "charts/podinfo", "1.0.0", sourcetest.Chart(t, "podinfo", "1.0.0", podinfo))
	reg.Answer("/v2/charts/json/", http.StatusInternalServerError, "", `{"errors":[{"code":"UNKNOWN","message":"`+leak+`","detail":"`+leak+`"},{"code":"`+leak+`"}]}`)
	reg.Answer("/v2/charts/raw/", http.StatusBadGateway, leak, leak)
	reg.Answer("/v2/charts/denied/", http.StatusForbidden, leak, `{"errors":[{"code":"DENIED","message":"`+leak+`"}]}`)
	repo := sourcetest.NewRepo(t, "", "")
	repo.Answer("/index.yaml", http.StatusServiceUnavailable, leak, leak)
	oci := func(repo string) v1alpha1.BundleSource { return v1alpha1.BundleSource{OCI: reg.Ref(repo, "1.0.0")} }
	for _, tt := range []struct {
		name   string
		spec   v1alpha1.BundleSource
		creds  source.Credentials
		reason string
		want   string
	}{
		{"JSON error body", oci("charts/json"), source.Credentials{CA: reg.CA}, source.ReasonPullFailed, "HTTP 500 Internal Server Error (UNKNOWN)"},
		{"raw body and reason phrase", oci("charts/raw"), source.Credentials{CA: reg.CA}, source.ReasonPullFailed, "HTTP 502 Bad Gateway"},
		{"denied", oci("charts/denied"), source.Credentials{CA: reg.CA}, source.ReasonUnauthorized, "HTTP 403 Forbidden (DENIED)"},
		{"chart repository", v1alpha1.BundleSource{ChartRepository: &v1alpha1.ChartRepositorySource{URL: repo.URL, Chart: "podinfo"}}, source.Credentials{CA: repo.CA}, source.ReasonPullFailed, "HTTP 503 Service Unavailable"},
		{"certificate's names", oci("charts/podinfo"), source.Credentials{}, source.ReasonPullFailed, "signed by an authority that is not trusted"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := source.Fetch(ctx(t), tt.spec, tt.creds, loopback)
			wantReason(t, err, tt.reason)
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("message %q; want it to say %q", msg, tt.want)
			}
			// httptest's certificate names the organisation Acme Co.
			for _, s := range []string{leak, "Acme", "x509"} {
				if strings.Contains(msg, s) {
					t.Errorf("message %q quotes what the server sent (%q)", msg, s)
				}
			}
		})
	}
}
