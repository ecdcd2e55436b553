package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/reconcile/access"
	"github.com/stencil-dev/stencil/reconcile/authority"
	"github.com/stencil-dev/stencil/reconcile/hooks"
	"github.com/stencil-dev/stencil/reconcile/lookup"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/queue"
	"github.com/stencil-dev/stencil/reconcile/shard"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	"github.com/stencil-dev/stencil/reconcile/watch"

	"github.com/stencil-dev/stencil/reconcile/status"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/pull"
	"github.com/stencil-dev/stencil/reconcile/recall"
	"github.com/stencil-dev/stencil/reconcile/rollout"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	chartsource "github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/templates"
	tlookup "github.com/stencil-dev/stencil/templates/lookup"
)

// Options configure the controllers.
type Options struct {
	// Version is stencil's version, written into the ApplySet tooling annotation.
	Version string
	// DefaultServiceAccount is the ServiceAccount, of each parent's own
	// namespace, that the writes of a parent naming none impersonate
	// (`stencil controller` sets "stencil"). Every member apply, prune,
	// hook step, finalize delete and live read of a member is made as
	// system:serviceaccount:<parent namespace>:<spec.serviceAccountName,
	// else this>, so the tenant's RBAC bounds what a parent can do.
	// Exclusive with WriteAsController.
	DefaultServiceAccount string
	// WriteAsController makes the writes of a parent that names no
	// ServiceAccount the controller's own, bounded only by the controller's
	// (aggregated, cluster-wide) RBAC: a cluster admin's explicit choice.
	// False, the zero value, with no DefaultServiceAccount, stalls such a
	// parent (reason NoServiceAccount) and writes nothing: the zero
	// Options never write as the controller.
	WriteAsController bool
	// MaxConcurrentReconciles bounds how many Compositions reconcile at once.
	MaxConcurrentReconciles int
	// ApplyConcurrency bounds how many objects of one stage are applied at once.
	ApplyConcurrency int
	// Shard, when set, is the shard this controller serves: it reconciles
	// only the Compositions labelled stencil.dev/shard=Shard, and an
	// unsharded controller only those without the label. The manager's
	// cache must be built with shard.CacheOptions(Shard).
	Shard string
	// Renderer renders bundles; required. The controller command hands
	// in a pool of worker processes (package internal/sandbox) that bounds
	// every render's time and memory, and stops it with the manager.
	Renderer plan.Renderer
	// EveryReplica keeps what the admission webhook reads (the served
	// APIs, for .Capabilities) up to date on every replica, not only the
	// leader: set it when the webhook is served (package admission).
	EveryReplica bool
	// Namespace is the controller's own namespace: the only one the
	// Secrets a Bundle's spec.source names are read from (package pull),
	// and where the parameters of stencil's admission policy are
	// (package authority). "" is DefaultNamespace.
	Namespace string
	// AdmissionMargin is how long a change of stencil's admission policy,
	// of a binding or of a default ServiceAccount may take to apply in
	// every API server (policies refresh every second; add clock skew
	// between the controller and the API servers): a parent created or
	// changed within it of such a change is not taken as checked by it.
	// Zero is DefaultAdmissionMargin.
	AdmissionMargin time.Duration
	// SourcePolicy is where the pulls of Bundles' spec.source may go
	// (package source): its zero value refuses loopback, private and
	// link-local addresses and redirects to other hosts; the cluster
	// admin widens it (--allow-private-registries,
	// --allow-source-redirects). A Bundle cannot.
	SourcePolicy chartsource.Policy
	// Observer, when not nil, is told of every pass as it starts and
	// ends: for tests and benchmarks, which wait for a pass rather than
	// for its writes (a pass over a converged set writes nothing).
	Observer PassObserver
}

// PassObserver is told of the passes of the controllers' parents. Its
// methods are called on the controllers' workers, one pass of a parent at
// a time: they must be quick and safe for concurrent use.
type PassObserver interface {
	// PassStarted is called before a pass of parent key, of kind, reads
	// anything.
	PassStarted(kind schema.GroupKind, key types.NamespacedName)
	// PassEnded is called once that pass has written the parent's status,
	// with the pass's error.
	PassEnded(kind schema.GroupKind, key types.NamespacedName, err error)
}

// DefaultNamespace is Options.Namespace's default, the install's
// (config/).
const DefaultNamespace = "stencil-system"

