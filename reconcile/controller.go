package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/authority"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/lookup"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/observe"
	"github.com/stencil-dev/stencil/reconcile/parent"
	"github.com/stencil-dev/stencil/reconcile/queue"
	"github.com/stencil-dev/stencil/reconcile/shard"
	"github.com/stencil-dev/stencil/reconcile/triggers"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	"github.com/stencil-dev/stencil/reconcile/watch"

	"github.com/stencil-dev/stencil/reconcile/status"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/recall"
	"github.com/stencil-dev/stencil/reconcile/rollout"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// Controller reconciles the parents of one kind: Compositions, or the
// instances of one published kind (see ServeKind). It is the engine,
// shared by every controller, plus what is the kind's own: the cache its
// parents are read from, the watches of its members and the memos of its
// parents' passes. Made by newController only.
type Controller struct {
	*engine.Engine

	// kind is the published kind served, nil for Compositions; parents is
	// the cache its parents are read from: the manager's for
	// Compositions, the kind's own otherwise (see ServeKind).
	kind    *engine.Kind
	parents cache.Cache
	// watches are the member kinds' watches, feeding this controller;
	// triggers map events to its parents' requests.
	watches  *watch.Watcher
	triggers *triggers.Triggers
	// failedRenders keeps renders that failed, so they are not run again
	// until an input changes.
	failedRenders recall.Memo[failedRender]
	// generated keeps, by parent UID, the generated values this process
	// last wrote to each set's stores (see kept).
	generated recall.Memo[map[string]string]
	// stalls keeps terminal failures, so a parent that failed for good is
	// not written again until its inputs change.
	stalls recall.Memo[stall]
	// flaps keeps the recent writes of members, to find one that flaps.
	flaps applyset.FlapDetector
	// passes keeps what the last successful pass saw, so a pass that
	// could change nothing only recomputes status (see recall.Pass).
	passes recall.Memo[*recall.Pass]
	// store reads and writes the parents, and keeps the resourceVersion
	// each was last written or read live at (package parent).
	store *parent.Store
	// observer gives renders the observed values of the members, and
	// keeps what each parent's last render read (package observe).
	observer *observe.Observer
}

// newController returns the controller of kind's parents (nil:
// Compositions), read from parents, on e; not yet bound to a
// controller-runtime controller.
func newController(e *engine.Engine, kind *engine.Kind, parents cache.Cache) *Controller {
	w := watch.New(e.Cache, e.APIReader, e.Mapper, e.Access)
	r := &Controller{Engine: e, kind: kind, parents: parents, watches: w,
		store:    &parent.Store{Client: e.Client, Live: e.APIReader, Mapper: e.Mapper, Recorder: e.Recorder, Tooling: e.Options.Version},
		observer: &observe.Observer{Watches: w, Lookups: e.Lookups, Renderer: e.Renderer, Mapper: e.Mapper, Live: e.APIReader, Recorder: e.Recorder}}
	r.triggers = &triggers.Triggers{Parents: parents, Kind: kind, Engine: e, Fetch: func(ctx context.Context, key types.NamespacedName) (applyset.Parent, error) {
		p, _, err := r.fetch(ctx, key)
		return p, err
	}}
	return r
}

// SetupWithManager registers the Composition controller on e's manager,
// with its indexes, and returns it.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, e *engine.Engine) (*Controller, error) {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.Composition{}, triggers.IndexBundle, func(o client.Object) []string {
		return []string{o.(*v1alpha1.Composition).Spec.Bundle}
	}); err != nil {
		return nil, fmt.Errorf("index Compositions by bundle: %w", err)
	}
	if err := idx.IndexField(ctx, &v1alpha1.Composition{}, triggers.IndexApplySetID, func(o client.Object) []string {
		return []string{applyset.ID(o.GetName(), o.GetNamespace(), applyset.CompositionGroupKind)}
	}); err != nil {
		return nil, fmt.Errorf("index Compositions by ApplySet id: %w", err)
	}
	r := newController(e, nil, e.Cache)
	c, err := builder.ControllerManagedBy(mgr).
		For(&v1alpha1.Composition{}, builder.WithPredicates(triggers.ParentPredicates())).
		Watches(&v1alpha1.Bundle{}, r.triggers.BundleEvents()).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.triggers.InNamespace), builder.WithPredicates(triggers.LabelsChanged())).
		WatchesRawSource(source.Channel(e.APIs.Subscribe(ctx), handler.EnqueueRequestsFromMapFunc(r.triggers.All))).
		WatchesRawSource(source.Channel(e.Authority.SubscribeKind(ctx, authority.CompositionsResource), handler.EnqueueRequestsFromMapFunc(r.triggers.All))).
		WatchesRawSource(r.lookupSource()).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(e.Options.MaxConcurrentReconciles, 1), NewQueue: newQueue}).
		Named("composition").
		Build(r)
	if err != nil {
		return nil, fmt.Errorf("build the Composition controller: %w", err)
	}
	r.watches.Bind(c, handler.EnqueueRequestsFromMapFunc(r.triggers.MemberOf))
	e.Serve(applyset.CompositionGroupKind, r)
	return r, nil
}

