// Package authority owns the check that whoever creates or changes a
// parent (a Composition, or an instance of a kind a Bundle publishes) may
// use the ServiceAccount the parent is written as, and the controller's
// proof that the check passed before it acts as that account.
//
// # The check is the API server's
//
// stencil's ValidatingAdmissionPolicy (Policy, PolicyName) refuses a
// create, and an update that changes the spec, the labels or the
// annotations (but the ApplySet's own), unless the requester may
// impersonate the parent's ServiceAccount or create pods in its namespace
// (CEL's authorizer, as Kubernetes treats the use of an account). It also
// refuses any such change once the parent is being deleted (what finalize
// uses is fixed when deletion starts), an instance of a kind no Bundle
// publishes, invalid stencil.dev/* annotations, a parent whose account
// cannot be told (no controller serves its shard yet), and any write of a
// parent's status by a requester who may not update its parameters
// (stencil's controllers, and cluster admins: the proof reads the
// status, so no tenant may write it). It runs in
// the API server, before any webhook, whatever the controller's state: no
// webhook, no window while the controller restarts or a kind is
// published again.
//
// Its bindings say what it checks: CompositionBinding (installed by
// config/ with the CRDs, and kept by the controller) and one KindBinding
// per published kind, made by the Bundle controller (Kinds.Claim) before
// the kind's CRD exists, owned by the CRD, and never removed while it
// exists. The controller writes them by name only (RBAC resourceNames):
// the policy and CompositionBinding through config/rbac, a KindBinding
// through its kind's ClusterRole (publish.ClusterRoles); a write that
// role does not grant is a *BindingForbiddenError. Its parameters are the
// ConfigMap ParamsName of the controller's
// namespace (params.go): each shard's default ServiceAccount (Keeper) and
// each published kind's Bundle and default ServiceAccount (Kinds).
// Missing parameters refuse.
//
// # The controller's proof (Judge)
//
// A check the API server makes leaves no trace on the object, so the
// controller proves it from what it can read: the check's identity (the
// uids of the policy and the binding, Coverage.ID), its epoch (when they
// were created, or the default ServiceAccount the parent uses last
// changed), and the parent's creation time, generation and labels and
// annotations. A parent created a margin after the epoch was checked at
// its creation and at every change since; one that predates the epoch
// gets a record in status.admission (written only over the parent as
// read, and only a margin after the epoch) and is admitted by its next
// change; a DELETE is no such change (the policy checks no delete, though
// it bumps the generation of an object with finalizers once).
// Compositions an earlier stencil reconciled, whose webhook checked them
// failing closed, are admitted once: only those created before the
// policy was first installed (the parameters' InstalledKey) whose status
// holds a render's bundleRevision and no record (EarlierStencil), which
// this controller never writes (every status of its carries a record,
// Carried); the published kinds' instances are not, since that webhook
// had windows.
//
// Invariant: the controller never reads, applies, prunes or deletes as a
// parent's ServiceAccount unless Judge admits it; a parent being deleted
// that cannot be admitted any more is let go with its members left in
// place.
//
// Example:
//
//	cov, _ := watcher.Coverage(ctx, authority.CompositionsResource)
//	v := authority.Judge(cov, authority.Parent{Account: "deployer", ...}, margin, time.Now())
//	if !v.Admitted {
//		// Stalled, reason NotAdmitted: v.Message
//	}
package authority