// Field indexes on Compositions.
const (
	indexBundle     = "spec.bundle"
	indexApplySetID = "applyset.id"
)

// CompositionReconciler reconciles Compositions: render, apply, prune, status.
type CompositionReconciler struct {
	// Client is the manager's client: typed reads from the cache, writes to the API server.
	Client client.Client
	// APIReader reads from the API server, bypassing the cache.
	APIReader client.Reader
	// Cache holds Compositions, Bundles and the label-selected members.
	Cache cache.Cache
	// Mapper maps kinds to resources; it rediscovers on a miss.
	Mapper meta.RESTMapper
	// Config is the manager's rest config, the base of impersonating clients.
	Config *rest.Config
	// Scheme knows stencil's and the built-in types.
	Scheme *runtime.Scheme
	// Recorder records events on Compositions.
	Recorder events.EventRecorder
	// Options are the controller's options.
	Options Options

	// watches are the member kinds' watches, feeding this controller.
	watches *watch.Watcher
	access  *access.Checker
	// hooks runs the Helm hooks of passes.
	hooks   *hooks.Runner
	bundles *recall.Bundles
	// sources gives Bundles with a source their pulled chart's files.
	sources  *pull.Puller
	renderer plan.Renderer
	// capabilities are what the cluster serves, for .Capabilities.
	capabilities *cluster.Capabilities
	// failedRenders keeps renders that failed, so they are not run again
	// until an input changes.
	failedRenders recall.Memo[failedRender]
	// generated keeps, by parent UID, the generated values this process
	// last wrote to each set's stores (see renderer.kept).
	generated recall.Memo[map[string]string]
	// keys holds the controller's key for generated values (package
	// generated), shared by the reconcilers of every kind.
	keys    *valuestore.Keys
	writers *writerCache
	// readiness feeds stencil_compositions for the parents of every kind.
	readiness *metrics.Readiness
	// kind is the published kind this reconciler serves, nil for
	// Compositions; parents is the cache its parents are read from: the
	// manager's for Compositions, the kind's own otherwise (see
	// kindControllers).
	kind    *Kind
	parents cache.Cache
	// stalls keeps terminal failures, so a Composition that failed for
	// good is not written again until its inputs change.
	stalls recall.Memo[stall]
	// flaps keeps the recent writes of members, to find one that flaps.
	flaps applyset.FlapDetector
	// schemas type members for the local apply that skips needless writes.
	schemas *applyset.Schemas
	// passes keeps what the last successful pass saw, so a pass that
	// could change nothing only recomputes status (see recall.Pass).
	passes recall.Memo[*recall.Pass]
	// parentVersions keeps the resourceVersion of each parent as this
	// process last wrote or read it live (see recordedParent).
	parentVersions recall.Memo[string]
	// observed keeps the observed values each parent's last render used
	// (see observer).
	observed recall.Memo[*recall.Observed]
	// authority holds stencil's admission policy as the API server has it
	// (see admit); keeper keeps it and this shard's default ServiceAccount
	// in its parameters.
	authority *authority.Watcher
	keeper    *authority.Keeper
	// lookups answers the lookups of renders (package lookup).
	lookups *lookup.Server
	// served holds the reconcilers of the published kinds served, by
	// kind (shared with them; see ListParents), and notifier tells the
	// rollout controller of their instances' changes.
	served   *sync.Map
	notifier *rollout.Notifier
	// order keeps the key the rollouts rank parents by (shared with the
	// rollout controller: RolloutOrder).
	order *rollout.OrderKey
}

