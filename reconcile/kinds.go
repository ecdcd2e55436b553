package reconcile

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// publishedKind is a kind a Bundle publishes, as the controller serves it.
type publishedKind struct {
	gvk schema.GroupVersionKind
	// bundle is the Bundle that publishes it.
	bundle string
	// resource is the kind's plural, its resource name.
	resource string
}

// kindControllers runs one controller per published kind. Each has its own
// cache of the kind's instances (this shard's only), so that stopping it
// drops its informer, and its own reconciler (forKind), which shares with
// the Composition reconciler everything but the per-parent memos. A kind's
// controller starts once its CRD is Established and stops when no Bundle
// publishes the kind any more, or when the manager stops.
type kindControllers struct {
	base *CompositionReconciler

	mu      sync.Mutex
	ctx     context.Context // the manager's; set by Start
	started chan struct{}
	running map[schema.GroupVersionKind]*kindController
	// changes holds one notice when the kinds served changed since it
	// was last read (see webhookConfigReconciler).
	changes chan event.GenericEvent
}

// kindController is one published kind's running controller.
type kindController struct {
	kind   publishedKind
	r      *CompositionReconciler
	cancel context.CancelFunc
	done   chan struct{}
}

func newKindControllers(base *CompositionReconciler) *kindControllers {
	return &kindControllers{base: base, started: make(chan struct{}), running: map[schema.GroupVersionKind]*kindController{},
		changes: make(chan event.GenericEvent, 1)}
}

// changed notes that the kinds served changed. Called with k.mu held.
func (k *kindControllers) changed() {
	select {
	case k.changes <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{}}:
	default:
	}
}

// served returns the kinds served, sorted by group and resource.
func (k *kindControllers) served() []publishedKind {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]publishedKind, 0, len(k.running))
	for _, c := range k.running {
		out = append(out, c.kind)
	}
	slices.SortFunc(out, func(a, b publishedKind) int {
		return cmp.Or(cmp.Compare(a.gvk.Group, b.gvk.Group), cmp.Compare(a.resource, b.resource), cmp.Compare(a.gvk.Version, b.gvk.Version))
	})
	return out
}

// Start implements manager.Runnable: the kinds' controllers run under the
// manager's context, on the leader, and all stop when it ends.
func (k *kindControllers) Start(ctx context.Context) error {
	k.mu.Lock()
	k.ctx = ctx
	close(k.started)
	k.mu.Unlock()
	<-ctx.Done()
	k.mu.Lock()
	defer k.mu.Unlock()
	for gvk, c := range k.running {
		c.stop()
		delete(k.running, gvk)
	}
	return nil
}

// serve makes sure a controller serves kind for its Bundle: it starts one,
// or replaces the one another Bundle ran for the same kind.
func (k *kindControllers) serve(ctx context.Context, kind publishedKind) error {
	select {
	case <-k.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.running[kind.gvk]; ok {
		if c.kind == kind {
			return nil
		}
		c.stop()
		delete(k.running, kind.gvk)
	}
	c, err := k.start(kind)
	if err != nil {
		return err
	}
	k.running[kind.gvk] = c
	k.changed()
	return nil
}

// serving reports whether a controller serves kind for its Bundle.
func (k *kindControllers) serving(kind publishedKind) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	c, ok := k.running[kind.gvk]
	return ok && c.kind == kind
}

// stopBundle stops the controllers of the kinds bundle publishes, but the
// one of keep.
func (k *kindControllers) stopBundle(bundle string, keep schema.GroupVersionKind) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for gvk, c := range k.running {
		if c.kind.bundle == bundle && gvk != keep {
			c.stop()
			delete(k.running, gvk)
			k.changed()
		}
	}
}

