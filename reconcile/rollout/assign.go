package rollout

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/revision"
)

// Current is the name of b's current revision (its content now): the
// revision its status records for its current generation, "" when it
// has none (it does not load, or the Bundle controller has not looked at
// this generation yet: its parents stay where they are meanwhile).
func Current(b *v1alpha1.Bundle) string {
	if b.Status.Revision == "" || b.Status.ObservedGeneration != b.Generation {
		return ""
	}
	return revision.Name(b.Name, b.Status.Revision)
}

// Find returns the rollout of shard in b's status, nil when there is none.
func Find(b *v1alpha1.Bundle, shard string) *v1alpha1.RolloutStatus {
	for i := range b.Status.Rollouts {
		if b.Status.Rollouts[i].Shard == shard {
			return &b.Status.Rollouts[i]
		}
	}
	return nil
}

// Selected reports whether rollout st has moved the parent k of Bundle
// bundle to its target: a rollout under way (not rolled back) whose
// batches reached the parent's rank in o, or whose canary wave began and
// the parent is a canary.
func Selected(st *v1alpha1.RolloutStatus, o Order, bundle string, k Key, canary bool) bool {
	if st == nil || st.Target == "" || st.Phase == v1alpha1.RolloutRolledBack {
		return false
	}
	if st.Canary && canary {
		return true
	}
	return within(o.Rank(bundle, k), st.Bound)
}

// Assignment is the revision a parent renders, and why.
type Assignment struct {
	// Revision is the BundleRevision (its name) to render; "" for the
	// Bundle's own spec, when the Bundle has no revision recorded yet.
	Revision string
	// Current reports that Revision is the Bundle's current content: the
	// Bundle itself is rendered, no BundleRevision is read.
	Current bool
	// NotFound reports a pin of a revision that does not exist (Revision
	// names it): nothing is rendered.
	NotFound bool
	// Refused reports that Revision refuses the parent's values and the
	// parent may not stay where it is (see Assign, 3): it stalls (reason
	// ValuesRefused, Message naming the values and the revision) and
	// nothing is rendered.
	Refused bool
	// Reason and Message say why: one of v1alpha1's reasons of
	// RevisionHeld (Pinned, ValuesRefused, PinRefused), RevisionNotFound,
	// or, for a parent that follows the rollout, ReasonFollowing,
	// ReasonWaitingForWave or ReasonRolloutStopped.
	Reason, Message string
}

// Reasons of an Assignment that follows the rollout: no condition says
// them (see Condition).
const (
	// ReasonFollowing: on the revision the rollout assigns, the Bundle's
	// current one.
	ReasonFollowing = "Following"
	// ReasonWaitingForWave: the rollout has not reached the parent yet
	// (or a rollout it superseded moved it).
	ReasonWaitingForWave = "WaitingForWave"
	// ReasonRolloutStopped: the rollout halted or rolled back.
	ReasonRolloutStopped = "RolloutStopped"
)

// Inputs are what Assign decides on.
type Inputs struct {
	Bundle *v1alpha1.Bundle
	// Shard is the shard of the controller (whose rollout applies).
	Shard string
	Key   Key
	// Order ranks the parents (the controller's: see OrderKey).
	Order Order
	// Pin is the revision the parent pins, "" when none.
	Pin string
	// On is the revision the parent's last render was, "" when none.
	On string
	// Canary reports whether the Bundle's canary selects the parent.
	Canary bool
	// Known returns the number of a recorded revision of the Bundle.
	Known func(name string) (number int64, ok bool)
	// Accepts reports whether the revision takes the parent's values,
	// and why not; nil takes every value. Assign asks it only when the
	// parent would move. Values a revision's values migrations make
	// valid are taken (templates.MergeValues): the parent moves and
	// renders them migrated; why not names the migrations tried.
	Accepts func(name string) (bool, string)
}

