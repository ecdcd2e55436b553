// Package lookup is Helm's lookup function for stencil's renders, which
// never read the cluster themselves: a render answers each lookup from
// the objects its caller gave it (Table) and records what it asked and
// what it was answered (Log). The caller, which may read the cluster,
// gives the objects a render asked for and renders again while an
// answer changed (the controller, as the parent's ServiceAccount, from a
// cache; `stencil render --offline` and `bundle lint` never: every
// lookup answers empty, as `helm template` does).
//
// Helm's meaning: lookup APIVERSION KIND NAMESPACE NAME returns the
// object as a map, or an empty map when it does not exist; with NAME ""
// it returns a list, {"apiVersion": "v1", "kind": "List", "items": [...]}
// (of every namespace when NAMESPACE is "" too); a cluster-scoped kind
// takes NAMESPACE "".
//
// Invariants:
//   - A render reads nothing but Table: the same Table gives the same
//     objects.
//   - An object handed to a template is a copy: a template's set never
//     changes what a later lookup answers.
//   - Every lookup is recorded once with the hash of its answer
//     (ValueHash of the object, "" for an empty answer), so a caller can
//     tell a changed answer from the same one without keeping objects.
package lookup