// start starts kind's cache and controller. Called with k.mu held.
func (k *kindControllers) start(kind publishedKind) (*kindController, error) {
	base := k.base
	ctx, cancel := context.WithCancel(k.ctx)
	parents, err := cache.New(base.Config, cache.Options{
		Scheme:               base.Scheme,
		Mapper:               base.Mapper,
		DefaultLabelSelector: ShardSelector(base.Options.Shard),
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("cache of %s: %w", kind.gvk.Kind, err)
	}
	r := base.forKind(kind, parents)
	obj := instanceObject(kind.gvk)
	if err := parents.IndexField(ctx, obj, indexApplySetID, func(o client.Object) []string {
		return []string{ApplySetID(o.GetName(), o.GetNamespace(), kind.gvk.GroupKind())}
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("index %s by ApplySet id: %w", kind.gvk.Kind, err)
	}
	name := "published-" + kind.gvk.GroupKind().String()
	c, err := controller.NewUnmanaged(name, controller.Options{
		Reconciler:              r,
		MaxConcurrentReconciles: max(base.Options.MaxConcurrentReconciles, 1),
		SkipNameValidation:      ptr.To(true), // a kind served again reuses its name
		Logger:                  ctrl.Log.WithName("controller").WithValues("kind", kind.gvk.GroupKind().String()),
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("controller of %s: %w", kind.gvk.Kind, err)
	}
	r.controller = c
	for _, src := range []source.Source{
		source.Kind(parents, client.Object(obj), &handler.EnqueueRequestForObject{}, parentPredicates()),
		source.Kind(base.Cache, client.Object(&v1alpha1.Bundle{}), handler.EnqueueRequestsFromMapFunc(r.parentsOfBundle)),
		source.Channel(base.capabilities.subscribe(ctx), handler.EnqueueRequestsFromMapFunc(r.allParents)),
	} {
		if err := c.Watch(src); err != nil {
			cancel()
			return nil, fmt.Errorf("controller of %s: %w", kind.gvk.Kind, err)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		log := ctrl.Log.WithName("published").WithValues("kind", kind.gvk.String(), "bundle", kind.bundle)
		go func() {
			if err := parents.Start(ctx); err != nil {
				log.Error(err, "cache of the published kind stopped")
			}
		}()
		log.Info("serving the published kind")
		if err := c.Start(ctx); err != nil {
			log.Error(err, "controller of the published kind stopped")
		}
		log.Info("stopped serving the published kind")
	}()
	return &kindController{kind: kind, r: r, cancel: cancel, done: done}, nil
}

// stop stops the controller and its cache and waits for its workers.
func (c *kindController) stop() {
	c.cancel()
	<-c.done
}

// instanceObject is an empty instance of a published kind, to watch or read.
func instanceObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// forKind returns a reconciler of kind's instances read from parents: it
// shares the clients, the caches of bundles, schemas, capabilities and
// impersonating writers, the renderer and the readiness gauge, and keeps
// its own per-parent memos and member watches.
func (r *CompositionReconciler) forKind(kind publishedKind, parents cache.Cache) *CompositionReconciler {
	return &CompositionReconciler{
		Client:    r.Client,
		APIReader: r.APIReader,
		Cache:     r.Cache,
		Mapper:    r.Mapper,
		Config:    r.Config,
		Scheme:    r.Scheme,
		Recorder:  r.Recorder,
		Options:   r.Options,

		access:       r.access,
		bundles:      r.bundles,
		renderer:     r.renderer,
		capabilities: r.capabilities,
		schemas:      r.schemas,
		writers:      r.writers,
		readiness:    r.readiness,
		kind:         &kind,
		parents:      parents,
		kinds:        r.kinds,
	}
}

// parentGVK is the kind of parents r serves.
func (r *CompositionReconciler) parentGVK() schema.GroupVersionKind {
	if r.kind != nil {
		return r.kind.gvk
	}
	return v1alpha1.GroupVersion.WithKind("Composition")
}

// listParents lists the parents r serves, from its cache, as requests.
func (r *CompositionReconciler) listParents(ctx context.Context, opts ...client.ListOption) ([]ctrlreconcile.Request, error) {
	var list client.ObjectList = &v1alpha1.CompositionList{}
	if r.kind != nil {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(r.kind.gvk.GroupVersion().WithKind(r.kind.gvk.Kind + "List"))
		list = u
	}
	if err := r.parents.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	var out []ctrlreconcile.Request
	err := meta.EachListItem(list, func(o runtime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		out = append(out, ctrlreconcile.Request{NamespacedName: types.NamespacedName{Namespace: m.GetNamespace(), Name: m.GetName()}})
		return nil
	})
	return out, err
}
