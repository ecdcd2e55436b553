package recall

import (
	"github.com/stencil-dev/stencil/templates/lookup"
	"github.com/stencil-dev/stencil/templates/observed"
)

// Observed is what the controller keeps, per parent and under the
// parent's inputs (its UID, generation and Bundle revision), of the
// observed values its last render used: which members the reads resolved
// to, so the next render is given them at once, and how many passes in a
// row ended with a value the render used already changed (Unsettled),
// which bounds a chain of re-renders (reconcile's MaxObservedPasses).
type Observed struct {
	// Reads are what the render read (templates.Observations.Reads).
	Reads []observed.ObservedRead
	// Members are the members the read ids resolved to, by id.
	Members map[string]MemberKey
	// Held are the objects the render held back.
	Held []observed.HeldObject
	// Unsettled counts the passes in a row that ended with a value the
	// render used changed since it read it.
	Unsettled int
	// Lookups are what the render looked up, with the hash of each
	// answer (templates.Observations.Lookups).
	Lookups []lookup.Read
	// Denied are the lookups the parent's identity may not make (answered
	// empty), as reconcile/lookup names them: a change of them is told
	// with an event.
	Denied []string
}
