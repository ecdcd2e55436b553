package rollout

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/revision"
)

// Step is one look at the rollout of one shard's parents of a Bundle: it
// starts a rollout when the Bundle's content changed, moves waves on when
// their parents are Ready on the new revision (gates true, soak over),
// stops a failing one, and counts. It is pure: what it decides is its
// Outcome, which the controller writes.
type Step struct {
	Bundle *v1alpha1.Bundle
	Shard  string
	// Parents are the shard's parents of the Bundle.
	Parents []*Parent
	// Accepts reports whether a revision takes a parent's values, and why
	// not; nil takes every value.
	Accepts func(p *Parent, revision string) (bool, string)
	// Gates are the Bundle's compiled gates; GateErr says which did not
	// compile (a wave waits on them).
	Gates   []Gate
	GateErr error
	Now     time.Time
}

// Outcome is what a Step decided.
type Outcome struct {
	Status v1alpha1.RolloutStatus
	Events []Event
	// Requeue is when to look again without any change (a soak or a
	// deadline ending); 0 when nothing waits on the clock.
	Requeue time.Duration
}

// Event is an event the controller records on the Bundle.
type Event struct {
	Type, Reason, Note string
}

// maxNamed bounds the parents a status names.
const (
	maxFailed = 10
	maxHeld   = 20
)

// recheck bounds how long a rollout under way waits without looking
// again: a notice of a parent's change may be lost (see Notifier).
const recheck = 30 * time.Second

// step is a Step being run.
type step struct {
	Step
	pol       v1alpha1.RolloutPolicy
	st        v1alpha1.RolloutStatus
	followers []*Parent
	canary    map[*Parent]bool
	out       Outcome
	// promote: the current wave is done now (stencil.dev/rollout-promote).
	promote bool
}

// Run runs the step.
func (s Step) Run(ctx context.Context) Outcome {
	r := &step{Step: s, pol: Policy(s.Bundle), canary: map[*Parent]bool{}}
	if cur := Find(s.Bundle, s.Shard); cur != nil {
		r.st = *cur.DeepCopy()
	}
	r.st.Shard = s.Shard
	for _, p := range s.Parents {
		if pin, _ := EffectivePin(s.Bundle, p.Pin); pin == "" {
			r.followers = append(r.followers, p)
			r.canary[p] = Canary(&r.pol, p.NamespaceLabels, p.Labels)
		}
	}
	current := Current(s.Bundle)
	if r.st.Stable == "" {
		if current == "" {
			r.out.Status = r.st
			return r.out
		}
		r.st.Stable, r.st.Phase = current, v1alpha1.RolloutComplete
	}
	switch {
	case current != "" && current != r.st.Stable && current != r.st.Target:
		r.start(current)
	case current != "" && current == r.st.Stable && r.st.Target != "":
		r.event("Normal", v1alpha1.ReasonRolloutComplete, "Bundle %s is back to its stable revision %s: the rollout of %s stops and the parents it moved go back", s.Bundle.Name, current, r.st.Target)
		r.complete(false)
	}
	if r.st.Target != "" {
		r.annotations()
		r.progress(ctx)
	}
	r.count()
	r.out.Status = r.st
	return r.out
}

// EffectivePin is the pin b lets stand: pin itself, or "" with why b
// refuses it (pinning disallowed, the revision withdrawn).
func EffectivePin(b *v1alpha1.Bundle, pin string) (string, string) {
	switch {
	case pin == "":
		return "", ""
	case !revision.PinningAllowed(b):
		return "", "pinning disallowed"
	case revision.Withdrawn(b, pin):
		return "", "withdrawn"
	}
	return pin, ""
}

func (r *step) event(typ, reason, format string, args ...any) {
	r.out.Events = append(r.out.Events, Event{Type: typ, Reason: reason, Note: fmt.Sprintf(format, args...)})
}

// start starts the rollout of revision target: at once for AllAtOnce,
// else from its first wave. A rollout under way is superseded: the
// parents it moved stay where they are until this one reaches them.
func (r *step) start(target string) {
	from, superseded := r.st.Stable, r.st.Target
	r.st.Target, r.st.Phase = target, v1alpha1.RolloutProgressing
	r.st.Wave, r.st.Waves, r.st.Canary, r.st.Bound, r.st.PreviousBound = 0, 0, false, "", ""
	r.st.WaveStarted, r.st.WaveReady, r.st.Failed, r.st.Message = nil, nil, nil, ""
	// Only values set from now on act on this rollout.
	r.st.Promoted, r.st.Retried = r.Bundle.Annotations[v1alpha1.AnnotationRolloutPromote], r.Bundle.Annotations[v1alpha1.AnnotationRolloutRetry]
	also := ""
	if superseded != "" {
		also = fmt.Sprintf(", superseding the rollout of %s (the parents it moved stay on it until this one reaches them)", superseded)
	}
	r.reportHeld(target)
	if r.pol.Strategy != v1alpha1.RolloutWaves {
		r.event("Normal", v1alpha1.ReasonRolloutStarted, "revision %s replaces %s at once (strategy AllAtOnce)%s", target, from, also)
		r.st.Wave, r.st.Waves, r.st.Bound = 1, 1, boundAll
		r.complete(true)
		return
	}
	r.event("Normal", v1alpha1.ReasonRolloutStarted, "revision %s replaces %s in waves%s", target, from, also)
}

