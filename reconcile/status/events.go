package status

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// noteLimit bounds the note of a summary event: the API server refuses an
// events.k8s.io note over 1 kB.
const noteLimit = 1000

// A pass records what it changed as one event per phase, not one per
// member: a cold converge of a 5-member Composition then costs one event
// write instead of five. A refused or failed member, a hook, a Forbidden
// delete keep an event of their own, naming the member as the related
// object.
//
// The events.k8s.io recorder folds events with the same regarding,
// related, type, reason and action into one series, keeping the first
// note, whatever the later ones say; the regarding reference carries the
// Composition's resourceVersion, which a pass that changes no status
// leaves as it was. So a summary's related object is the first member it
// names, at the resourceVersion this pass's write gave it (applies) or
// with its UID (prunes): no two passes write a member to the same
// resourceVersion or delete the same UID, so two summaries never fold and
// each keeps its own note.

// Events collects the members a pass created, configured and pruned,
// for its summary events.
type Events struct {
	// FirstPass is set for the first pass of a parent (its status is
	// empty): what it created alone makes no Applied event, since the
	// status's own transition to Ready, with its members, says it and a
	// cold converge then costs no event write. Anything configured (an
	// existing object adopted, changed) is recorded as on any other pass.
	FirstPass bool
	applied   []changed
	pruned    []changed
	repaired  []changed
	// firstApplied, firstPruned and firstRepaired are the related objects
	// of the summaries.
	firstApplied, firstPruned, firstRepaired *metav1.PartialObjectMetadata
}

// changed is one member in a summary: its reference, what happened to it
// and, for a configured member, the field paths that changed (never values).
type changed struct {
	ref, action string
	fields      []string
}

// Apply adds an apply result that created or configured a member.
func (e *Events) Apply(res applyset.ApplyResult) {
	c := changed{ref: applyset.Ref(res.Object), action: "created"}
	if res.Action == applyset.Configured {
		c.action, c.fields = "configured", res.Changed
	}
	if e.firstApplied == nil {
		e.firstApplied = res.Related()
		if res.Live != nil {
			e.firstApplied.ResourceVersion = res.Live.GetResourceVersion()
		}
	}
	e.applied = append(e.applied, c)
}

// Repair adds an apply result that undid other field managers' changes
// (res.Drift): its fields, each with the manager that changed it.
func (e *Events) Repair(res applyset.ApplyResult) {
	if len(res.Drift) == 0 {
		return
	}
	c := changed{ref: applyset.Ref(res.Object), action: "repaired"}
	for _, a := range res.Drift {
		for _, p := range a.Paths {
			c.fields = append(c.fields, p+" changed by "+a.Manager+" ("+a.Operation+")")
		}
	}
	if e.firstRepaired == nil {
		e.firstRepaired = res.Related()
		if res.Live != nil {
			e.firstRepaired.ResourceVersion = res.Live.GetResourceVersion()
		}
	}
	e.repaired = append(e.repaired, c)
}

// RecordRepaired records on parent the pass's DriftRepaired summary (a
// Warning: someone changed a member stencil manages), if it repaired
// anything, and forgets it.
func (e *Events) RecordRepaired(rec events.EventRecorder, parent runtime.Object) {
	if len(e.repaired) > 0 {
		rec.Eventf(parent, e.firstRepaired, "Warning", v1alpha1.ReasonDriftRepaired, "Apply", "%s", changeNote(e.repaired))
	}
	e.repaired, e.firstRepaired = nil, nil
}

// Prune adds a deleted member.
func (e *Events) Prune(m applyset.Member) {
	if e.firstPruned == nil {
		e.firstPruned = m.Related()
	}
	e.pruned = append(e.pruned, changed{ref: m.Ref(), action: "pruned"})
}

// changeNote is the note of a summary event: the count of each action,
// then the members, each with its action and changed fields, as many as
// fit within noteLimit bytes, then how many more there are. For example
// "created 2, configured 1: ConfigMap/ns/a created, Secret/ns/b created,
// Deployment/ns/web configured (spec.replicas)".
func changeNote(items []changed) string {
	var actions []string
	n := map[string]int{}
	for _, c := range items {
		if n[c.action] == 0 {
			actions = append(actions, c.action)
		}
		n[c.action]++
	}
	var b strings.Builder
	for i, a := range actions {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", a, n[a])
	}
	b.WriteString(": ")
	reserve := len(fmt.Sprintf(", … (+%d more)", len(items)))
	for i, c := range items {
		sep := ""
		if i > 0 {
			sep = ", "
		}
		item := sep + c.ref + " " + c.action
		if len(c.fields) > 0 {
			item += " (" + strings.Join(c.fields, ", ") + ")"
		}
		if i == len(items)-1 {
			reserve = 0
		}
		if b.Len()+len(item)+reserve > noteLimit {
			fmt.Fprintf(&b, "%s… (+%d more)", sep, len(items)-i)
			break
		}
		b.WriteString(item)
	}
	return b.String()
}

// RecordApplied records on parent the pass's Applied summary, if it
// created or configured anything (on a FirstPass, if it configured
// anything), and forgets it.
func (e *Events) RecordApplied(rec events.EventRecorder, parent runtime.Object) {
	if len(e.applied) > 0 && !(e.FirstPass && !slices.ContainsFunc(e.applied, func(c changed) bool { return c.action != "created" })) {
		rec.Eventf(parent, e.firstApplied, "Normal", v1alpha1.ReasonApplied, "Apply", "%s", changeNote(e.applied))
	}
	e.applied, e.firstApplied = nil, nil
}

// RecordPruned records on parent the pass's Pruned summary, if it deleted
// anything, and forgets it. The members are named in order (they are
// listed in no particular one).
func (e *Events) RecordPruned(rec events.EventRecorder, parent runtime.Object) {
	if len(e.pruned) > 0 {
		slices.SortFunc(e.pruned, func(a, b changed) int { return strings.Compare(a.ref, b.ref) })
		rec.Eventf(parent, e.firstPruned, "Normal", v1alpha1.ReasonPruned, "Prune", "%s", changeNote(e.pruned))
	}
	e.pruned, e.firstPruned = nil, nil
}
