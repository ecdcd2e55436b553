package prune

import (
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
)

// Gate is what a pass knows, after its applies, that decides whether it
// may prune at all: a pass prunes only after a render applied in full,
// with nothing failed, from values that did not move under it, of a
// parent neither suspended nor set not to prune.
type Gate struct {
	// Suspended: the parent's spec.suspend.
	Suspended bool
	// Failed: an apply of this pass failed.
	Failed bool
	// Partial: not every ordinary object of the render (not a hook, nor a
	// store of generated values) was applied.
	Partial bool
	// Moved: the render read observed values or lookups that moved under
	// it, so it is not the set's final render.
	Moved bool
	// Disabled: the parent's spec.prune is false.
	Disabled bool
}

// Closed returns why the gate keeps the pass from pruning, "" when it is
// open.
func (g Gate) Closed() string {
	var why []string
	for _, c := range []struct {
		closed bool
		reason string
	}{
		{g.Suspended, "suspended"}, {g.Failed, "an apply failed"}, {g.Partial, "the render was not applied in full"},
		{g.Moved, "values moved under the render"}, {g.Disabled, "spec.prune is false"},
	} {
		if c.closed {
			why = append(why, c.reason)
		}
	}
	return strings.Join(why, ", ")
}

// Set is what Select needs to know of the set being pruned.
type Set struct {
	// ID is the set's ApplySet id.
	ID string
	// Record is the set's record of members (status.inventory.members).
	Record *applyset.Record
	// Applied holds the UIDs of the members this pass applied.
	Applied map[types.UID]bool
	// HeldBack reports whether the render holds m back until a value it
	// waits for is observed: kept as it is.
	HeldBack func(m applyset.Member) bool
	// Spared holds the UIDs of the hooks to leave alone (SpareHook).
	Spared map[types.UID]bool
}

// Selection is what becomes of each member a prune listing found.
type Selection struct {
	// Delete are the members to delete: the set's, not applied this pass.
	Delete []applyset.Member
	// Orphan are the members to orphan, not delete
	// (helm.sh/resource-policy: keep); they stay recorded this pass.
	Orphan []applyset.Member
	// Keep are the members left alone that stay recorded: held back,
	// spared hooks, and members the set may not prune that it did not
	// apply this pass.
	Keep []applyset.Member
}

// Select sorts the listed members of set: a pure function of the
// listing, the record and what the pass applied.
func Select(listed []applyset.Member, set Set) Selection {
	var sel Selection
	for _, m := range listed {
		switch {
		case set.HeldBack != nil && set.HeldBack(m), set.Spared[m.Meta.UID]:
			sel.Keep = append(sel.Keep, m)
		case !applyset.Prunable(m, set.Applied, set.ID, set.Record):
			if !set.Applied[m.Meta.UID] {
				sel.Keep = append(sel.Keep, m)
			}
		case plan.Kept(&m.Meta):
			sel.Orphan = append(sel.Orphan, m)
		default:
			sel.Delete = append(sel.Delete, m)
		}
	}
	return sel
}

// Applied returns the UIDs of the objects a pass applied.
func Applied(results []applyset.ApplyResult) map[types.UID]bool {
	out := make(map[types.UID]bool, len(results))
	for _, res := range results {
		out[res.UID] = true
	}
	return out
}
