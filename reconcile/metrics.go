package reconcile

import (
	"sync"
	"time"

	"github.com/stencil-dev/stencil/reconcile/metrics"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// Phases of a reconcile, the values of stencil_reconcile_phase_duration_seconds' label.
const (
	phaseShortcut = "shortcut"
	phaseParent   = "parent"
	phaseRender   = "render"
	phasePrepare  = "prepare"
	phaseApply    = "apply"
	phasePrune    = "prune"
	phaseStatus   = "status"
)

// Outcomes of a reconcile, the values of stencil_reconcile_passes_total's label.
const (
	outcomeUnchanged = "unchanged"
	outcomeFull      = "full"
	outcomeStalled   = "stalled"
	outcomeError     = "error"
	outcomeSuspended = "suspended"
	outcomeDeleting  = "deleting"
)

// phaseTimer adds up the time one reconcile spends in each phase, to
// observe each phase once per pass (status is observed and written in two
// steps; parent is written before and after the render).
type phaseTimer map[string]time.Duration

// time runs f and adds its duration to phase.
func (t phaseTimer) time(phase string, f func()) {
	start := time.Now()
	f()
	t[phase] += time.Since(start)
}

// observe records the pass's phases in the histogram.
func (t phaseTimer) observe() {
	for phase, d := range t {
		metrics.PhaseDuration.WithLabelValues(phase).Observe(d.Seconds())
	}
}

// outcome classifies a finished pass for stencil_reconcile_passes_total.
func outcome(s *scope, err error) string {
	switch {
	case err != nil:
		return outcomeError
	case s.deleting:
		return outcomeDeleting
	case s.comp.ParentSpec().Suspend:
		return outcomeSuspended
	case meta.IsStatusConditionTrue(s.status.Conditions, v1alpha1.ConditionStalled):
		return outcomeStalled
	case s.unchanged:
		return outcomeUnchanged
	}
	return outcomeFull
}

// readyReasons are the reasons stencil sets on the Ready condition: the
// bounded values of stencil_compositions' reason label.
var readyReasons = map[string]bool{
	v1alpha1.ReasonReady: true, v1alpha1.ReasonProgressing: true, v1alpha1.ReasonMemberFailed: true, v1alpha1.ReasonRenderFailed: true,
	v1alpha1.ReasonRefused: true, v1alpha1.ReasonBundleNotFound: true, v1alpha1.ReasonApplyFailed: true, v1alpha1.ReasonPruneFailed: true,
	v1alpha1.ReasonReconcileFailed: true, v1alpha1.ReasonSuspended: true, v1alpha1.ReasonDeleting: true, v1alpha1.ReasonForbidden: true,
	v1alpha1.ReasonInvalid: true, v1alpha1.ReasonBadRequest: true, v1alpha1.ReasonTooLarge: true, v1alpha1.ReasonEmptyRender: true,
	v1alpha1.ReasonFlapping: true, v1alpha1.ReasonHookFailed: true, v1alpha1.ReasonRenderTimeout: true, v1alpha1.ReasonRenderTooLarge: true,
}

// readyState is a Composition's Ready condition as the gauge counts it.
type readyState struct {
	status metav1.ConditionStatus
	reason string
}

// readiness remembers each Composition's Ready status and reason to
// publish the gauge.
type readiness struct {
	mu        sync.Mutex
	ready     map[parentKey]readyState
	published map[readyState]bool
	// gauge is stencil_compositions unless a test gives its own.
	gauge *prometheus.GaugeVec
}

func (r *readiness) record(comp applyset.Parent, conds []metav1.Condition) {
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
		r.ready = map[parentKey]readyState{}
	}
	r.ready[keyOfParent(comp)] = st
	r.publish()
}

func (r *readiness) forget(key parentKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ready, key)
	r.publish()
}

// publish sets the gauge from what is remembered: a series per status and
// reason some Composition has, 0 for True, False and Unknown when none has
// it, and none for a reason no Composition has any more.
func (r *readiness) publish() {
	gauge := r.gauge
	if gauge == nil {
		gauge = metrics.Compositions
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