// newQueue builds the Composition controller's work queue: requests take
// turns by namespace (see package queue). Benchmarks set it to nil, for
// controller-runtime's default, to compare.
var newQueue = queue.ByNamespace

// scope is the state of one reconcile pass.
type scope struct {
	comp   applyset.Parent
	status v1alpha1.CompositionStatus
	writer client.Client
	parent parent.State
	plan   *plan.Plan
	// upgrade is .Release.IsUpgrade of this pass's render, taken before
	// widen records the pass's kinds: hooks run as the templates saw it.
	upgrade bool
	results []applyset.ApplyResult
	// events collects what the pass changed, for its summary events.
	events status.Events
	// renderKey identifies the inputs of the render (see renderKey).
	renderKey string
	// snapshot is what this pass saw before applying, kept for the next
	// pass if this one succeeds (see recall.Pass).
	snapshot *recall.Pass
	// outputs are the Bundle's compiled outputs and readiness rules.
	outputs *outputs.Set
	// observed is what the render read of the members' observed values
	// and held back; rerender names the values that moved under it
	// (see observer); stale names the answers to lookups that an outside
	// change moved under a pass that changed nothing (see settle).
	observed *recall.Observed
	rerender []string
	stale    []string
	// lookedUp is what the pass's last render looked up, failed or not.
	lookedUp observe.LookedUp
	// stores are the set's stores of generated values, as the render
	// read them and placed its values (nil: its Bundle generates none).
	stores *valuestore.Stores
	// done ends the pass after the current phase, with status already set.
	done bool
	// admission is what admit decided of the parent's ServiceAccount.
	admission admission
	// assignment is the revision the pass renders, and why: its
	// RevisionHeld condition.
	assignment *rollout.Assignment
	// unchanged and deleting classify the pass for the metrics (see outcome);
	// phases adds up its time per phase.
	unchanged, deleting bool
	phases              metrics.PhaseTimer
}

type phase func(ctx context.Context, s *scope) (ctrl.Result, error)

