// Package ownership is the owner reference members carry to their
// parent, past the apply that writes it: taking it off before the
// parent goes, and pacing the writes that add it to existing sets.
//
// A member in its parent's namespace carries an ownerReference to the
// parent (apiVersion, kind, name and uid of the Composition or of the
// published kind's instance), planned by package plan and written by the
// member's server-side apply under stencil's field manager (package
// applyset settles its controller bit against the live object). It is
// what Argo CD, kubectl tree, Headlamp and Lens nest resources by. It also
// hands the member to Kubernetes' garbage collector, which deletes
// dependents whose owner is gone; stencil's finalizer holds the parent
// until its deletionPolicy is carried out, and this package makes sure
// the collector then finds nothing stencil's policy keeps:
//
//   - release.go: Release takes the parent's reference off a member (a
//     JSON patch whose tests name the member's uid and the reference's
//     place, so a member changed since it was listed is never written),
//     and with Orphan the part-of label too. The pass calls it, before the
//     finalizer is dropped, for every member it does not delete: orphaned
//     (deletionPolicy Orphan, helm.sh/resource-policy: keep), annotated
//     stencil.dev/prune: disabled, whose delete is forbidden, or of a
//     suspended parent; and on prune for a member it orphans.
//   - pacer.go: Pacer, the token bucket every controller's applies share
//     for the writes whose only change is adding the reference: an
//     existing set gains its references once, one apply per member,
//     spread over time (engine.Options.ReferenceQPS).
//
// Invariants: the reference is never set with blockOwnerDeletion (it
// would need the writer, the tenant's ServiceAccount, to hold update on
// the parent's finalizers subresource under the
// OwnerReferencesPermissionEnforcement admission plugin); no member in
// another namespace and no cluster-scoped member carries one (Kubernetes
// forbids such owners); a member annotated helm.sh/resource-policy: keep
// or stencil.dev/prune: disabled is planned without one.
package ownership
