// Package generated keeps, for each set, the values its templates
// generated (random strings, keys, certificates: package
// templates/generated) in a Secret of the parent's namespace, so that
// every later render of the set gives the same objects.
//
// The Secret (Name) is a member of the set that stencil adds to the plan
// itself (Add): it is applied before anything else of a pass, as the
// parent's ServiceAccount (so the values are kept before an object that
// holds one is written, and a crash never leaves an object holding a
// value the store lacks), recorded in the ApplySet's inventory, read from
// the member cache by the next render (Values), never pruned while the
// set renders, and deleted with the set. It is not listed in the parent's
// status (IsStore: not an ordinary member). Its data keys are digests of
// the calls (templates/generated.Key), never an argument.
//
// Invariants: values are only ever added (a call the templates stop
// making keeps its value, bounded by templates/generated.MaxValues);
// Values reads only a Secret that is this set's member: one the set's
// record (applyset.Record, status.inventory.members) names, never one
// that only carries the set's part-of label and stencil's field manager.
package generated
