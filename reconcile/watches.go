package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// Bounds on waiting for the cache. controller-runtime's cache blocks a
// read of a kind, and source.Kind blocks its start, until the kind's
// informer has synced, which never happens when the controller may not list
// or watch the kind: no worker waits longer than these.
const (
	// syncTimeout bounds the wait for a newly started informer to sync.
	syncTimeout = 10 * time.Second
	// cacheReadTimeout bounds one read from the cache.
	cacheReadTimeout = 10 * time.Second
)

// watchEntry is the state of the watch on one member kind.
type watchEntry struct {
	synced atomic.Bool
}

// watch makes sure every kind the plan renders is watched, so that changes
// to members bring their Composition back. A kind the controller may not
// list and watch cluster-wide stalls the Composition (reason Forbidden)
// before any informer is started for it and before anything is applied.
func (r *CompositionReconciler) watch(ctx context.Context, s *scope) (ctrl.Result, error) {
	gvks := make([]schema.GroupVersionKind, 0, len(s.plan.Objects))
	for _, o := range s.plan.Objects {
		if gvk := o.GroupVersionKind(); !slices.Contains(gvks, gvk) {
			gvks = append(gvks, gvk)
		}
	}
	if _, err := r.ensureWatches(ctx, gvks); err != nil {
		return r.stallIfDenied(s, "Watch", err)
	}
	return ctrl.Result{}, nil
}

// ensureWatches starts, after an access check, a watch on each kind not yet
// watched and waits, bounded, for its informer to sync. It returns the kinds
// the API server does not serve yet (defined by a CRD in the same render):
// a later pass watches them. An *access.DeniedError names a kind the
// controller may not list or watch.
func (r *CompositionReconciler) ensureWatches(ctx context.Context, gvks []schema.GroupVersionKind) (unserved []schema.GroupVersionKind, err error) {
	for _, gvk := range gvks {
		if e, ok := r.watched.Load(gvk); ok && e.(*watchEntry).synced.Load() {
			continue
		}
		m, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			unserved = append(unserved, gvk)
			continue
		}
		if err != nil {
			return unserved, fmt.Errorf("find the API of %s: %w", gvk.Kind, err)
		}
		if err := r.access.ControllerMay(ctx, m, "list", "watch"); err != nil {
			return unserved, err
		}
		if err := r.startWatch(ctx, gvk); err != nil {
			return unserved, err
		}
	}
	return unserved, nil
}

// startWatch starts, once per kind, a watch on the members of that kind
// (the cache's informer is label-selected) that maps events to the parent,
// then waits at most syncTimeout for the informer to sync. A kind whose
// informer has not synced is read from the API server (see memberReader).
func (r *CompositionReconciler) startWatch(ctx context.Context, gvk schema.GroupVersionKind) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	e, loaded := r.watched.LoadOrStore(gvk, &watchEntry{})
	if !loaded {
		if err := indexMembers(ctx, r.Cache, u); err != nil {
			r.watched.Delete(gvk)
			return fmt.Errorf("watch %s: %w", gvk.Kind, err)
		}
		if err := r.controller.Watch(source.Kind(r.Cache, client.Object(u), handler.EnqueueRequestsFromMapFunc(r.parentOf))); err != nil {
			r.watched.Delete(gvk)
			return fmt.Errorf("watch %s: %w", gvk.Kind, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if _, err := r.Cache.GetInformer(ctx, u); err != nil {
		return fmt.Errorf("watch %s: the cache did not sync within %s: %w", gvk.Kind, syncTimeout, err)
	}
	e.(*watchEntry).synced.Store(true)
	return nil
}

// indexPartOf is the field index of every member kind's cache on the
// part-of label. controller-runtime's cache answers a label selector by
// testing every object of the kind in the namespace, building a map of its
// labels for each: with N Compositions in one namespace, listing one
// set's members cost N label maps per kind, and a converge of N sets N².
// Listed by this index, a set reads its own members only.
const indexPartOf = "applyset.partOf"

// indexMembers adds indexPartOf to the cache of u's kind. The cache is the
// manager's, shared by the reconcilers of Compositions and of each
// published kind: an index another one added first is as good.
func indexMembers(ctx context.Context, c cache.Cache, u *unstructured.Unstructured) error {
	err := c.IndexField(ctx, u, indexPartOf, func(o client.Object) []string {
		if id := o.GetLabels()[applyset.LabelPartOf]; id != "" {
			return []string{id}
		}
		return nil
	})
	if err == nil {
		return nil
	}
	inf, ierr := c.GetInformer(ctx, u, cache.BlockUntilSynced(false))
	if ierr != nil {
		return fmt.Errorf("index by %s: %w", applyset.LabelPartOf, err)
	}
	if i, ok := inf.(interface{ GetIndexer() toolscache.Indexer }); ok {
		if _, ok := i.GetIndexer().GetIndexers()["field:"+indexPartOf]; ok {
			return nil
		}
	}
	return fmt.Errorf("index by %s: %w", applyset.LabelPartOf, err)
}

// memberReader reads members from the cache for the kinds whose watch has
// synced, each read bounded by cacheReadTimeout, and from the API server
// otherwise: no read waits on an informer that cannot sync, and no read
// starts an informer the access check has not allowed.
type memberReader struct{ r *CompositionReconciler }

var _ client.Reader = memberReader{}

func (m memberReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if e, ok := m.r.watched.Load(obj.GetObjectKind().GroupVersionKind()); ok && e.(*watchEntry).synced.Load() {
		ctx, cancel := context.WithTimeout(ctx, cacheReadTimeout)
		defer cancel()
		return m.r.Cache.Get(ctx, key, obj, opts...)
	}
	return m.r.APIReader.Get(ctx, key, obj, opts...)
}

func (m memberReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return m.r.APIReader.List(ctx, list, opts...)
}
