package rollout

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/revision"
)

// What a rollout counts: the parents on its revision, Ready there, and
// held back by their values.

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
	r.event("Warning", v1alpha1.ReasonValuesIncompatible, "revision %s refuses the values of %d parents, which %s: %s%s",
		target, len(held), heldFate(r.Bundle), strings.Join(names, ", "), more)
}

// heldFate says what becomes of the parents whose values a revision of b
// refuses (see Assign).
func heldFate(b *v1alpha1.Bundle) string {
	if revision.HoldingAllowed(b) {
		return "stay on their revision (spec.revisions.holding: Allowed)"
	}
	return "stall until their values change (spec.revisions.holding is not Allowed)"
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
		r.st.Message = fmt.Sprintf("%s refuses the values of %d parents, which %s (see heldParents)", goal, len(held), heldFate(r.Bundle))
	}
	if r.st.Phase == v1alpha1.RolloutProgressing && r.out.Requeue == 0 {
		r.requeue(recheck)
	}
}