// SetupWithManager registers the Composition controller and its indexes,
// and returns its reconciler, which the published kinds' controllers
// (package published) and the admission webhook (package admission)
// reconcile and render through.
func SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts Options) (*CompositionReconciler, error) {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.Composition{}, indexBundle, func(o client.Object) []string {
		return []string{o.(*v1alpha1.Composition).Spec.Bundle}
	}); err != nil {
		return nil, fmt.Errorf("index Compositions by bundle: %w", err)
	}
	if err := idx.IndexField(ctx, &v1alpha1.Composition{}, indexApplySetID, func(o client.Object) []string {
		return []string{applyset.ID(o.GetName(), o.GetNamespace(), applyset.CompositionGroupKind)}
	}); err != nil {
		return nil, fmt.Errorf("index Compositions by ApplySet id: %w", err)
	}
	r, err := newCompositionReconciler(mgr, opts)
	if err != nil {
		return nil, err
	}
	c, err := builder.ControllerManagedBy(mgr).
		For(&v1alpha1.Composition{}, builder.WithPredicates(parentPredicates())).
		Watches(&v1alpha1.Bundle{}, r.bundleEvents()).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.parentsInNamespace), builder.WithPredicates(labelsChanged())).
		WatchesRawSource(source.Channel(r.capabilities.Subscribe(ctx), handler.EnqueueRequestsFromMapFunc(r.allParents))).
		WatchesRawSource(source.Channel(r.authority.SubscribeKind(ctx, authority.CompositionsResource), handler.EnqueueRequestsFromMapFunc(r.allParents))).
		WatchesRawSource(r.lookupSource()).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.MaxConcurrentReconciles, 1), NewQueue: newQueue}).
		Named("composition").
		Build(r)
	if err != nil {
		return nil, fmt.Errorf("build the Composition controller: %w", err)
	}
	r.watches.Bind(c, handler.EnqueueRequestsFromMapFunc(r.parentOf))
	return r, nil
}

// newQueue builds the Composition controller's work queue: requests take
// turns by namespace (see package queue). Benchmarks set it to nil, for
// controller-runtime's default, to compare.
var newQueue = queue.ByNamespace

// newCompositionReconciler returns the Composition reconciler of mgr, not
// yet bound to its controller.
func newCompositionReconciler(mgr ctrl.Manager, opts Options) (*CompositionReconciler, error) {
	if opts.Renderer == nil {
		return nil, errors.New("reconcile: Options.Renderer is required")
	}
	if opts.WriteAsController && opts.DefaultServiceAccount != "" {
		return nil, errors.New("reconcile: Options.WriteAsController and Options.DefaultServiceAccount are exclusive")
	}
	renderer := opts.Renderer
	caps, err := cluster.NewManagerCapabilities(mgr, opts.EveryReplica)
	if err != nil {
		return nil, err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	schemas, err := applyset.NewSchemas(disco.OpenAPIV3())
	if err != nil {
		return nil, err
	}
	if opts.AdmissionMargin == 0 {
		opts.AdmissionMargin = DefaultAdmissionMargin
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
	watcher, err := authority.NewWatcher(mgr.GetConfig(), mgr.GetScheme(), opts.Namespace)
	if err != nil {
		return nil, err
	}
	account := opts.DefaultServiceAccount
	keeper := &authority.Keeper{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Watcher: watcher, Namespace: opts.Namespace,
		Shard: opts.Shard, Account: account, Margin: opts.AdmissionMargin}
	checker := access.NewChecker(mgr.GetClient())
	checker.DefaultAccount = opts.DefaultServiceAccount
	dc, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	recorder := mgr.GetEventRecorder("stencil")
	r := &CompositionReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Cache:     mgr.GetCache(),
		Mapper:    mgr.GetRESTMapper(),
		Config:    mgr.GetConfig(),
		Scheme:    mgr.GetScheme(),
		Recorder:  recorder,
		Options:   opts,
		bundles:   &recall.Bundles{},
		sources:   &pull.Puller{Reader: mgr.GetAPIReader(), Namespace: opts.Namespace, Cache: chartsource.NewCache(0), Policy: opts.SourcePolicy},
		renderer:  renderer,
		access:    checker,
		hooks:     &hooks.Runner{Live: mgr.GetAPIReader(), Client: mgr.GetClient(), Recorder: recorder},
		watches:   watch.New(mgr.GetCache(), mgr.GetAPIReader(), mgr.GetRESTMapper(), checker),

		capabilities: caps,
		schemas:      schemas,
		writers:      &writerCache{},
		readiness:    &metrics.Readiness{},
		parents:      mgr.GetCache(),
		authority:    watcher,
		keeper:       keeper,
		lookups:      lookup.New(dc, mgr.GetRESTMapper(), checker),
		served:       &sync.Map{},
		keys:         &valuestore.Keys{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: opts.Namespace},
		order:        &rollout.OrderKey{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: opts.Namespace},
	}
	if err := mgr.Add(r.lookups); err != nil {
		return nil, fmt.Errorf("add the lookup server: %w", err)
	}
	if err := mgr.Add(watcher); err != nil {
		return nil, fmt.Errorf("add the admission policy's watcher: %w", err)
	}
	if err := mgr.Add(keeper); err != nil {
		return nil, fmt.Errorf("add the admission policy's keeper: %w", err)
	}
	if err := mgr.Add(r.order); err != nil {
		return nil, fmt.Errorf("add the rollout order's key: %w", err)
	}
	return r, nil
}

// parentPredicates pass the changes of a parent that may change what a pass
// does: its spec (generation), its deletion, and its labels and annotations.
func parentPredicates() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, DeletingPredicate(), metadataChangedPredicate())
}