// Assign decides the revision a parent renders (see docs/bundles.md,
// Revisions and rollouts):
//
//  1. A pin the Bundle allows (pinning not disallowed, the revision not
//     withdrawn) is rendered as it is; a pin of a revision the Bundle
//     does not have is NotFound. A pin the Bundle refuses is ignored:
//     the parent follows (PinRefused).
//  2. A parent that follows renders the rollout's target once the rollout
//     selected it, else the stable revision. While a rollout is under way
//     (not rolled back), a parent on a revision newer than the stable one
//     (a rollout this one superseded moved it there) stays on it until
//     this one reaches it.
//  3. A parent whose values the revision it would move to refuses is
//     Refused: it stalls, naming the values and the revision. Only where
//     the Bundle allows holding (spec.revisions.holding: Allowed) does it
//     stay on the revision it is on (ValuesRefused), if that one takes
//     them and is not withdrawn.
//  4. A withdrawn revision is never a parent's to stay on or move to: the
//     stable one is rendered instead, or the current one if the stable
//     one is withdrawn.
//  5. Without a rollout record (a Bundle its rollout controller has not
//     seen yet), the Bundle's current content is rendered, as before
//     revisions.
func Assign(in Inputs) Assignment {
	b := in.Bundle
	current := Current(b)
	refused := ""
	if in.Pin != "" {
		switch {
		case !revision.PinningAllowed(b):
			refused = fmt.Sprintf("Bundle %s disallows pinning (spec.revisions.pinning): the pin of %s is ignored", b.Name, in.Pin)
		case revision.Withdrawn(b, in.Pin):
			refused = fmt.Sprintf("revision %s is withdrawn (Bundle %s's spec.revisions.withdrawn): the pin is ignored", in.Pin, b.Name)
		case in.Pin == current || known(in, in.Pin):
			// The message names no other revision: a pinned parent's
			// status does not change with its Bundle.
			return Assignment{Revision: in.Pin, Current: in.Pin == current, Reason: v1alpha1.ReasonPinned,
				Message: fmt.Sprintf("pinned to revision %s", in.Pin)}
		default:
			return Assignment{Revision: in.Pin, NotFound: true, Reason: v1alpha1.ReasonRevisionNotFound,
				Message: fmt.Sprintf("pinned to revision %s, which Bundle %s does not have (kubectl get bundlerevisions -l %s=%s): nothing is rendered", in.Pin, b.Name, v1alpha1.LabelBundle, b.Name)}
		}
	}
	a := follow(in, current)
	if refused != "" {
		a.Reason, a.Message = v1alpha1.ReasonPinRefused, refused+"; "+a.Message
	}
	return a
}

// follow is Assign for a parent that follows its Bundle.
func follow(in Inputs, current string) Assignment {
	b := in.Bundle
	st := Find(b, in.Shard)
	if st == nil || st.Stable == "" {
		return Assignment{Revision: current, Current: true, Reason: ReasonFollowing, Message: "follows the Bundle"}
	}
	want, why := st.Stable, ""
	switch {
	case Selected(st, in.Order, b.Name, in.Key, in.Canary):
		want = st.Target
	case st.Target != "" && st.Phase != v1alpha1.RolloutRolledBack && newer(in, in.On, st.Stable) && in.On != st.Target:
		want, why = in.On, fmt.Sprintf("stays on revision %s, where a rollout that was superseded moved it, until the rollout of %s reaches it", in.On, st.Target)
	}
	if revision.Withdrawn(b, want) {
		switch {
		case want != st.Stable && !revision.Withdrawn(b, st.Stable):
			want = st.Stable
		case current != "":
			want = current
		default:
			want = st.Stable
		}
	}
	if want != in.On && in.On != "" && in.Accepts != nil {
		if ok, msg := in.Accepts(want); !ok {
			return refused(in, current, want, msg)
		}
	}
	// The messages name no wave and no count: a parent's status does not
	// change while a rollout moves others (see Placement).
	a := Assignment{Revision: want, Current: want == current, Reason: ReasonFollowing, Message: "follows the Bundle"}
	switch {
	case a.Current:
	case why != "":
		a.Reason, a.Message = ReasonWaitingForWave, why
	case st.Phase == v1alpha1.RolloutHalted || st.Phase == v1alpha1.RolloutRolledBack:
		a.Reason, a.Message = ReasonRolloutStopped, fmt.Sprintf("on revision %s: the rollout of %s stopped (%s; see Bundle %s's status)", want, st.Target, st.Phase, b.Name)
	case current != "":
		a.Reason, a.Message = ReasonWaitingForWave, fmt.Sprintf("on revision %s until the rollout of %s reaches it", want, current)
	default:
		a.Message = fmt.Sprintf("on revision %s: Bundle %s's current content has no revision (it does not load, or is not looked at yet; see its Ready condition)", want, b.Name)
	}
	return a
}

