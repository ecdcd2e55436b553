package rollout

import (
	"context"
	"fmt"
	"slices"
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
	// Order ranks them (the controller's: see OrderKey).
	Order Order
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
	r.st.WaveStarted, r.st.WaveReady, r.st.Failed, r.st.FailedTenants, r.st.Message = nil, nil, nil, nil, ""
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

// complete ends the rollout: its target becomes the stable revision
// (done), or the Bundle went back to the stable one (!done). The
// failures it tolerated stay in its status (failed, failedTenants) until
// the next rollout starts.
func (r *step) complete(done bool) {
	if done {
		r.st.Stable = r.st.Target
		if r.pol.Strategy == v1alpha1.RolloutWaves {
			r.event("Normal", v1alpha1.ReasonRolloutComplete, "revision %s is rolled out: every parent that follows the Bundle is on it", r.st.Target)
		}
	}
	r.st.Target, r.st.Phase = "", v1alpha1.RolloutComplete
	r.st.Canary, r.st.Bound, r.st.PreviousBound = false, "", ""
	// The tolerated failures stay named until the next rollout starts.
	r.st.WaveStarted, r.st.WaveReady, r.st.Message = nil, nil, ""
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
			r.st.Phase, r.st.Failed, r.st.FailedTenants = v1alpha1.RolloutProgressing, nil, nil
			r.st.WaveStarted, r.st.WaveReady = r.now(), nil
		}
	}
	// A promote waits for a paused rollout to be resumed.
	if v := ann[v1alpha1.AnnotationRolloutPromote]; v != "" && v != r.st.Promoted && !r.pol.Paused {
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
	r.st.WaveStarted, r.st.WaveReady = r.now(), nil
	r.event("Normal", v1alpha1.ReasonWaveStarted, "wave %d/%d of revision %s: %d parents", r.st.Wave, r.st.Waves, r.st.Target, len(r.wave()))
}

// batchRanks are the ranks of the followers the batches move (all but
// canaries), sorted.
func (r *step) batchRanks() []string {
	var ranks []string
	for _, p := range r.followers {
		if !hasCanary(r.pol) || !r.canary[p] {
			ranks = append(ranks, r.Order.Rank(r.Bundle.Name, p.Key))
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
			rank := r.Order.Rank(r.Bundle.Name, p.Key)
			if within(rank, r.st.Bound) && !within(rank, r.st.PreviousBound) {
				out = append(out, p)
			}
		}
	}
	return out
}
