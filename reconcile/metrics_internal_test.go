package reconcile

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
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
	lists := apiRequestsTotal.WithLabelValues("list", "widgets.metrics.test")
	gets := apiRequestsTotal.WithLabelValues("get", "widgets.metrics.test")
	before := testutil.ToFloat64(lists)
	for range 3 {
		resp, err := c.Get(srv.URL + "/apis/metrics.test/v1/namespaces/ns/widgets")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := testutil.ToFloat64(lists) - before; got != 3 {
		t.Errorf("lists counted %v, want 3", got)
	}
	if got := testutil.ToFloat64(gets); got != 0 {
		t.Errorf("gets counted %v, want 0: a list is not a get", got)
	}
}

// TestReadinessGauge: the gauge counts Compositions by Ready status and
// reason, bounds reasons, keeps 0 for True, False and Unknown, and removes
// the series of a reason no Composition has any more.
func TestReadinessGauge(t *testing.T) {
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_compositions"}, []string{"ready", "reason"})
	r := &readiness{gauge: gauge}
	comp := func(name string) *v1alpha1.Composition {
		return &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	cond := func(s metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: s, Reason: reason}}
	}
	r.record(comp("a"), cond(metav1.ConditionTrue, v1alpha1.ReasonReady))
	r.record(comp("b"), cond(metav1.ConditionTrue, v1alpha1.ReasonReady))
	r.record(comp("c"), cond(metav1.ConditionFalse, v1alpha1.ReasonRenderFailed))
	r.record(comp("d"), cond(metav1.ConditionFalse, "SomethingAWebhookSaid"))
	r.record(comp("e"), nil)
	want := map[[2]string]float64{
		{"True", v1alpha1.ReasonReady}: 2, {"False", v1alpha1.ReasonRenderFailed}: 1, {"False", "Other"}: 1,
		{"Unknown", ""}: 1, {"True", ""}: 0, {"False", ""}: 0,
	}
	check := func(when string) {
		t.Helper()
		if n := testutil.CollectAndCount(gauge); n != len(want) {
			t.Errorf("%s: %d series, want %d", when, n, len(want))
		}
		for l, v := range want {
			if got := testutil.ToFloat64(gauge.WithLabelValues(l[0], l[1])); got != v {
				t.Errorf("%s: compositions{ready=%q,reason=%q} = %v, want %v", when, l[0], l[1], got, v)
			}
		}
	}
	check("after five records")

	r.record(comp("c"), cond(metav1.ConditionTrue, v1alpha1.ReasonReady))
	r.forget(parentKey{kind: applyset.CompositionGroupKind, NamespacedName: types.NamespacedName{Namespace: "ns", Name: "d"}})
	r.forget(parentKey{kind: applyset.CompositionGroupKind, NamespacedName: types.NamespacedName{Namespace: "ns", Name: "a"}})
	want = map[[2]string]float64{
		{"True", v1alpha1.ReasonReady}: 2, {"Unknown", ""}: 1, {"True", ""}: 0, {"False", ""}: 0,
	}
	check("after c turned Ready and a and d were deleted")
}