// reportHeld names, in an event, the parents whose values target refuses,
// before any parent moves.
func (r *step) reportHeld(target string) {
	held := r.held(target)
	if len(held) == 0 {
		return
	}
	names := make([]string, 0, min(len(held), maxHeld))
	for _, h := range held[:min(len(held), maxHeld)] {
		names = append(names, h.Namespace+"/"+h.Name)
	}
	more := ""
	if len(held) > maxHeld {
		more = fmt.Sprintf(" (+%d more)", len(held)-maxHeld)
	}
	r.event("Warning", v1alpha1.ReasonValuesIncompatible, "revision %s refuses the values of %d parents, which stay on their revision: %s%s",
		target, len(held), strings.Join(names, ", "), more)
}

// complete ends the rollout: its target becomes the stable revision
// (done), or the Bundle went back to the stable one (!done).
func (r *step) complete(done bool) {
	if done {
		r.st.Stable = r.st.Target
		if r.pol.Strategy == v1alpha1.RolloutWaves {
			r.event("Normal", v1alpha1.ReasonRolloutComplete, "revision %s is rolled out: every parent that follows the Bundle is on it", r.st.Target)
		}
	}
	r.st.Target, r.st.Phase = "", v1alpha1.RolloutComplete
	r.st.Canary, r.st.Bound, r.st.PreviousBound = false, "", ""
	r.st.WaveStarted, r.st.WaveReady, r.st.Failed, r.st.Message = nil, nil, nil, ""
}

// annotations acts on new values of stencil.dev/rollout-retry (a stopped
// rollout tries its wave again) and stencil.dev/rollout-promote (the
// current wave is done now; a stopped rollout goes on).
func (r *step) annotations() {
	ann := r.Bundle.Annotations
	if v := ann[v1alpha1.AnnotationRolloutRetry]; v != "" && v != r.st.Retried {
		r.st.Retried = v
		if r.stopped() {
			r.event("Normal", v1alpha1.ReasonWaveStarted, "wave %d/%d of revision %s is retried (%s)", r.st.Wave, r.st.Waves, r.st.Target, v1alpha1.AnnotationRolloutRetry)
			r.st.Phase, r.st.Failed = v1alpha1.RolloutProgressing, nil
			r.st.WaveStarted, r.st.WaveReady = r.now(), nil
		}
	}
	if v := ann[v1alpha1.AnnotationRolloutPromote]; v != "" && v != r.st.Promoted {
		r.st.Promoted = v
		r.st.Phase, r.st.Failed = v1alpha1.RolloutProgressing, nil
		r.promote = true
	}
}

func (r *step) stopped() bool {
	return r.st.Phase == v1alpha1.RolloutHalted || r.st.Phase == v1alpha1.RolloutRolledBack
}

func (r *step) now() *metav1.Time {
	t := metav1.NewTime(r.Now)
	return &t
}

// progress moves the rollout on as far as its waves allow.
func (r *step) progress(ctx context.Context) {
	switch {
	case r.stopped():
		return
	case r.pol.Paused:
		if r.st.Phase != v1alpha1.RolloutPaused {
			r.event("Normal", v1alpha1.ReasonWaveStarted, "the rollout of %s is paused at wave %d/%d (spec.rollout.paused)", r.st.Target, r.st.Wave, r.st.Waves)
		}
		r.st.Phase, r.st.Message = v1alpha1.RolloutPaused, "paused (spec.rollout.paused): no wave starts or fails until it is unset"
		return
	case r.st.Phase == v1alpha1.RolloutPaused:
		// Resumed: the wave's deadline counts from now.
		r.st.Phase, r.st.WaveStarted, r.st.WaveReady = v1alpha1.RolloutProgressing, r.now(), nil
	}
	if r.st.Wave == 0 {
		r.nextWave()
	}
	for range r.st.Waves + 2 { // each turn ends a wave or waits
		if !r.waveDone(ctx) {
			return
		}
		if r.st.Bound == boundAll && (r.st.Canary || !hasCanary(r.pol)) {
			r.complete(true)
			return
		}
		r.nextWave()
	}
}

