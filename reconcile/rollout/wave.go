package rollout

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// The judging of a wave: when it is done, and when it failed.

// waveDone judges every parent the rollout moved so far and reports
// whether the current wave is done: all Ready on the target (or not
// counted), every gate true, the soak over. A parent that stalled, or a
// wave not done by its deadline, stops the rollout (see fail).
func (r *step) waveDone(ctx context.Context) bool {
	if r.promote {
		r.promote = false
		r.event("Normal", v1alpha1.ReasonWaveStarted, "wave %d/%d of revision %s is promoted (%s)", r.st.Wave, r.st.Waves, r.st.Target, v1alpha1.AnnotationRolloutPromote)
		return true
	}
	started := r.Now
	if r.st.WaveStarted != nil {
		started = r.st.WaveStarted.Time
	}
	var fails, waits []v1alpha1.RolloutParent
	for _, p := range r.moved() {
		switch h, reason, msg := judge(p, r.Bundle.Name, r.st.Target, started); h {
		case failed:
			fails = append(fails, named(p, reason, msg))
		case pending:
			waits = append(waits, named(p, "NotReady", "not Ready on "+r.st.Target+" yet"))
		}
	}
	if len(fails) > 0 {
		r.fail(fails, "stalled")
		return false
	}
	gate := ""
	if len(waits) == 0 {
		gate = r.gates(ctx)
	}
	if len(waits) > 0 || gate != "" {
		left := started.Add(deadline(r.pol)).Sub(r.Now)
		if left <= 0 {
			if len(waits) == 0 {
				waits = []v1alpha1.RolloutParent{{Reason: "Gate", Message: gate}}
			}
			r.fail(waits, fmt.Sprintf("were not Ready on %s within the progress deadline (%s)", r.st.Target, deadline(r.pol)))
			return false
		}
		r.st.WaveReady = nil
		r.st.Message = fmt.Sprintf("wave %d/%d: waiting for %d parents to be Ready on %s", r.st.Wave, r.st.Waves, len(waits), r.st.Target)
		if len(waits) == 0 {
			r.st.Message = fmt.Sprintf("wave %d/%d: waiting: %s", r.st.Wave, r.st.Waves, gate)
		}
		r.requeue(left)
		return false
	}
	if r.st.WaveReady == nil {
		r.st.WaveReady = r.now()
	}
	if left := r.st.WaveReady.Add(soak(r.pol)).Sub(r.Now); left > 0 {
		r.st.Message = fmt.Sprintf("wave %d/%d: Ready; soaking for %s more", r.st.Wave, r.st.Waves, left.Round(time.Second))
		r.requeue(left)
		return false
	}
	return true
}

// moved are the followers the rollout moved that render (neither
// suspended nor being deleted) and whose values the target takes.
func (r *step) moved() []*Parent {
	var out []*Parent
	for _, p := range r.followers {
		if p.Suspended || p.Deleting || !Selected(&r.st, r.Bundle.Name, p.Key, r.canary[p]) {
			continue
		}
		if ok, _ := r.accepts(p, r.st.Target); ok {
			out = append(out, p)
		}
	}
	return out
}

// gates evaluates the gates over the current wave: "" when all hold.
func (r *step) gates(ctx context.Context) string {
	if r.GateErr != nil {
		return "a gate does not compile: " + r.GateErr.Error()
	}
	if len(r.Gates) == 0 {
		return ""
	}
	var wave []*Parent
	for _, p := range r.wave() {
		if ok, _ := r.accepts(p, r.st.Target); ok && !p.Suspended && !p.Deleting {
			wave = append(wave, p)
		}
	}
	return evaluate(ctx, r.Gates, waveView(r.st.Wave, r.Bundle.Name, wave))
}

// fail stops the rollout at the current wave: Rollback sends the parents
// it moved back to the stable revision, Halt leaves them.
func (r *step) fail(parents []v1alpha1.RolloutParent, what string) {
	slices.SortFunc(parents, func(a, b v1alpha1.RolloutParent) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
	})
	r.st.Failed = parents[:min(len(parents), maxFailed)]
	names := make([]string, 0, len(r.st.Failed))
	for _, p := range r.st.Failed {
		if p.Name == "" {
			names = append(names, p.Message)
			continue
		}
		names = append(names, fmt.Sprintf("%s/%s (%s)", p.Namespace, p.Name, p.Reason))
	}
	more := ""
	if len(parents) > maxFailed {
		more = fmt.Sprintf(" (+%d more)", len(parents)-maxFailed)
	}
	list := strings.Join(names, ", ") + more
	if r.pol.OnFailure == v1alpha1.FailureHalt {
		r.st.Phase = v1alpha1.RolloutHalted
		r.st.Message = fmt.Sprintf("halted at wave %d/%d: parents %s: %s; the parents moved stay on %s", r.st.Wave, r.st.Waves, what, list, r.st.Target)
		r.event("Warning", v1alpha1.ReasonRolloutHalted, "%s", r.st.Message)
		return
	}
	r.st.Phase = v1alpha1.RolloutRolledBack
	r.st.Message = fmt.Sprintf("rolled back at wave %d/%d: parents %s: %s; the parents moved go back to %s", r.st.Wave, r.st.Waves, what, list, r.st.Stable)
	r.event("Warning", v1alpha1.ReasonRolledBack, "%s", r.st.Message)
}

func named(p *Parent, reason, msg string) v1alpha1.RolloutParent {
	kind, _, _ := strings.Cut(p.Key.Kind, ".")
	return v1alpha1.RolloutParent{Kind: kind, Namespace: p.Key.Namespace, Name: p.Key.Name, Reason: reason, Message: msg}
}

func (r *step) requeue(d time.Duration) {
	d = min(max(d, time.Second), recheck)
	if r.out.Requeue == 0 || d < r.out.Requeue {
		r.out.Requeue = d
	}
}
