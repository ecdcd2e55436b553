package metrics

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestRequestKind(t *testing.T) {
	for _, c := range []struct {
		method, url, verb, resource string
	}{
		{"GET", "/api/v1/namespaces/ns/configmaps/cfg", "get", "configmaps"},
		{"GET", "/api/v1/namespaces/ns/configmaps", "list", "configmaps"},
		{"GET", "/api/v1/configmaps?labelSelector=a%3Db&watch=true", "watch", "configmaps"},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments?watch=1&resourceVersion=5", "watch", "deployments.apps"},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/web?fieldManager=stencil", "patch", "deployments.apps"},
		{"PATCH", "/apis/stencil.dev/v1alpha1/namespaces/ns/compositions/web/status", "patch", "compositions.stencil.dev/status"},
		{"POST", "/api/v1/namespaces/ns/events", "create", "events"},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/stencil", "update", "leases.coordination.k8s.io"},
		{"DELETE", "/api/v1/namespaces/ns/secrets/s", "delete", "secrets"},
		{"DELETE", "/api/v1/namespaces/ns/secrets", "deletecollection", "secrets"},
		{"GET", "/api/v1/namespaces/ns", "get", "namespaces"},
		{"GET", "/api/v1/namespaces", "list", "namespaces"},
		{"PUT", "/api/v1/namespaces/ns/finalize", "update", "namespaces/finalize"},
		{"POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "create", "selfsubjectaccessreviews.authorization.k8s.io"},
		{"GET", "/apis/apps/v1", "get", "discovery"},
		{"GET", "/api", "get", "discovery"},
		{"GET", "/openapi/v3/apis/apps/v1?hash=abc", "get", "discovery"},
		{"GET", "/version", "get", "discovery"},
	} {
		req := httptest.NewRequest(c.method, c.url, nil)
		verb, resource := requestKind(req)
		if verb != c.verb || resource != c.resource {
			t.Errorf("%s %s: verb %q resource %q, want %q %q", c.method, c.url, verb, resource, c.verb, c.resource)
		}
	}
}

func TestCountAPIRequests(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer srv.Close()
	c := &http.Client{Transport: CountAPIRequests(http.DefaultTransport)}
	lists := apiRequests.WithLabelValues("list", "widgets.metrics.test")
	gets := apiRequests.WithLabelValues("get", "widgets.metrics.test")
	before := testutil.ToFloat64(lists)
	for range 3 {
		resp, err := c.Get(srv.URL + "/apis/metrics.test/v1/namespaces/ns/widgets")
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(lists) - before; got != 3 {
		t.Errorf("lists counted %v, want 3", got)
	}
	if got := testutil.ToFloat64(gets); got != 0 {
		t.Errorf("gets counted %v, want 0: a list is not a get", got)
	}
}
