// Package reconcile is the pass of one parent (a Composition, or an
// instance of a kind a Bundle publishes): it renders the Bundle, applies
// the result with server-side apply as a KEP-3659 ApplySet whose parent
// it is, prunes what is no longer rendered and reports status from the
// readiness of the members. docs/how-it-works.md draws the house and
// docs/reconcile.md keeps the rationale.
//
// # Map
//
// A Controller (controller.go) is the engine (package engine: what every
// controller shares) plus one kind: the Composition controller
// (SetupWithManager) or one published kind's (ServeKind, kinds.go), each
// with its own parents' cache, member watches (package watch), event
// triggers (package triggers), parent store (package parent), observer
// (package observe) and memos. Reconcile runs one pass as its phases, in
// the order of its table, each in the file of its noun:
//
//	admit            admitted.go  the gate of package authority, first
//	finalize         finalize.go  a parent being deleted (package ownership)
//	suspended        phases.go    a suspended parent: status only
//	allowed, recall, prepare.go   namespace selector, a remembered stall,
//	watch, authorize              member watches, access reviews
//	skipUnchanged,   shortcut.go  the unchanged-pass shortcut
//	snapshot
//	ensureParent,    parent.go    read the parent; widen its inventory
//	widen
//	render           render.go    load the assigned revision, render
//	guardEmptyRender prune.go     an empty render prunes nothing
//	apply            phases.go    crds/, stores, hooks, stages
//	settle           observed.go  values that moved under the render
//	prune            phases.go    the gate and selection of package prune
//	observe          phases.go    members' kstatus
//	status           status.go    the one status write of the pass
//
// fleet.go lists a Bundle's parents for the rollout controller and tells
// it of instances' changes. The wiring of every controller is package
// wiring's.
//
// # Invariants
//
//   - Children are written only with server-side apply under the field
//     manager applyset.FieldManager; a member is deleted only with a UID
//     precondition, and only behind the prune gate (a complete render
//     whose observed values did not move under it, every apply
//     succeeded, not suspended, spec.prune not false) and within the
//     prune budget (no more than the Bundle's share of the set, no
//     protected kind, unless allowed: see prune.go); an object
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
//     alone when that write fails (status.go), and a UID leaves
//     it only once a live listing no longer finds its object
//     (prune.go).
//   - Templates observe only members of their own set that stencil
//     applied (part-of label and the set's record), as the
//     controller's cache holds them: the writer's apply response held
//     the same object. MaxObservedPasses unsettled passes in a row stall
//     the parent (Flapping).
//   - Status is rebuilt every pass from what it observed and written by
//     one merge patch at the end of the pass (status.go), only when it
//     changed; the one other status write is the Helm hook record
//     (hooks.Run persist), made as soon as a hook ends so that a crash
//     never runs it twice.
//   - A returned error is transient (backoff); what no retry can fix sets
//     Stalled=True with a reason of api/v1alpha1 and returns nil.
//   - Secret data and spec.values never appear in status, events or logs.
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
