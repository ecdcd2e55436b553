package reconcile

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

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
