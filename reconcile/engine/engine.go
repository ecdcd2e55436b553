package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/stencil-dev/stencil/reconcile/access"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/authority"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/hooks"
	"github.com/stencil-dev/stencil/reconcile/lookup"
	"github.com/stencil-dev/stencil/reconcile/metrics"
	"github.com/stencil-dev/stencil/reconcile/ownership"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/pull"
	"github.com/stencil-dev/stencil/reconcile/recall"
	"github.com/stencil-dev/stencil/reconcile/rollout"
	"github.com/stencil-dev/stencil/reconcile/valuestore"
	chartsource "github.com/stencil-dev/stencil/source"
	"github.com/stencil-dev/stencil/templates"
)

// Engine is what every controller of parents shares: the manager's
// clients and caches, the Bundle and chart loader with its revisions, the
// renderer, the writers (one identity per ServiceAccount), the served
// APIs, the access check, the lookups, the generated values' keys, the
// admission policy and the rollouts' order. It is built once per manager
// (New) and handed to each controller, as controller-runtime hands
// around its cluster.Cluster; it keeps no state of any one parent.
type Engine struct {
	// Client is the manager's client: typed reads from the cache, writes
	// to the API server, as the controller.
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
	// Recorder records events on parents.
	Recorder events.EventRecorder
	// Options are the controllers' options, defaults filled in.
	Options Options

	// Access reviews what a parent's ServiceAccount may do.
	Access *access.Checker
	// Hooks runs the Helm hooks of passes.
	Hooks *hooks.Runner
	// Bundles keeps the parsed Bundles and revisions.
	Bundles *recall.Bundles
	// Sources gives Bundles with a source their pulled chart's files.
	Sources *pull.Puller
	// Renderer renders bundles, under the controller's limits.
	Renderer plan.Renderer
	// APIs are what the cluster serves, for .Capabilities.
	APIs *cluster.Capabilities
	// Schemas type members for the local apply that skips needless writes.
	Schemas *applyset.Schemas
	// Readiness feeds stencil_compositions for the parents of every kind.
	Readiness *metrics.Readiness
	// Authority holds stencil's admission policy as the API server has
	// it; Keeper keeps this shard's default ServiceAccount in its
	// parameters.
	Authority *authority.Watcher
	Keeper    *authority.Keeper
	// Lookups answers the lookups of renders (package lookup).
	Lookups *lookup.Server
	// Keys holds the controller's key for generated values (package
	// valuestore).
	Keys *valuestore.Keys
	// Order keeps the key the rollouts rank parents by (package rollout).
	Order *rollout.OrderKey
	// Pace spreads the writes that only add an owner reference
	// (applyset.Applier.Pace, Options.ReferenceQPS).
	Pace func(context.Context) error

	writers writers
	// fleet holds the controllers serving parents, by kind (see Serve).
	fleet sync.Map
	// notifier tells the rollout controller of the published kinds'
	// instances' changes.
	notifier *rollout.Notifier
	// converters are the Bundles' converters, by Bundle generation, for
	// the instances rendered by a revision of another version (see
	// RenderValues).
	converters converters
}

