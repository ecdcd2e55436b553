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
//
// # The cached parent
//
// A pass reads the parent's recorded inventory (applyset.Recorded: the
// ApplySet annotations as far as status.Inventory confirms them) from the
// cache when it can be trusted with it (Recorded), and live
// otherwise. Trusted: the cached parent is at the resourceVersion this
// process last wrote or read live (a version names one state, and
// anyone's later write is another version); or this process has neither
// written nor read the parent and its cached status is empty. Only the
// controller writes a parent's status, and every status it writes carries
// an inventory record, so an empty status is a parent no stencil process
// recorded anything on as the cache holds it: there is no record for the
// cache to be behind on. Such a pass is Unconfirmed: each write it makes
// of the parent (the metadata apply, the status patch) carries the cached
// resourceVersion as a precondition, so a newer version (a spec updated
// again before the cache saw it, another replica's write before a
// failover) makes it a Conflict, and the next pass of that parent reads
// it live (Unconfirm). So a stale cache never records an
// inventory or a status over a newer version, nor drops an entry of
// another process's record. Members: without the ApplySet metadata the
// metadata write comes first and fails, so nothing of the stale render
// is applied; with the metadata from admission (package admission), the
// stale render's members are named by the annotations, which admission
// only widens. The cache is monotonic, so a pass never renders an older
// spec than an earlier pass of this process; the newer version's event
// brings the pass that applies it (TestLaggingParentCache).
package parent
