package migration

import (
	"context"
	"fmt"
	"slices"
	"time"

	"golang.org/x/time/rate"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/cluster"
)

// The controller's permissions for the migration (make manifests puts
// them into config/rbac): the instances' updates come from the
// ClusterRole of each published kind.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=update

// Options configure the storage migration.
type Options struct {
	// PageSize is how many instances one list request returns; zero is
	// DefaultPageSize.
	PageSize int64
	// WritesPerSecond bounds the instances rewritten per second, over
	// every Bundle; zero is DefaultWritesPerSecond.
	WritesPerSecond float64
	// Burst is how many rewrites may follow each other without waiting;
	// zero is 1.
	Burst int
	// Recheck is how long a migration waits before it looks again for
	// what no watch reports (discovery's storage version hash); zero is
	// DefaultRecheck.
	Recheck time.Duration
}

// The defaults of Options.
const (
	DefaultPageSize        = 100
	DefaultWritesPerSecond = 20
	DefaultRecheck         = 2 * time.Second
)

// FieldManager is the field manager of the rewrites (which, writing
// nothing new, own no field).
const FieldManager = "stencil-storage-migration"

// Migrator migrates the storage of the published kinds' instances (see
// the package doc), as the controller.
type Migrator struct {
	// client writes the instances, the CRDs' status and the Bundles'
	// status.storage, as the controller.
	client client.Client
	// reader reads the CRDs and lists the instances from the API server.
	reader    client.Reader
	discovery *discovery.DiscoveryClient
	recorder  events.EventRecorder
	limiter   *rate.Limiter
	opts      Options

	// afterPage, when set (tests), is called once a page's progress is
	// recorded, with it; a false return ends the pass there, as a stop
	// of the controller would.
	afterPage func(v1alpha1.StorageStatus) bool
}

// New returns a Migrator writing with c, reading with reader and asking
// the discovery of cfg, recording events with recorder; opts' defaults
// are filled in.
func New(c client.Client, reader client.Reader, cfg *rest.Config, recorder events.EventRecorder, opts Options) (*Migrator, error) {
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.WritesPerSecond <= 0 {
		opts.WritesPerSecond = DefaultWritesPerSecond
	}
	if opts.Burst <= 0 {
		opts.Burst = 1
	}
	if opts.Recheck <= 0 {
		opts.Recheck = DefaultRecheck
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &Migrator{client: c, reader: reader, discovery: disco, recorder: recorder, opts: opts,
		limiter: rate.NewLimiter(rate.Limit(opts.WritesPerSecond), opts.Burst)}, nil
}

// SetupWithManager registers the Migrator on mgr, as a leader-elected
// controller of Bundles woken by a change of their generation or of the
// CRDs labelled publish.LabelBundle.
func SetupWithManager(mgr ctrl.Manager, opts Options) error {
	m, err := New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetConfig(), mgr.GetEventRecorder("stencil"), opts)
	if err != nil {
		return err
	}
	md, err := metadata.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return fmt.Errorf("metadata client: %w", err)
	}
	crds := cluster.MetadataSource(md, apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions"),
		"the published kinds' CustomResourceDefinitions",
		func(o *metav1.ListOptions) { o.LabelSelector = publish.LabelBundle },
		func(q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request], o metav1.Object) {
			if name := o.GetLabels()[publish.LabelBundle]; name != "" {
				q.Add(ctrlreconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
			}
		})
	err = ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Bundle{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(crds).
		Named("storage-migration").
		Complete(m)
	if err != nil {
		return fmt.Errorf("build the storage migration controller: %w", err)
	}
	return nil
}

// Reconcile migrates the storage of the kind the Bundle publishes, if
// its CRD is the Bundle's (a CRD that is not is the Bundle controller's
// KindConflict, and is never written here).
func (m *Migrator) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &v1alpha1.Bundle{}
	if err := m.client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() || b.Spec.API == nil {
		return ctrl.Result{}, nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	name := publish.CRDName(publish.Defaulted(*b.Spec.API))
	if err := m.reader.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil // its creation brings the next pass
		}
		return ctrl.Result{}, fmt.Errorf("read CustomResourceDefinition %s: %w", name, err)
	}
	if crd.Labels[publish.LabelBundle] != b.Name || !crd.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	return m.Migrate(ctx, b, crd)
}

// Migrate migrates the storage of crd's instances (see the package doc)
// and records it in b's status.storage; b is the Bundle crd is labelled
// for, as read. An error is transient: the pass after resumes where this
// one got.
func (m *Migrator) Migrate(ctx context.Context, b *v1alpha1.Bundle, crd *apiextensionsv1.CustomResourceDefinition) (ctrl.Result, error) {
	storage := publish.StorageVersionOf(crd)
	if storage == "" || !established(crd) {
		return ctrl.Result{}, nil // the CRD's change brings the next pass
	}
	p := &pass{m: m, bundle: b, crd: crd, storage: storage}
	if slices.Equal(crd.Status.StoredVersions, []string{storage}) {
		return forbidden(p.migrated(ctx))
	}
	if ok, err := m.storing(ctx, crd, storage); err != nil || !ok {
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{RequeueAfter: m.opts.Recheck}, p.waiting(ctx)
	}
	return forbidden(p.run(ctx))
}

// ForbiddenRecheck is how long a migration the controller may not make
// (status.storage.message says why) waits before it tries again: RBAC
// changes raise no event.
const ForbiddenRecheck = time.Minute

// forbidden is the result of a pass that ended with err: a Forbidden
// error (recorded in status.storage.message) is looked at again after
// ForbiddenRecheck rather than backed off, which would soon wait for
// many minutes.
func forbidden(err error) (ctrl.Result, error) {
	if apierrors.IsForbidden(err) {
		return ctrl.Result{RequeueAfter: ForbiddenRecheck}, nil
	}
	return ctrl.Result{}, err
}

// established reports whether crd's Established condition is True.
func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
