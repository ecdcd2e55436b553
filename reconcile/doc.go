// Package reconcile is the only package of stencil that talks to the API
// server: it renders a Composition's Bundle with package templates, applies
// the result with server-side apply, records it as a KEP-3659 ApplySet whose
// parent is the Composition, prunes what is no longer rendered and reports
// status from the readiness of the members.
//
// # Responsibilities
//
//   - NewPlan: render through a Renderer (the controller's is a pool of
//     worker processes, package internal/sandbox, so a render that overruns
//     its deadline or memory stops that render alone), place namespaced
//     objects in the Composition's namespace, refuse what the Bundle's
//     permissions do not allow (another namespace, a cluster-scoped kind:
//     the whole Composition is refused) and two objects that are one once
//     placed, label every member applyset.kubernetes.io/part-of=<id>, sort
//     into apply order. `stencil render` prints a Plan, so what it shows is
//     what is applied.
//   - RenderInput: the one builder of a render's input, for the controller
//     and the CLI alike: the Composition's labels and annotations without
//     the metadata tools write on it, UID and .Release.IsUpgrade from the
//     live Composition (LiveComposition), .Capabilities from discovery
//     (DiscoverCapabilities; the controller keeps them and discovers again
//     when a metadata-only watch sees a CRD or an APIService change, then
//     renders every Composition again) or, offline, the generated list of
//     built-in APIs (OfflineCapabilities, OfflineRESTMapper).
//   - Apply: server-side apply under the constant field manager "stencil"
//     with forced ownership, stage by stage (CRDs, Namespaces, classes, RBAC,
//     ServiceAccounts, ConfigMaps and Secrets, Services, workloads, custom
//     resources, webhooks last), concurrently within a stage. Each apply
//     yields Created, Configured, Reapplied (sent, changed nothing),
//     Unchanged (not sent) or Failed. No write is made when the local
//     server-side apply of the desired object onto the cached live object
//     (structured-merge-diff through managedfields, typed by the kind's
//     schema: see schemas and upToDate) leaves the object and every field
//     set as they are.
//   - ApplySet parent metadata on the Composition: the id label, tooling,
//     contains-group-kinds and additional-namespaces annotations, written by
//     server-side apply and read live, never from the cache.
//   - Prune and deletion, status (kstatus of every member, read from the
//     label-selected cache), events and Prometheus metrics.
//   - Parents of two kinds through one pipeline: a Composition, or an
//     instance of a kind a Bundle publishes (spec.api; an Instance, whose
//     spec is the values and whose knobs come from the Bundle's
//     api.defaults and the instance's stencil.dev/* annotations). Every
//     phase takes the small Parent interface both satisfy; only reading
//     and writing the parent itself (reread, readParent, writeParent,
//     writeStatus) knows the concrete kind. The ApplySet id comes from the
//     parent's own kind and group, as kubectl computes it.
//   - Published kinds (BundleReconciler, kindControllers): the Bundle
//     controller server-side applies the kind's CRD (built and checked by
//     package publish, labelled with its Bundle; a CRD of another Bundle,
//     or not stencil's, is never touched), waits for it to be Established,
//     checks that the controller may serve the kind, and starts a
//     controller for it with its own cache of the kind's instances; the
//     controller stops when the Bundle stops publishing the kind or is
//     deleted. The CRD, and so every instance and their children, is
//     deleted only with the Bundle and only when api.deletionPolicy is
//     Delete (BundleFinalizer holds the Bundle until then).
//   - Sharding (Options.Shard, ShardCacheOptions): the Composition cache
//     holds only the controller's shard (stencil.dev/shard=NAME, or no such
//     label when unsharded), so every way to a pass (the Composition's own
//     watch, a member or a Bundle mapped to its Compositions) stays in the
//     shard, and Reconcile refuses a Composition of another shard besides;
//     the cache of each published kind holds only the shard's instances.
//     All the state of a Composition lives on it and its members, under
//     one field manager, so the shard it moves to continues where the
//     other stopped.
//
// # Workflow of one pass
//
//  1. Deleting: watch every recorded kind, then delete members in reverse
//     apply order, one rank at a time, or orphan them (deletionPolicy:
//     Orphan); then drop the finalizer. Suspended: render and write
//     nothing; Ready=False, reason Suspended, observedGeneration kept at
//     the generation last reconciled.
//  2. Skip: when the Bundle revision, the render inputs and every live
//     member are what the last successful pass saw (passMemo), only
//     recompute the status from the cached members. Otherwise read the
//     recorded applyset.Inventory (see Reads and writes).
//  3. Render. A missing Bundle, a render or values error, or a refused
//     object sets Stalled=True with the file:line or field path; nothing is
//     applied and nothing is pruned; no retry until an input changes.
//  4. Recall: if the last pass with the same inputs (generation, Bundle
//     revision) stalled on a terminal failure, report it again and write
//     nothing.
//  5. Watch every rendered kind, after checking that the controller may
//     list and watch it cluster-wide; check that the Composition's
//     ServiceAccount may create, patch (and, when pruning, delete) each
//     kind where it is rendered. A denial stalls with reason Forbidden
//     before anything is written.
//  6. Refuse to let a render of zero objects prune a set that has members
//     (reason EmptyRender; see Prune safety).
//  7. Widen the recorded group-kinds and namespaces to old ∪ new before any
//     apply, so a crash mid-apply leaves every member findable; the same
//     patch writes the finalizer, the ApplySet id and tooling.
//  8. Apply: pre- hooks first, waited on; then the ordinary members;
//     post- hooks once they are Current. CRDs are waited on until
//     Established before later stages. A member written again and again
//     under the same inputs stalls the Composition (reason Flapping).
//  9. Prune, then shrink the recorded applyset.Inventory to what is left.
//  10. Status: Ready when every member is Current; Reconciling naming the
//     first member in progress; Stalled naming the first that failed.
//     Built from what the pass observed, never seeded from the last
//     status; written once per pass, and only when it changed.
//
// # Errors
//
// A returned error is transient and retried with backoff: a conflict, a
// timeout, a 5xx, a 429, a connection error. What no retry can fix sets
// Stalled=True with a reason naming it (see the Reason constants):
// Forbidden, Invalid, BadRequest, RequestEntityTooLarge, ApplyFailed (an
// object of another ApplySet), EmptyRender, Flapping; the Composition is
// then not written again until its spec or its Bundle changes (Forbidden:
// or a minute passes, since RBAC and quotas change without an event).
//
// # Reads and writes
//
// A pass reads what the caches answer and writes only what changes; what
// each read trusts, and why that is safe:
//
//   - The recorded applyset.Inventory comes from the cached parent when it is at
//     the resourceVersion this process last wrote or read live
//     (recordedParent): a resourceVersion names one state, so that cached
//     object holds every widening stencil made, and anyone else's write
//     shows as another version, read live once. After a restart the first
//     pass of each parent reads it live.
//   - An object the member cache does not hold is applied without forcing
//     ownership and without a read first (applier.create): it nearly always
//     does not exist. If it does (the cache lags, or it was never labelled),
//     a field another manager set to another value, another ApplySet's
//     part-of label among them, is a conflict, and only then is it read
//     live and refused or taken over as before. Left open: of two parents
//     that claim one object within the cache's lag (both through stencil's
//     own field manager, so no conflict), the later takes it over where a
//     read first would have refused it; the earlier then reports it as
//     another ApplySet's member (ApplyFailed), and nothing is pruned.
//   - The prune check lists members from the label-selected member cache
//     for the kinds it watches (cachedPruner). A member the cache lacks yet
//     is not pruned this pass, and the record never loses its kind or
//     namespace because of it: a shrinking of the record is confirmed by a
//     live listing (confirmDrops). A member listed from the cache is
//     deleted only at the resourceVersion listed, so an object changed
//     since (its label removed by hand) is never deleted on stale news.
//   - Deleting a parent lists live: the finalizer goes only once the API
//     server lists no member.
//
// A cold pass thus costs one live read of the parent, one apply per
// member, one write of the parent's ApplySet metadata, one of its status
// and one event (see Events under Tenancy); a pass that finds everything in place writes nothing
// (TestRequestsOfAPass).
//
// # Prune safety
//
// Pruning sits behind one gate (CompositionReconciler.prune): the render
// was complete, every object was applied, the Composition is not suspended
// and spec.prune is not false. Members are listed by the part-of label over
// the recorded group-kinds and namespaces (from the member cache where it
// holds the kind, see Reads and writes). A member is
// deleted only if it was not just applied, is managed by the "stencil" field
// manager (another controller may copy our label onto its objects), is not
// annotated stencil.dev/prune: disabled, and then with a UID precondition,
// so an object recreated under the same name is never deleted. A 404 is
// success; a 409 keeps the group-kind recorded for the next pass. A
// group-kind that cannot be discovered or listed is not pruned and stays
// recorded; one whose CRD is gone is dropped. A kind the controller may not
// list, or a delete the API server forbids, stalls the Composition with
// reason Forbidden.
//
// A render of zero objects is the one complete render that is suspect: a
// condition around every template, values that switch everything off, an
// emptied Bundle. When the set still has members it prunes nothing and
// stalls with reason EmptyRender, unless the Composition or its Bundle is
// annotated stencil.dev/allow-empty-render: "true" (AnnotationAllowEmptyRender).
//
// # Helm hooks
//
// Objects annotated helm.sh/hook (hooks.go, hookrun.go) are planned
// apart: test hooks and delete/rollback hooks are dropped by NewPlan; the
// others sort after every ordinary object. Each revision of the inputs
// (generation and Bundle revision) is an install or an upgrade, fixed in status.hooks when
// its first hook runs; its pre- hooks are applied first, stage by stage
// (weight, then kind) and waited on (Job Complete, Pod Succeeded, else
// kstatus Current) before anything else, its post- hooks once every
// ordinary member is Current. status.hooks records every hook that ran to
// an end, written before a delete policy removes the object, so a hook
// runs once per revision; a failed hook stalls with reason HookFailed.
// Prune spares the hooks the render holds and any hook still running;
// helm.sh/resource-policy: keep orphans an object instead of deleting it,
// on prune and on deletion.
//
// # Admission
//
// With Options.Admission.Enabled, every replica serves a validating
// admission webhook at WebhookPath (admission.go) for the creates and
// updates of Compositions and of the published kinds' instances. It
// renders the new spec through the controller's own path (the Bundle from
// the cache, RenderInput, the sandboxed renderer with its limits, the
// values schema, NewPlan) and refuses, as Invalid, what a pass would
// stall on: invalid values (the field path), a template that fails
// (file:line), an object the Bundle may not create, an instance's invalid
// stencil.dev/* annotation; the message is the one status would carry,
// with no value in it. On a dry run it also dry-run applies every child
// as the parent's ServiceAccount (DryRun) and lists the prune set
// (PruneCandidates), and answers with one warning per changed child
// ("stencil: Deployment/shop: spec.replicas 2 → 3", "created", "would
// be pruned"; a Secret's values never show, nor those of an object not
// yet a member, which the requester may not be allowed to read: "would be
// adopted" and its changed paths), within the API server's
// limits on warnings, the last one saying how many more to see with
// `stencil diff`.
//
// It only reads: a dry-run apply is a read. It allows at once an update
// that leaves the spec and the stencil.dev/* annotations as they were (the
// controller's own finalizer and ApplySet writes among them, and a GitOps
// tool's periodic dry run of an unchanged object: no render, no preview),
// an object being deleted, and any other operation; it allows with a warning when
// the Bundle is not found or does not load, and when the review does not
// finish within AdmissionOptions.Timeout (3 s by default): the controller
// then reports as usual. Its configuration fails open (failurePolicy
// Ignore), so a stopped controller never blocks the API. The entry for
// the published kinds (PublishedWebhookName) is kept by the leader
// (webhookconfig.go): one rule per kind served, sent where the
// Compositions' entry sends its requests, removed when no kind is served.
//
// Serving (serving.go) is the webhook server and its certificate, built
// before the manager: with CertsRotate, cert-controller's rotator, on
// every replica, keeps a CA and a serving certificate in a Secret of the
// controller's namespace (created when missing), renews them and injects
// the CA into every entry of the configuration whenever it changes; the
// controller writes the certificate into the cert folder itself
// (serving_certs.go) and the server starts once it is there and the CA
// is injected (Serving.Ready, AdmissionOptions.Ready). With
// ServingOptions.Host (`make run`, the e2e test) the certificate names
// that host and every entry is pointed at the controller's URL
// (serving_loopback.go), since the Service does not lead to a process on
// the host.
//
// # Watches
//
// Members are watched through the manager's cache, whose default label
// selector keeps only objects carrying the part-of label. An informer is
// started the first time a kind is rendered (ensureWatches), and its events
// map back to the Composition through a field index on the ApplySet id.
// There is no polling for readiness. Each member kind's cache is indexed
// by the part-of label (indexPartOf), and a pass lists its set's members
// through that index: controller-runtime's cache answers a label selector
// by testing every object of the kind in the namespace, which made the
// passes over N Compositions of one namespace cost N².
//
// controller-runtime's cache blocks a read, and an informer's start, until
// the informer has synced, which it never does for a kind the controller
// may not list or watch. So an informer is started only after a
// SelfSubjectAccessReview allows list and watch cluster-wide (answers kept
// for a minute); its sync is awaited for at most 10 seconds; and members of
// a kind whose informer has not synced are read from the API server
// (memberReader). A deletion lists members from the API server and starts
// the watches it waits on, so it needs no earlier pass after a restart.
//
// # Tenancy
//
// With spec.serviceAccountName (or the controller's default), every apply,
// prune and delete of members impersonates that ServiceAccount, so its RBAC
// bounds what a Composition can change. Before applying, a
// SubjectAccessReview per rendered kind and namespace checks that the
// account may create and patch it (and delete it, when pruning), so a
// missing permission is reported up front: Stalled, reason Forbidden,
// naming the verb, the kind and the account. Secret data never appears in
// status, events or logs: apply errors of a Secret keep only the reason,
// the status code and the field paths. Messages name objects and field
// paths, never spec.values.
//
// A Composition cannot hold its finalizer forever through RBAC: on
// deletion, a kind the controller may not list, and a member that may not
// be deleted, is reported with a Warning event and left in place.
//
// Events: a pass records one Applied event for the members it created and
// configured and one Pruned event for those it deleted (events.go), each
// naming them (as many as fit in 1 kB) and their changed field paths,
// never values; a cold converge thus costs one event write, not one per
// member. A failed apply, a hook, a forbidden delete and the Deleted and
// Orphaned events of a deletion keep one event per member, with the member
// as the related object, so they are never folded into one series.
package reconcile

// The rules below are what the controller itself needs. What it may apply
// and prune on behalf of bundles is granted separately, by ClusterRoles
// aggregated into stencil-manager (config/rbac/aggregate.yaml), so a
// cluster admin grants exactly the kinds the installed bundles render.
//
// +kubebuilder:rbac:groups=stencil.dev,resources=compositions;bundles,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=stencil.dev,resources=compositions/status;bundles/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=stencil.dev,resources=compositions/finalizers;bundles/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=selfsubjectaccessreviews;subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=selfsubjectreviews,verbs=create
