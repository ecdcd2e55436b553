// Package lookup answers the lookups of a parent's render (Helm's lookup
// function, package templates/lookup) from the cluster, as the parent's
// ServiceAccount may read it, and tells the parent's controller when an
// object one of its renders looked up changes.
//
//   - Who: each lookup is authorized for the identity the parent's
//     members are written as (its ServiceAccount, with access reviews the
//     controller makes and remembers for a while: package access; the
//     controller itself only under --write-as-controller): get for an
//     object, list for a list. A lookup the identity may not make answers
//     empty, as it would in Helm for an account that may not read (the
//     parent's status says so: Denied).
//   - From where: informers of the kinds looked up, one per kind and
//     namespace (cluster-wide for a cluster-scoped kind, or a list of
//     every namespace), started on the first lookup and kept while the
//     process runs; the controller must be allowed to list and watch the
//     kind (else the lookup answers empty, Denied). A lookup costs no
//     request once its informer has synced: a pass that changes nothing
//     re-reads its answers from the informers.
//   - Triggers: every object event of an informer brings the parents
//     whose last render looked it up (or listed its kind there) back
//     through the queue their controller bound (Bind).
//
// Invariants: an answer is a copy (no template changes the informer's
// object) without managedFields; no answer reaches a render that the
// identity could not have read itself.
package lookup
