// Package generated keeps, for each set, the values its templates
// generated (random strings, keys, certificates: package
// templates/generators) in Secrets placed where the values end up, so
// that every later render of the set gives the same objects and no
// value is less protected than the objects that hold it.
//
// Responsibilities:
//
//   - Placement (Place). After a render, each value is looked for in the
//     rendered objects (every piece of it: its strings, a PEM block's body
//     lines; as rendered, in base64 such as a Secret's data or a caBundle,
//     and after a YAML block scalar's indentation). It is kept in a store
//     of each namespace whose objects hold all of it (Name, a member of
//     the set written as the parent's ServiceAccount, in its inventory),
//     and otherwise (found only in cluster-scoped objects, split across
//     namespaces, hashed, unused, shorter than MinPiece) in the store of
//     the controller's own namespace (ControllerName), which only the
//     controller reads and writes: the key of a CA behind a webhook's
//     caBundle never reaches a tenant's namespace.
//   - Keys (Keys, Key). A store's keys are HMACs keyed with the set's own
//     key (Key.ForSet), derived from the controller's key, a Secret of
//     its namespace (KeySecretName) made on first use and shared by every
//     replica and shard. Every store records the ID of the key its keys
//     were made with; a store made with another (the Secret made again or
//     replaced) stalls its set (KeyError), so no value is ever made anew
//     in place of one a store keeps.
//   - Reading (Read). A pass's render is given the values of every store
//     of the set (those of the parent's and the recorded namespaces, read
//     from the member cache or as the parent's writer; the controller's,
//     read as the controller), and only of stores that are the set's
//     members (applyset.Owns).
//   - Writing (Stores.Apply). The stores are written before anything that
//     may hold a value: first each gains what it is to gain, keeping what
//     it loses, then each loses what is kept elsewhere now, so a value
//     moving between stores is never held by none, whichever write fails.
//   - Migration. A store written before (in the parent's namespace, keys
//     the bare SHA-256 of the calls, no key recorded) is read too: a call
//     finds its value under the legacy key (templates/generators), and the
//     value moves to its keyed digest and its destinations; a legacy
//     value no call makes any more moves, under its legacy key, to the
//     controller's store.
//
// Lifecycle: a store of a namespace is a member like any other: never
// pruned while it keeps values, pruned (not counted against the prune
// budget) once emptied, deleted (or orphaned) with the set as the
// parent's writer. The controller's store is no member of the parent's
// inventory (its namespace is not the tenant's to list or write): it is
// deleted by the controller when it keeps nothing, and when the set is
// finalized (under either deletion policy; a suspended parent's
// deletion leaves it, as it leaves the members). Stores are not listed
// in the parent's status (IsStore).
//
// Invariants: values are only ever added (a call the templates stop
// making keeps its value, bounded by templates/generators.MaxValues);
// every value a store held is kept by some store after every pass.
//
// A store of a namespace is read only when it is this set's member: one
// the set's record (applyset.Record, status.inventory.members) names,
// never one that only carries the set's part-of label and stencil's field
// manager. The store of the controller's namespace, where only the
// controller and cluster admins write Secrets, is the set's by its label.
package valuestore