// New builds the engine of mgr: its services, the runnables among them
// (the lookup server, the admission policy's watcher and keeper, the
// rollout order's key) added to mgr. Options' defaults are filled in.
func New(mgr ctrl.Manager, opts Options) (*Engine, error) {
	if opts.Renderer == nil {
		return nil, errors.New("reconcile: Options.Renderer is required")
	}
	if opts.WriteAsController && opts.DefaultServiceAccount != "" {
		return nil, errors.New("reconcile: Options.WriteAsController and Options.DefaultServiceAccount are exclusive")
	}
	if opts.AdmissionMargin == 0 {
		opts.AdmissionMargin = DefaultAdmissionMargin
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultNamespace
	}
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
	watcher, err := authority.NewWatcher(mgr.GetConfig(), mgr.GetScheme(), opts.Namespace)
	if err != nil {
		return nil, err
	}
	keeper := &authority.Keeper{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Watcher: watcher, Namespace: opts.Namespace,
		Shard: opts.Shard, Account: opts.DefaultServiceAccount, Margin: opts.AdmissionMargin}
	checker := access.NewChecker(mgr.GetClient())
	checker.DefaultAccount = opts.DefaultServiceAccount
	dc, err := dynamic.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	recorder := mgr.GetEventRecorder("stencil")
	e := &Engine{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Cache:     mgr.GetCache(),
		Mapper:    mgr.GetRESTMapper(),
		Config:    mgr.GetConfig(),
		Scheme:    mgr.GetScheme(),
		Recorder:  recorder,
		Options:   opts,

		Access:    checker,
		Hooks:     &hooks.Runner{Live: mgr.GetAPIReader(), Client: mgr.GetClient(), Recorder: recorder},
		Bundles:   &recall.Bundles{},
		Sources:   &pull.Puller{Reader: mgr.GetAPIReader(), Namespace: opts.Namespace, Cache: chartsource.NewCache(0), Policy: opts.SourcePolicy},
		Renderer:  opts.Renderer,
		APIs:      caps,
		Schemas:   schemas,
		Readiness: &metrics.Readiness{},
		Authority: watcher,
		Keeper:    keeper,
		Lookups:   lookup.New(dc, mgr.GetRESTMapper(), checker),
		Keys:      &valuestore.Keys{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: opts.Namespace},
		Order:     &rollout.OrderKey{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Namespace: opts.Namespace},
		Pace:      ownership.Pacer(opts.ReferenceQPS, DefaultReferenceQPS),
	}
	for _, add := range []struct {
		what string
		run  manager.Runnable
	}{{"the lookup server", e.Lookups}, {"the admission policy's watcher", watcher}, {"the admission policy's keeper", keeper}, {"the rollout order's key", e.Order}} {
		if err := mgr.Add(add.run); err != nil {
			return nil, fmt.Errorf("add %s: %w", add.what, err)
		}
	}
	return e, nil
}

// Capabilities are what the cluster serves, for .Capabilities.
func (e *Engine) Capabilities(ctx context.Context) (*templates.Capabilities, error) {
	snap, err := e.APIs.Get(ctx)
	if err != nil {
		return nil, err
	}
	return snap.Caps, nil
}

// Consent is what lets parent's set adopt an existing object of no set
// (see applyset.Owns), as the controller applies planned, parent's plan:
// the stencil.dev/adopt annotation naming the parent (its resource as the
// API server serves its kind), or a kind the rendered Bundle's
// spec.permissions.adopt lists. The admission webhook's dry runs use it
// too. It reads only the RESTMapper: no request.
func (e *Engine) Consent(parent applyset.Parent, planned *plan.Plan) applyset.Consent {
	resource := ""
	gvk := parent.ParentGVK()
	if m, err := e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
		resource = m.Resource.Resource
	}
	return applyset.ConsentOf(parent, resource, planned.Adopt)
}

// Checked reports whether the API server checks, with stencil's policy,
// who may use the ServiceAccount of the parents of kind gvk: the
// admission webhook previews a request as the parent's account only then
// (the policy ran before it).
func (e *Engine) Checked(ctx context.Context, gvk schema.GroupVersionKind) bool {
	gr := authority.CompositionsResource
	if gvk.GroupKind() != applyset.CompositionGroupKind {
		m, err := e.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return false
		}
		gr = m.Resource.GroupResource()
	}
	cov, err := e.Authority.Coverage(ctx, gr)
	return err == nil && cov.Problem() == ""
}

// AdmissionReady is closed once this controller's default ServiceAccount
// is in the parameters of stencil's admission policy: before, the API
// server refuses the parents of its shard that name none.
func (e *Engine) AdmissionReady() <-chan struct{} { return e.Keeper.Ready() }

// AdmissionKinds keeps the check of the published kinds (for the Bundle
// controller, package published).
func (e *Engine) AdmissionKinds() *authority.Kinds {
	return &authority.Kinds{Client: e.Client, Reader: e.APIReader, Namespace: e.Options.Namespace}
}