// refused is the assignment of a parent whose values revision want
// refuses (why): held on the revision it is on where the Bundle allows
// it and that one takes them, else Refused.
func refused(in Inputs, current, want, why string) Assignment {
	b := in.Bundle
	if !revision.HoldingAllowed(b) {
		return Assignment{Revision: want, Current: want == current, Refused: true, Reason: v1alpha1.ReasonValuesRefused,
			Message: fmt.Sprintf("revision %s refuses its values: %s; Bundle %s keeps no parent on an earlier revision (spec.revisions.holding is not Allowed): nothing is rendered, applied or pruned until the values or the Bundle change", want, why, b.Name)}
	}
	if stayable(in, in.On) {
		if ok, _ := in.Accepts(in.On); ok {
			return Assignment{Revision: in.On, Current: in.On == current, Reason: v1alpha1.ReasonValuesRefused,
				Message: fmt.Sprintf("stays on revision %s: revision %s refuses its values: %s", in.On, want, why)}
		}
	}
	return Assignment{Revision: want, Current: want == current, Refused: true, Reason: v1alpha1.ReasonValuesRefused,
		Message: fmt.Sprintf("revision %s refuses its values: %s; revision %s, which it is on, cannot hold it (withdrawn, or refusing them too): nothing is rendered, applied or pruned until the values or the Bundle change", want, why, in.On)}
}

// known reports a recorded revision.
func known(in Inputs, name string) bool {
	if in.Known == nil {
		return false
	}
	_, ok := in.Known(name)
	return ok
}

// newer reports whether revision a is recorded and newer than b.
func newer(in Inputs, a, b string) bool {
	if a == "" || in.Known == nil {
		return false
	}
	na, ok := in.Known(a)
	if !ok {
		return false
	}
	nb, ok := in.Known(b)
	return !ok || na > nb
}

// stayable reports whether a parent may stay on revision name: recorded
// (or the current one) and not withdrawn.
func stayable(in Inputs, name string) bool {
	return (name == Current(in.Bundle) || known(in, name)) && !revision.Withdrawn(in.Bundle, name)
}

// Condition is a's RevisionHeld condition for generation, nil when the
// parent follows the rollout (see v1alpha1.ConditionRevisionHeld).
func (a Assignment) Condition(generation int64) *metav1.Condition {
	c := &metav1.Condition{Type: v1alpha1.ConditionRevisionHeld, Status: metav1.ConditionTrue, Reason: a.Reason,
		Message: a.Message, ObservedGeneration: generation}
	if a.Refused {
		return nil // not held: Stalled says it
	}
	switch a.Reason {
	case v1alpha1.ReasonPinned, v1alpha1.ReasonValuesRefused:
		return c
	case v1alpha1.ReasonPinRefused:
		c.Status = metav1.ConditionFalse
		return c
	}
	return nil
}

// Placement is what a parent's assignment depends on in b's rollout of
// shard (its parents ranked by o), but for its own pin, values and revision: the rollout's target
// once it moved the parent, else the stable revision. A change of a
// Bundle's rollout brings a pass only of the parents whose Placement
// changed: a wave moves its own parents, a rollback those it moved, and
// the rest of the Bundle's parents are not looked at (their status does
// not change either: see Assignment.Condition).
func Placement(b *v1alpha1.Bundle, o Order, shard string, k Key, canary bool) string {
	st := Find(b, shard)
	switch {
	case st == nil:
		return ""
	case Selected(st, o, b.Name, k, canary):
		return st.Target
	}
	return st.Stable
}
