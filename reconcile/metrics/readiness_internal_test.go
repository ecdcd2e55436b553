package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// TestReadinessGauge: the gauge counts Compositions by Ready status and
// reason, bounds reasons, keeps 0 for True, False and Unknown, and removes
// the series of a reason no Composition has any more.
func TestReadinessGauge(t *testing.T) {
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "test_compositions"}, []string{"ready", "reason"})
	r := &Readiness{gauge: gauge}
	key := func(name string) ParentKey {
		return ParentKey{Kind: v1alpha1.GroupVersion.WithKind("Composition").GroupKind(), NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}
	cond := func(s metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: s, Reason: reason}}
	}
	r.Record(key("a"), cond(metav1.ConditionTrue, v1alpha1.ReasonReady))
	r.Record(key("b"), cond(metav1.ConditionTrue, v1alpha1.ReasonReady))
	r.Record(key("c"), cond(metav1.ConditionFalse, v1alpha1.ReasonRenderFailed))
	r.Record(key("d"), cond(metav1.ConditionFalse, "SomethingAWebhookSaid"))
	r.Record(key("e"), nil)
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

	r.Record(key("c"), cond(metav1.ConditionTrue, v1alpha1.ReasonReady))
	r.Forget(key("d"))
	r.Forget(key("a"))
	want = map[[2]string]float64{
		{"True", v1alpha1.ReasonReady}: 2, {"Unknown", ""}: 1, {"True", ""}: 0, {"False", ""}: 0,
	}
	check("after c turned Ready and a and d were deleted")
}
