// Package parent reads and writes a set's parent (a Composition, or an
// instance of a published kind): the ApplySet metadata stencil keeps on it
// (the id label, the tooling and inventory annotations, the finalizer),
// the record of its members, and its status. A Store is one
// controller's; it remembers the resourceVersion each parent was last
// written or read live at, which decides whether a pass may trust the
// cached parent (Recorded).
//
// Invariants:
//   - The inventory a pass acts on is what stencil recorded
//     (applyset.Recorded): annotations added by hand beyond the record
//     are ignored, with a Warning event, and dropped on the next write.
//   - A cached parent is trusted only at the version this process last
//     wrote or read live, or when it holds no status at all; then the
//     pass is unconfirmed and its writes carry the parent's
//     resourceVersion as a precondition, so a lagging cache costs a
//     conflict and a live read, never a lost record.
//   - The finalizer is removed by a JSON patch that tests the entry it
//     removes, so no other finalizer is ever dropped.
package parent
