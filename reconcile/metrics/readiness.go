package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// ParentKey identifies a parent of any kind.
type ParentKey struct {
	Kind schema.GroupKind
	types.NamespacedName
}

// readyReasons are the reasons stencil sets on the Ready condition: the
// bounded values of stencil_compositions' reason label.
var readyReasons = map[string]bool{
	v1alpha1.ReasonReady: true, v1alpha1.ReasonProgressing: true, v1alpha1.ReasonMemberFailed: true, v1alpha1.ReasonRenderFailed: true,
	v1alpha1.ReasonRefused: true, v1alpha1.ReasonBundleNotFound: true, v1alpha1.ReasonApplyFailed: true, v1alpha1.ReasonPruneFailed: true,
	v1alpha1.ReasonReconcileFailed: true, v1alpha1.ReasonSuspended: true, v1alpha1.ReasonDeleting: true, v1alpha1.ReasonForbidden: true,
	v1alpha1.ReasonInvalid: true, v1alpha1.ReasonBadRequest: true, v1alpha1.ReasonTooLarge: true, v1alpha1.ReasonEmptyRender: true,
	v1alpha1.ReasonFlapping: true, v1alpha1.ReasonHookFailed: true, v1alpha1.ReasonRenderTimeout: true, v1alpha1.ReasonRenderTooLarge: true,
	v1alpha1.ReasonWaiting: true,
}

// readyState is a Composition's Ready condition as the gauge counts it.
type readyState struct {
	status metav1.ConditionStatus
	reason string
}

// Readiness remembers each Composition's Ready status and reason to
// publish the gauge.
type Readiness struct {
	mu        sync.Mutex
	ready     map[ParentKey]readyState
	published map[readyState]bool
	// gauge is stencil_compositions unless a test gives its own.
	gauge *prometheus.GaugeVec
}

// Record counts the parent key with the Ready condition of conds.
func (r *Readiness) Record(key ParentKey, conds []metav1.Condition) {
	st := readyState{status: metav1.ConditionUnknown}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c != nil {
		st = readyState{status: c.Status, reason: c.Reason}
	}
	if !readyReasons[st.reason] && st.reason != "" {
		st.reason = "Other"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready == nil {
		r.ready = map[ParentKey]readyState{}
	}
	r.ready[key] = st
	r.publish()
}

// Forget stops counting the parent key (it is gone).
func (r *Readiness) Forget(key ParentKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ready, key)
	r.publish()
}

// publish sets the gauge from what is remembered: a series per status and
// reason some Composition has, 0 for True, False and Unknown when none has
// it, and none for a reason no Composition has any more.
func (r *Readiness) publish() {
	gauge := r.gauge
	if gauge == nil {
		gauge = Compositions
	}
	counts := map[readyState]float64{}
	for _, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
		counts[readyState{status: s}] = 0
	}
	for _, s := range r.ready {
		counts[s]++
	}
	for s := range r.published {
		if _, ok := counts[s]; !ok {
			gauge.DeleteLabelValues(string(s.status), s.reason)
		}
	}
	r.published = map[readyState]bool{}
	for s, n := range counts {
		gauge.WithLabelValues(string(s.status), s.reason).Set(n)
		r.published[s] = true
	}
}
