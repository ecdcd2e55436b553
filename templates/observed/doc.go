// Package observed owns what a render reads of the state its caller
// observed: a template may read the observed state of its own set's
// members (a Service's spec.clusterIP, a member's status field) with the
// function observed (Log.Func), and an object may wait for such a value
// with the annotation AnnotationWaitFor (Log.HoldBack). What a member
// is, and whose cache the values come from, is the caller's (the
// controller gives only members of the set its writer applied); this
// package only reads the render's Input.Observed and records what it
// read, with its lookups (package lookup) and what its generators made
// (package generators), as Observations. docs/templates.md ("Observed
// values") is the reference.
//
// # Invariants
//
//   - A member is addressed by its id (MemberID: its AnnotationID, else
//     Kind/name); a member or field not observed reads as nil.
//   - Every read is recorded once, with ValueHash of what it read, and
//     Observations lists them sorted: the same reads give the same
//     Observations.
//   - A template gets a copy of what it reads: what it sets on it never
//     changes what a later read sees.
//   - A held-back object is not among the render's objects; it is listed
//     in Observations.Held with the references not observed yet.
//
// # Example
//
//	l := observed.NewLog(in.Observed, in.Lookups, in.Generated, in.GeneratedKey)
//	ip, _ := l.Func("Service/web", "spec.clusterIP") // nil until observed
//	objs, held, err := l.HoldBack(objs)
//	obs := l.Observations(held)
package observed
