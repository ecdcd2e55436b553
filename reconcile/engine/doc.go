// Package engine is what every controller of parents shares, built once
// per manager (New) and handed to each, as controller-runtime hands around
// its cluster.Cluster: the manager's clients and caches, the Bundle and
// chart loader with its revisions (load.go: Assign, LoadAssigned, LoadFor,
// LoadRevision), the renderer, the writers (one impersonating client per
// ServiceAccount: writers.go), the served APIs, the access check, the
// lookups, the generated values' keys, stencil's admission policy and the
// rollouts' order; and the fleet of controllers serving parents, by kind
// (fleet.go: ListParents for the rollout controller). It keeps no state of
// any one parent: a controller's memos, cache and watches are its own
// (package reconcile).
//
// # Identity
//
// Whose identity makes each request (Engine.WriterFor):
//
//	request                                                   identity
//	cache reads and watches; prune's member lists; status     the controller
//	observed values templates read (only the members          the controller's cache
//	the writer applied; see package observe)
//	templates' lookups (answered only when a                  the controller's informers (package lookup)
//	SubjectAccessReview of the parent's account allows)
//	the store of generated values (a member)                  the parent's ServiceAccount
//	member apply (and its dry run), prune, hook steps,        the parent's ServiceAccount
//	finalize deletes and orphaning
//	live reads of members the cache does not hold, and of     the parent's ServiceAccount
//	hooks (consent to adoption is read on these)
//	access reviews (package access, admission)                the controller
//	the parent's status, finalizer and ApplySet metadata      the controller (or, on create and on a
//	                                                          render change, admission's patch of the
//	                                                          requester's own write: package admission)
//	events                                                    the controller
//	stencil's admission policy, its bindings, its parameters  the controller (package authority)
//
// The parent's ServiceAccount is spec.serviceAccountName, else
// Options.DefaultServiceAccount, of the parent's namespace. Only
// Options.WriteAsController makes the writes of a parent naming none the
// controller's own; with neither, the parent is Stalled (reason
// NoServiceAccount) and nothing is written: the zero Options never write
// as the controller. Nothing is read, written, pruned or deleted as a
// parent's ServiceAccount until package authority's Judge admits it
// (the pass's admit): the API server's check of the account's use passed for
// the parent as it stands; otherwise the parent is Stalled (reason
// NotAdmitted), and one being deleted is let go with its members left in
// place.
//
// Invariants:
//   - The zero Options never write as the controller (ErrNoIdentity).
//   - A revision is loaded only if its content hashes to the revision it
//     names, and within its Bundle's current permissions and crds policy
//     (revision.Within): what the author removed binds every revision.
//   - A review (the admission webhook) loads only from this process's
//     chart cache: it never waits on a registry.
package engine