// DeletingPredicate passes updates that mark an object for deletion.
func DeletingPredicate() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
}

// ownLabels and ownAnnotations are the metadata stencil itself writes on a
// Composition (see writeParent): a change of them alone brings no pass, so
// stencil's own writes do not bring another pass.
var (
	ownLabels      = []string{applyset.LabelApplySetID}
	ownAnnotations = []string{applyset.AnnotationTooling, applyset.AnnotationGroupKinds, applyset.AnnotationNamespaces}
)

// metadataChangedPredicate passes updates that change a label or an
// annotation, other than those stencil writes itself: templates read them
// (.Composition.Labels, .Composition.Annotations), and annotations such as
// stencil.dev/allow-empty-render change what a pass does.
func metadataChangedPredicate() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return !maps.Equal(without(e.ObjectOld.GetLabels(), ownLabels), without(e.ObjectNew.GetLabels(), ownLabels)) ||
			!maps.Equal(without(e.ObjectOld.GetAnnotations(), ownAnnotations), without(e.ObjectNew.GetAnnotations(), ownAnnotations))
	}}
}

// without returns m without the keys.
func without(m map[string]string, keys []string) map[string]string {
	out := maps.Clone(m)
	for _, k := range keys {
		delete(out, k)
	}
	return out
}

// scope is the state of one reconcile pass.
type scope struct {
	comp   applyset.Parent
	status v1alpha1.CompositionStatus
	writer client.Client
	parent parentState
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
	// change moved under a pass that changed nothing (see observer.settle).
	observed *recall.Observed
	rerender []string
	stale    []string
	// lookedUp is what the pass's last render looked up, failed or not.
	lookedUp []tlookup.Read
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
	phases              phaseTimer
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
// or its Bundle to change (missing RBAC: or a minute; see ForbiddenRecheck).
// A parent with no ServiceAccount to write as (none named, no
// Options.DefaultServiceAccount, no Options.WriteAsController) is Stalled
// (reason NoServiceAccount) before anything, its deletion included; one in
// a namespace its Bundle's spec.namespaceSelector does not select is
// Stalled (reason NotAllowed) before it renders (see preparer.allowed).
func (r *CompositionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, err error) {
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
	// revision last rendered: a pass that renders nothing keeps it.
	s := &scope{comp: comp, status: v1alpha1.CompositionStatus{
		ObservedGeneration: comp.GetGeneration(),
		BundleRevision:     comp.ParentStatus().BundleRevision,
		Hooks:              comp.ParentStatus().Hooks.DeepCopy(),                   // the record of hooks run persists from pass to pass
		Outputs:            comp.ParentStatus().Outputs,                            // a pass that observes nothing keeps them
		Admission:          authority.Carried(*comp.ParentStatus(), r.kind == nil), // every status written has a record
	}, phases: phaseTimer{}}
	s.events.FirstPass = neverReconciled(comp) // see status.Events
	defer func() {
		s.phases.time(phaseStatus, func() { err = errors.Join(err, reporter{r}.patchStatus(ctx, s)) })
		s.phases.observe()
		metrics.Passes.WithLabelValues(outcome(s, err)).Inc()
	}()

	if specErr != nil && comp.GetDeletionTimestamp().IsZero() {
		reporter{r}.stall(s, v1alpha1.ReasonInvalid, specErr.Error())
		return ctrl.Result{}, nil
	}
	if s.writer, err = r.writers.writerFor(r, comp); errors.Is(err, errNoIdentity) {
		reporter{r}.stall(s, v1alpha1.ReasonNoServiceAccount, err.Error())
		return ctrl.Result{}, nil
	} else if err != nil {
		return reporter{r}.transient(s, err)
	}
	if done, res, err := r.admit(ctx, s); done || err != nil {
		if err != nil {
			return reporter{r}.transient(s, err)
		}
		return res, nil
	}
	if !comp.GetDeletionTimestamp().IsZero() {
		s.deleting = true
		return finalizer{r}.finalize(ctx, s)
	}
	if comp.ParentSpec().Suspend {
		return r.suspended(ctx, s)
	}
	for _, p := range []struct {
		name string
		run  phase
	}{
		{phasePrepare, preparer{r}.allowed}, {phaseShortcut, shortcut{r}.skipUnchanged}, {phaseParent, r.ensureParent}, {phaseRender, renderer{r}.render},
		{phasePrepare, preparer{r}.recall}, {phasePrepare, preparer{r}.watch}, {phasePrepare, preparer{r}.authorize}, {phasePrepare, shortcut{r}.snapshot},
		{phasePrepare, pruning{r}.guardEmptyRender}, {phaseParent, r.widen}, {phaseApply, r.apply}, {phaseApply, observer{r}.settle}, {phasePrune, r.prune},
		{phaseStatus, r.observe},
	} {
		var res ctrl.Result
		s.phases.time(p.name, func() { res, err = p.run(ctx, s) })
		if err != nil {
			reporter{r}.observeMembers(ctx, s)
			return reporter{r}.transient(s, err)
		}
		if s.done || !res.IsZero() {
			reporter{r}.observeMembers(ctx, s)
			return res, nil
		}
	}
	if (shortcut{r}).keepSnapshot(ctx, s) {
		r.passes.Put(req.NamespacedName, "", s.snapshot)
	}
	return ctrl.Result{}, nil
}

// lookupSource brings back, through the controller's queue, the parents
// whose last render looked up an object that changed (package lookup).
func (r *CompositionReconciler) lookupSource() source.Source {
	return source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) error {
		r.lookups.Bind(r.parentGVK().GroupKind(), q)
		return nil
	})
}

