// Package prune decides what a pass deletes of its set: the gate that
// keeps a pass from pruning at all, and, over the members a listing of
// the recorded inventory found, the selection of those to delete, to
// orphan and to keep recorded (Flux's inventory and prune shape: a pure
// function from what is recorded and what was applied to what goes).
// The deletes themselves, the prune budget and the live confirmation of
// a shrinking record are the pass's (package reconcile), which calls it.
//
// Invariants:
//   - Select is pure: it reads nothing and writes nothing; the live reads
//     it needs (a hook still running) are made before, by SpareHook.
//   - Only a member of the set (applyset.Prunable: its part-of label
//     and the set's record agree), not applied this pass, is ever
//     selected for deletion; a member held back, a hook spared or a
//     member kept by helm.sh/resource-policy stays recorded.
//   - Candidates, which `stencil diff` and the admission webhook's dry
//     runs show, selects exactly as a pass would.
package prune
