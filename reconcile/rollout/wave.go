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
// counted), every gate true, the soak over. Parents that stalled, or were
// not Ready by the wave's deadline, stop the rollout (see fail) in the
// canary wave, and in the batches once they belong to failureThreshold
// tenants; fewer are tolerated (see tolerate).
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
	left := started.Add(deadline(r.pol)).Sub(r.Now)
	var fails, waits []*Parent
	why := map[*Parent]v1alpha1.RolloutParent{}
	for _, p := range r.moved() {
		if slices.Contains(r.st.FailedTenants, r.tenant(p)) {
			continue // counted once: its parents hold nothing back
		}
		switch h, reason, msg := judge(p, r.Bundle.Name, r.st.Target, started); h {
		case failed:
			fails, why[p] = append(fails, p), named(p, reason, msg)
		case pending:
			waits, why[p] = append(waits, p), named(p, "NotReady", "not Ready on "+r.st.Target+" yet")
		}
	}
	if left <= 0 {
		// Past the deadline, a parent not Ready is a failure as well.
		for _, p := range waits {
			why[p] = named(p, "NotReady", fmt.Sprintf("not Ready on %s within the progress deadline (%s)", r.st.Target, deadline(r.pol)))
		}
		fails, waits = append(fails, waits...), nil
	}
	if len(fails) > 0 && !r.tolerate(fails, why) {
		return false
	}
	waits = slices.DeleteFunc(waits, func(p *Parent) bool { return slices.Contains(r.st.FailedTenants, r.tenant(p)) })
	gate := ""
	if len(waits) == 0 {
		gate = r.gates(ctx)
	}
	if len(waits) > 0 || gate != "" {
		if left <= 0 { // a gate false at the deadline: no parent to blame
			r.fail([]v1alpha1.RolloutParent{{Reason: "Gate", Message: gate}}, fmt.Sprintf("were not Ready on %s within the progress deadline (%s)", r.st.Target, deadline(r.pol)))
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
		if p.Suspended || p.Deleting || !Selected(&r.st, r.Order, r.Bundle.Name, p.Key, r.canary[p]) {
			continue
		}
		if ok, _ := r.accepts(p, r.st.Target); ok {
			out = append(out, p)
		}
	}
	return out
}

// gates evaluates the gates over the current wave (but the parents of
// the tenants whose failures it tolerates): "" when all hold.
func (r *step) gates(ctx context.Context) string {
	if r.GateErr != nil {
		return "a gate does not compile: " + r.GateErr.Error()
	}
	if len(r.Gates) == 0 {
		return ""
	}
	var wave []*Parent
	for _, p := range r.wave() {
		if ok, _ := r.accepts(p, r.st.Target); ok && !p.Suspended && !p.Deleting && !slices.Contains(r.st.FailedTenants, r.tenant(p)) {
			wave = append(wave, p)
		}
	}
	return evaluate(ctx, r.Gates, waveView(r.st.Wave, r.Bundle.Name, wave))
}

// fail stops the rollout at the current wave: Rollback sends the parents
// it moved back to the stable revision, Halt leaves them.
func (r *step) fail(parents []v1alpha1.RolloutParent, what string) {
	slices.SortFunc(parents, byName)
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

// byName orders parents by namespace, name and kind.
func byName(a, b v1alpha1.RolloutParent) int {
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind))
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

// DefaultFailureThreshold is spec.rollout.failureThreshold when unset: a
// rollout stops on the failures of two tenants, never of one alone (but
// in its canary wave, or where one tenant is all of the Bundle's).
const DefaultFailureThreshold = 2

// tolerate judges fails, the parents that failed this look at the wave
// (why names each): it stops the rollout (and reports false) in the
// canary wave, or once their tenants and those failed before reach the
// threshold; else it counts their tenants (status.failedTenants), names
// the parents (status.failed) and reports true: the wave goes on, their
// tenants' parents no longer holding it back.
func (r *step) tolerate(fails []*Parent, why map[*Parent]v1alpha1.RolloutParent) bool {
	parents := make([]v1alpha1.RolloutParent, 0, len(fails))
	late := false
	tenants := slices.Clone(r.st.FailedTenants)
	var added []string
	for _, p := range fails {
		parents = append(parents, why[p])
		late = late || why[p].Reason == "NotReady"
		if t := r.tenant(p); !slices.Contains(tenants, t) {
			tenants, added = append(tenants, t), append(added, t)
		}
	}
	what := "stalled"
	if late {
		what = fmt.Sprintf("stalled or were not Ready on %s within the progress deadline (%s)", r.st.Target, deadline(r.pol))
	}
	threshold := r.threshold()
	switch {
	case hasCanary(r.pol) && r.st.Canary && r.st.Bound == "":
		r.fail(parents, "of the canary wave "+what)
		return false
	case len(tenants) >= threshold:
		r.fail(parents, fmt.Sprintf("%s, in %d tenants (failureThreshold %d)", what, len(tenants), threshold))
		return false
	}
	slices.Sort(tenants)
	r.st.FailedTenants = tenants
	slices.SortFunc(parents, byName)
	for _, p := range parents {
		if len(r.st.Failed) < maxFailed && !slices.ContainsFunc(r.st.Failed, func(f v1alpha1.RolloutParent) bool {
			return f.Kind == p.Kind && f.Namespace == p.Namespace && f.Name == p.Name
		}) {
			r.st.Failed = append(r.st.Failed, p)
		}
	}
	r.event("Warning", v1alpha1.ReasonFailureTolerated, "wave %d/%d of revision %s goes on: parents of %d of the %d tenants failureThreshold stops at %s (%s); their parents no longer hold the waves back",
		r.st.Wave, r.st.Waves, r.st.Target, len(tenants), threshold, what, strings.Join(added, ", "))
	return true
}

// threshold is how many tenants' failures stop the rollout: the policy's
// failureThreshold (DefaultFailureThreshold when unset), at most the
// number of tenants the followers belong to.
func (r *step) threshold() int {
	n := DefaultFailureThreshold
	if t := r.pol.FailureThreshold; t != nil && *t > 0 {
		n = int(*t)
	}
	seen := map[string]bool{}
	for _, p := range r.followers {
		seen[r.tenant(p)] = true
	}
	if len(seen) > 0 {
		n = min(n, len(seen))
	}
	return n
}

// tenant is p's tenant: the value of its namespace's spec.rollout.
// tenantLabel, else its namespace.
func (r *step) tenant(p *Parent) string {
	if l := r.pol.TenantLabel; l != "" {
		if v := p.NamespaceLabels[l]; v != "" {
			return v
		}
	}
	return p.Key.Namespace
}
