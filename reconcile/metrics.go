package reconcile

import (
	"time"

	"github.com/stencil-dev/stencil/reconcile/metrics"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/stencil-dev/stencil/api/v1alpha1"
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
