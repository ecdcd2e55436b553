// Package reconcile is the Composition pass: for each parent (a
// Composition, or an instance of a kind a Bundle publishes) it renders the
// Bundle, applies the result with server-side apply as a KEP-3659
// ApplySet whose parent it is, prunes what is no longer rendered and
// reports status from the readiness of the members. docs/reconcile.md
// keeps the rationale (reads and writes, prune safety, watches, tenancy).
//
// # Map
//
//   - controller.go: Options, SetupWithManager, CompositionReconciler and
//     Reconcile, the table of phases; admitted.go (admit: the gate of
//     package authority before anything is done as the parent's
//     ServiceAccount); parent.go (fetch, read and write the
//     parent: ensureParent, widen; Consent, what lets its set adopt),
//     phases.go (apply, prune, observe,
//     suspended), kinds.go (ServeKind, the pass for a published kind's
//     instances, and the maps from events to parents) hold its other
//     methods.
//   - The pass's collaborators, each built per pass from the reconciler
//     (whose fields, the memos included, they read) and in the file of its
//     verb: shortcut (shortcut.go: the unchanged-pass check),
//     renderer (render.go: load and render, failed renders), preparer (prepare.go: recall a stall, watch,
//     authorize), pruning (prune.go: pruners, the empty-render guard),
//     finalizer (finalize.go: deletion), reporter (status.go: the status
//     patch, stalls).
//   - revisions.go: the revision a pass renders (assign: package
//     rollout decides, package revision holds the content and bounds it
//     by the Bundle's current policy; loadBundle, the render phase's
//     load; LoadFor, the webhook's; RolloutOrder, the key parents are
//     ranked by); fleet.go: a
//     Bundle's parents as the rollout controller lists them
//     (ListParents, the instances' notices), and which of them a change
//     of the Bundle brings a pass of (bundleEvents: a wave moves only its
//     own parents).
//   - metrics.go (phases and outcomes of passes), scheme.go, writers.go
//     (impersonating writers, Options.EffectiveServiceAccount), outputs.go
//     (Updated events when outputs change), preview.go (DryRun
//     and PruneCandidates of a plan), observed.go (observer: the
//     members' observed values templates read, settle, held-back
//     objects).
//
// The reconciler's collaborators are fields of it, each in its package:
// hooks (the Helm hooks runner), watch (member watches and reads), access
// (access reviews), applyset's FlapDetector and metrics' Readiness.
//
// Packages below it: plan (pure: render input, placement, order, hook
// classes), applyset (the ApplySet's metadata, apply, field diffs, the
// pruner, previews, flapping; its nochange the no-change decision), status (members'
// kstatus, conditions, summary, summary events), cluster (served APIs,
// offline mapper, metadata watches), metrics (the Prometheus collectors,
// request counting, the readiness gauge), shard (the shard label, cache
// options, leader election), queue (the work queue whose requests take
// turns by namespace), recall (what the controller remembers between
// passes: the memos, the last pass, the parsed Bundles), lookup (the
// answers to templates' lookups: informers, authorized per parent's
// account, and the parents they bring back), generated (the Secret
// keeping a set's generated values), revision (a Bundle's contents kept
// as BundleRevisions), rollout (which revision each parent renders, and
// the rollouts that move them). Above it, wired by the controller
// command: published (the Bundle controller, the rollout controller and
// published kinds) and admission (the webhook).
//
// # Identity
//
// Whose identity makes each request (writers.go):
//
//	request                                                   identity
//	cache reads and watches; prune's member lists; status     the controller
//	observed values templates read (only members the          the controller's cache
//	writer applied; see observed.go)
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
// (admitted.go): the API server's check of the account's use passed for
// the parent as it stands; otherwise the parent is Stalled (reason
// NotAdmitted), and one being deleted is let go with its members left in
// place.
//
// # Invariants
//
//   - Children are written only with server-side apply under the field
//     manager applyset.FieldManager; a member is deleted only with a UID
//     precondition, and only behind the prune gate (a complete render
//     whose observed values did not move under it, every apply
//     succeeded, not suspended, spec.prune not false) and within the
//     prune budget (no more than the Bundle's share of the set, no
//     protected kind, unless allowed: pruning.withinBudget); an object
//     held back by stencil.dev/wait-for is never pruned for it.
//   - A pass renders the revision its parent is assigned (its pin, or its
//     Bundle's rollout's choice), never simply the Bundle's spec.
//   - Membership is the controller's record (applyset.Record,
//     status.Inventory.members: the UIDs stencil created or applied),
//     never the part-of label or the field managers alone, which anyone
//     who may patch an object can write: every apply over an existing
//     object, prune, deletion, orphaning, hook replacement, read of
//     generated values, observed value and member shown in status asks
//     applyset.Owns with it. The record is written with the status, or
//     alone when that write fails (reporter.keepRecord), and a UID leaves
//     it only once a live listing no longer finds its object
//     (pruning.confirmDrops).
//   - Templates observe only members of their own set that stencil
//     applied (part-of label and the set's record), as the
//     controller's cache holds them: the writer's apply response held
//     the same object. MaxObservedPasses unsettled passes in a row stall
//     the parent (Flapping).
//   - Status is rebuilt every pass from what it observed and written by
//     one merge patch at the end of the pass (patchStatus), only when it
//     changed; the one other status write is the Helm hook record
//     (hooks.Run persist), made as soon as a hook ends so that a crash
//     never runs it twice.
//   - A returned error is transient (backoff); what no retry can fix sets
//     Stalled=True with a reason of api/v1alpha1 and returns nil.
//   - Secret data and spec.values never appear in status, events or logs.
//
// # The cached parent
//
// A pass reads the parent's recorded inventory (applyset.Recorded: the
// ApplySet annotations as far as status.Inventory confirms them) from the
// cache when it can be trusted with it (cacheTrusted), and live
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
// it live (unconfirmedVersion). So a stale cache never records an
// inventory or a status over a newer version, nor drops an entry of
// another process's record. Members: without the ApplySet metadata the
// metadata write comes first and fails, so nothing of the stale render
// is applied; with the metadata from admission (package admission), the
// stale render's members are named by the annotations, which admission
// only widens. The cache is monotonic, so a pass never renders an older
// spec than an earlier pass of this process; the newer version's event
// brings the pass that applies it (TestLaggingParentCache).
package reconcile

// The rules below are what the controller itself needs. What it may apply
// and prune on behalf of bundles is granted separately, by ClusterRoles
// aggregated into stencil-manager (config/rbac/aggregate.yaml), so a
// cluster admin grants exactly the kinds the installed bundles render.
//
// +kubebuilder:rbac:groups=stencil.dev,resources=compositions;bundles,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=stencil.dev,resources=compositions/status;bundles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=stencil.dev,resources=compositions/finalizers;bundles/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=selfsubjectaccessreviews;subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=selfsubjectreviews,verbs=create
