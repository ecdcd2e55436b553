package metrics

import "time"

// Phases of a reconcile, the values of stencil_reconcile_phase_duration_seconds' label.
const (
	PhaseShortcut = "shortcut"
	PhaseParent   = "parent"
	PhaseRender   = "render"
	PhasePrepare  = "prepare"
	PhaseApply    = "apply"
	PhasePrune    = "prune"
	PhaseStatus   = "status"
)

// Outcomes of a reconcile, the values of stencil_reconcile_passes_total's label.
const (
	OutcomeUnchanged = "unchanged"
	OutcomeFull      = "full"
	OutcomeStalled   = "stalled"
	OutcomeError     = "error"
	OutcomeSuspended = "suspended"
	OutcomeDeleting  = "deleting"
)

// PhaseTimer adds up the time one reconcile spends in each phase, to
// observe each phase once per pass (status is observed and written in two
// steps; parent is written before and after the render).
type PhaseTimer map[string]time.Duration

// Time runs f and adds its duration to phase.
func (t PhaseTimer) Time(phase string, f func()) {
	start := time.Now()
	f()
	t[phase] += time.Since(start)
}

// Observe records the pass's phases in the histogram.
func (t PhaseTimer) Observe() {
	for phase, d := range t {
		PhaseDuration.WithLabelValues(phase).Observe(d.Seconds())
	}
}