// Reconcile brings one Composition's members to what its Bundle renders.
// A suspended Composition is only observed (see suspended); one whose
// inputs and members are what its last successful pass saw only has its
// status recomputed (see skipUnchanged).
// A returned error is transient and retried with backoff; user errors
// (render, validation, refused objects), objects the API server rejects,
// missing RBAC, an empty render of a set with members and a flapping
// member set Stalled and return nil, so the Composition waits for its spec
// or its Bundle to change (missing RBAC: or a minute; see engine.ForbiddenRecheck).
// A parent with no ServiceAccount to write as (none named, no
// Options.DefaultServiceAccount, no Options.WriteAsController) is Stalled
// (reason NoServiceAccount) before anything, its deletion included; one in
// a namespace its Bundle's spec.namespaceSelector does not select is
// Stalled (reason NotAllowed) before it renders (see allowed).
func (r *Controller) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
	if o := r.Options.Observer; o != nil {
		kind := r.parentGVK().GroupKind()
		o.PassStarted(kind, req.NamespacedName)
		defer func() { o.PassEnded(kind, req.NamespacedName, err) }()
	}
	comp, specErr, err := r.fetch(ctx, req.NamespacedName)
	if err != nil || comp == nil {
		if err == nil || apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// The cache holds only this shard's Compositions; this guards a
	// manager whose cache was built without the shard's selector, so
	// another shard's Composition is never applied, pruned or finalized.
	if !shard.Serves(r.Options.Shard, comp.GetLabels()) {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	// Status is rebuilt from what this pass observes. bundleRevision is the
	// revision last rendered (valuesMigrations, the values migrations that
	// render applied; notes, its notes): a pass that renders nothing keeps them.
	s := &scope{comp: comp, status: v1alpha1.CompositionStatus{
		ObservedGeneration: comp.GetGeneration(),
		BundleRevision:     comp.ParentStatus().BundleRevision,
		ValuesMigrations:   comp.ParentStatus().ValuesMigrations, // those of the revision last rendered
		Notes:              comp.ParentStatus().Notes,            // those of the render last made
		Lookups:            comp.ParentStatus().Lookups,          // what the render last made looked up
		LookupsOmitted:     comp.ParentStatus().LookupsOmitted,
		Hooks:              comp.ParentStatus().Hooks.DeepCopy(),                   // the record of hooks run persists from pass to pass
		Outputs:            comp.ParentStatus().Outputs,                            // a pass that observes nothing keeps them
		Admission:          authority.Carried(*comp.ParentStatus(), r.kind == nil), // every status written has a record
	}, phases: metrics.PhaseTimer{}}
	s.events.FirstPass = parent.NeverReconciled(comp) // see status.Events
	defer func() {
		s.phases.Time(metrics.PhaseStatus, func() { err = errors.Join(err, r.patchStatus(ctx, s)) })
		s.phases.Observe()
		metrics.Passes.WithLabelValues(outcome(s, err)).Inc()
	}()

	return r.pass(ctx, s, specErr)
}

// pass runs pass s: the gates every pass goes through first (a spec it
// cannot read, no identity to write as, not admitted), then a deletion,
// a suspended parent, or the phases in their order (see phases).
func (r *Controller) pass(ctx context.Context, s *scope, specErr error) (ctrl.Result, error) {
	comp := s.comp
	if specErr != nil && comp.GetDeletionTimestamp().IsZero() {
		r.stall(s, v1alpha1.ReasonInvalid, specErr.Error())
		return ctrl.Result{}, nil
	}
	var err error
	if s.writer, err = r.WriterFor(comp); errors.Is(err, engine.ErrNoIdentity) {
		r.stall(s, v1alpha1.ReasonNoServiceAccount, err.Error())
		return ctrl.Result{}, nil
	} else if err != nil {
		return r.transient(s, err)
	}
	if done, res, err := r.admit(ctx, s); done || err != nil {
		if err != nil {
			return r.transient(s, err)
		}
		return res, nil
	}
	if !comp.GetDeletionTimestamp().IsZero() {
		s.deleting = true
		return r.finalize(ctx, s)
	}
	if comp.ParentSpec().Suspend {
		return r.suspended(ctx, s)
	}
	for _, p := range r.phases() {
		var res ctrl.Result
		s.phases.Time(p.metric, func() { res, err = p.run(ctx, s) })
		if err != nil {
			r.observeMembers(ctx, s)
			return r.transient(s, err)
		}
		if s.done || !res.IsZero() {
			r.observeMembers(ctx, s)
			return res, nil
		}
	}
	if r.keepSnapshot(ctx, s) {
		r.passes.Put(client.ObjectKeyFromObject(comp), "", s.snapshot)
	}
	return ctrl.Result{}, nil
}

// namedPhase is one phase of the pass, with the phase it is timed as
// (stencil_reconcile_phase_duration_seconds).
type namedPhase struct {
	metric string
	run    phase
}

// phases is the pass, read top to bottom: each phase may end it (s.done,
// a requeue, an error), and the status is written after whichever ran
// last (Reconcile's deferred patchStatus).
func (r *Controller) phases() []namedPhase {
	return []namedPhase{
		{metrics.PhasePrepare, r.allowed},        // the Bundle's namespaceSelector
		{metrics.PhaseShortcut, r.skipUnchanged}, // nothing changed: status only
		{metrics.PhaseParent, r.ensureParent},    // the recorded inventory and members
		{metrics.PhaseRender, r.render},          // load the assigned revision, render the plan
		{metrics.PhasePrepare, r.recall},         // a terminal failure of these inputs
		{metrics.PhasePrepare, r.watch},          // watch the rendered kinds
		{metrics.PhasePrepare, r.authorize},      // may the account do it all
		{metrics.PhasePrepare, r.snapshot},       // what the members are before the apply
		{metrics.PhasePrepare, r.guardEmptyRender},
		{metrics.PhaseParent, r.widen}, // record old ∪ new before any apply
		{metrics.PhaseApply, r.apply},  // crds/, stores, hooks, stages
		{metrics.PhaseApply, r.settle}, // values that moved under the render
		{metrics.PhasePrune, r.prune},  // behind prune.Gate, prune.Select
		{metrics.PhaseStatus, r.observe},
	}
}

// lookupSource brings back, through the controller's queue, the parents
// whose last render looked up an object that changed (package lookup).
func (r *Controller) lookupSource() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) error {
		r.Lookups.Bind(r.parentGVK().GroupKind(), q)
		return nil
	})
}

// forget drops what the reconciler remembers of a Composition that is gone
// or has left this shard.
func (r *Controller) forget(key types.NamespacedName) {
	r.Lookups.Forget(lookup.Parent{Kind: r.parentGVK().GroupKind(), Key: key})
	r.Readiness.Forget(metrics.ParentKey{Kind: r.parentGVK().GroupKind(), NamespacedName: key})
	r.failedRenders.Forget(key)
	r.generated.Forget(key)
	r.stalls.Forget(key)
	r.flaps.Forget(key)
	r.passes.Forget(key)
	r.store.Forget(key)
	r.observer.Forget(key)
}