// forget drops what the reconciler remembers of a Composition that is gone
// or has left this shard.
func (r *CompositionReconciler) forget(key types.NamespacedName) {
	r.lookups.Forget(lookup.Parent{Kind: r.parentGVK().GroupKind(), Key: key})
	r.readiness.Forget(metrics.ParentKey{Kind: r.parentGVK().GroupKind(), NamespacedName: key})
	r.failedRenders.Forget(key)
	r.generated.Forget(key)
	r.stalls.Forget(key)
	r.flaps.Forget(key)
	r.passes.Forget(key)
	r.parentVersions.Forget(key)
	r.observed.Forget(key)
}

// What the admission webhook renders through: the reconciler's own
// bundle cache, served APIs, renderer and writers, so a review renders
// and dry-runs exactly as a pass would.

// LoadBundle returns b parsed, from the cache when its generation is
// known. A Bundle with a source is loaded with the chart of the digest its
// status records, from this process's chart cache only: one not pulled
// yet is an error (a *pull.NotPulledError when none is recorded).
func (r *CompositionReconciler) LoadBundle(b *v1alpha1.Bundle) (*templates.Bundle, error) {
	b, err := r.sources.Cached(b)
	if err != nil {
		return nil, err
	}
	return r.bundles.Load(b)
}

// Sources pulls the charts of Bundles with a source, into the chart cache
// LoadBundle reads: the Bundle controller (package published) resolves
// through it.
func (r *CompositionReconciler) Sources() *pull.Puller { return r.sources }

// Capabilities are what the cluster serves, for .Capabilities.
func (r *CompositionReconciler) Capabilities(ctx context.Context) (*templates.Capabilities, error) {
	snap, err := r.capabilities.Get(ctx)
	if err != nil {
		return nil, err
	}
	return snap.Caps, nil
}

// Renderer renders bundles, under the controller's limits.
func (r *CompositionReconciler) Renderer() plan.Renderer { return r.renderer }

// WriterFor returns the client that writes parent's members: one
// impersonating the parent's ServiceAccount, or the manager's own only
// with Options.WriteAsController; an error when there is neither.
func (r *CompositionReconciler) WriterFor(parent applyset.Parent) (client.Client, error) {
	return r.writers.writerFor(r, parent)
}

// version is the resourceVersion of the parent name as this process last
// wrote or read it live, "" when it did neither (see recordedParent).
func (r *CompositionReconciler) version(name types.NamespacedName) string {
	v, _ := r.parentVersions.Get(name, "")
	return v
}