// nextWave starts the next wave: the canary, or the next batch.
func (r *step) nextWave() {
	ranks := r.batchRanks()
	r.st.Waves = int32(Waves(r.pol, len(ranks)))
	r.st.Wave++
	if hasCanary(r.pol) && r.st.Wave == 1 {
		r.st.Canary = true
	} else {
		r.st.PreviousBound = r.st.Bound
		r.st.Bound = r.nextBound(ranks)
	}
	r.st.WaveStarted, r.st.WaveReady, r.st.Failed = r.now(), nil, nil
	r.event("Normal", v1alpha1.ReasonWaveStarted, "wave %d/%d of revision %s: %d parents", r.st.Wave, r.st.Waves, r.st.Target, len(r.wave()))
}

// batchRanks are the ranks of the followers the batches move (all but
// canaries), sorted.
func (r *step) batchRanks() []string {
	var ranks []string
	for _, p := range r.followers {
		if !(hasCanary(r.pol) && r.canary[p]) {
			ranks = append(ranks, Rank(r.Bundle.Name, p.Key))
		}
	}
	slices.Sort(ranks)
	return ranks
}

// nextBound is the bound after the current batch: as many parents moved
// in all as the batches say by now, and at least one more than before
// (parents come and go between waves), or all.
func (r *step) nextBound(ranks []string) string {
	k := int(r.st.Wave)
	if hasCanary(r.pol) {
		k--
	}
	batches := Batches(r.pol, len(ranks))
	if k >= len(batches) {
		return boundAll
	}
	moved := 0
	for moved < len(ranks) && within(ranks[moved], r.st.Bound) {
		moved++
	}
	need := max(batches[k-1]-moved, 1)
	if moved+need >= len(ranks) {
		return boundAll
	}
	return ranks[moved+need-1]
}

// wave is the current wave's parents: the canaries in the canary wave,
// else those the batch moved (ranked above the previous bound).
func (r *step) wave() []*Parent {
	var out []*Parent
	for _, p := range r.followers {
		switch {
		case hasCanary(r.pol) && r.canary[p]:
			if r.st.Canary && r.st.Bound == "" {
				out = append(out, p)
			}
		case r.st.Bound != "":
			rank := Rank(r.Bundle.Name, p.Key)
			if within(rank, r.st.Bound) && !within(rank, r.st.PreviousBound) {
				out = append(out, p)
			}
		}
	}
	return out
}

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

// accepts is Accepts, or true without it.
func (r *step) accepts(p *Parent, rev string) (bool, string) {
	if r.Accepts == nil || rev == "" || p.On(r.Bundle.Name) == rev {
		return true, ""
	}
	return r.Accepts(p, rev)
}

// held are the followers whose values rev refuses.
func (r *step) held(rev string) []v1alpha1.RolloutParent {
	var out []v1alpha1.RolloutParent
	for _, p := range r.followers {
		if ok, why := r.accepts(p, rev); !ok {
			out = append(out, named(p, v1alpha1.ReasonValuesRefused, why))
		}
	}
	slices.SortFunc(out, func(a, b v1alpha1.RolloutParent) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// count counts the followers, those on the revision the rollout brings
// them to (its target, else the stable one) and Ready there, and those
// whose values it refuses; and sums it up.
func (r *step) count() {
	goal := r.st.Target
	if goal == "" {
		goal = r.st.Stable
	}
	var updated, ready int32
	for _, p := range r.followers {
		if p.On(r.Bundle.Name) == goal {
			updated++
			if p.Ready() {
				ready++
			}
		}
	}
	held := r.held(goal)
	r.st.Parents, r.st.Updated, r.st.Ready, r.st.Held = int32(len(r.followers)), updated, ready, int32(len(held))
	r.st.HeldParents = held[:min(len(held), maxHeld)]
	counts := fmt.Sprintf("%d/%d updated, %d ready", updated, len(r.followers), ready)
	if len(held) > 0 {
		counts += fmt.Sprintf(", %d held", len(held))
	}
	switch r.st.Phase {
	case v1alpha1.RolloutComplete:
		r.st.Summary = fmt.Sprintf("%s: %s", goal, counts)
	case v1alpha1.RolloutProgressing:
		r.st.Summary = fmt.Sprintf("wave %d/%d of %s: %s", r.st.Wave, r.st.Waves, goal, counts)
	default:
		r.st.Summary = fmt.Sprintf("%s at wave %d/%d of %s: %s", strings.ToLower(string(r.st.Phase)), r.st.Wave, r.st.Waves, goal, counts)
	}
	if r.st.Phase == v1alpha1.RolloutComplete && len(held) > 0 {
		r.st.Message = fmt.Sprintf("%d parents stay on their revision: %s refuses their values (see heldParents)", len(held), goal)
	}
	if r.st.Phase == v1alpha1.RolloutProgressing && r.out.Requeue == 0 {
		r.requeue(recheck)
	}
}
