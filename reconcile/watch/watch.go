package watch

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/reconcile/access"
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

// Watcher starts the label-selected watches of a reconciler's member
// kinds, once per kind, and reads members from them once they have synced.
type Watcher struct {
	cache  cache.Cache
	live   client.Reader
	mapper meta.RESTMapper
	access *access.Checker

	watched sync.Map // schema.GroupVersionKind → *watchEntry
	ctrl    controller.Controller
	handler handler.EventHandler
}

// New returns a Watcher of members in c, reading live through live when a
// kind has not synced; checker checks that the controller may list and
// watch a kind before its informer starts.
func New(c cache.Cache, live client.Reader, mapper meta.RESTMapper, checker *access.Checker) *Watcher {
	return &Watcher{cache: c, live: live, mapper: mapper, access: checker}
}

// Bind names the controller whose queue the watches feed, through h.
func (w *Watcher) Bind(c controller.Controller, h handler.EventHandler) {
	w.ctrl, w.handler = c, h
}

// Synced reports whether gvk's watch has synced: its members are read from the cache.
func (w *Watcher) Synced(gvk schema.GroupVersionKind) bool {
	e, ok := w.watched.Load(gvk)
	return ok && e.(*watchEntry).synced.Load()
}

// List lists from the cache the members of ApplySet id of one kind in one
// namespace ("" for all); false when the kind's watch has not synced or
// the read fails. The items are the cache's own objects, not copies
// (client.UnsafeDisableDeepCopy: a pass lists every member of its set two
// or three times, and copying them was about a sixth of the passes' CPU
// in a cold converge). Callers read them, through getters that copy or
// into clones, and never modify them; keeping one is safe, since the cache
// replaces an object on each event rather than changing it.
func (w *Watcher) List(ctx context.Context, gvk schema.GroupVersionKind, namespace, id string) (*unstructured.UnstructuredList, bool) {
	if !w.Synced(gvk) {
		return nil, false
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	ctx, cancel := context.WithTimeout(ctx, cacheReadTimeout)
	defer cancel()
	if err := w.cache.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{IndexPartOf: id}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, false
	}
	return list, true
}

// Reader reads members from the cache for the kinds whose watch has
// synced, each read bounded by cacheReadTimeout, and from the API server
// otherwise: no read waits on an informer that cannot sync, and no read
// starts an informer the access check has not allowed.
func (w *Watcher) Reader() client.Reader { return memberReader{w, w.live} }

// ReaderAs is Reader, reading from the API server through live (a
// client impersonating a parent's ServiceAccount) what the cache does not
// hold: the reads made for a tenant are bounded by the tenant's RBAC.
func (w *Watcher) ReaderAs(live client.Reader) client.Reader { return memberReader{w, live} }

// Ensure starts, after an access check, a watch on each kind not yet
// watched and waits, bounded, for its informer to sync. It returns the kinds
// the API server does not serve yet (defined by a CRD in the same render):
// a later pass watches them. An *access.DeniedError names a kind the
// controller may not list or watch.
func (w *Watcher) Ensure(ctx context.Context, gvks []schema.GroupVersionKind) (unserved []schema.GroupVersionKind, err error) {
	for _, gvk := range gvks {
		if w.Synced(gvk) {
			continue
		}
		m, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if meta.IsNoMatchError(err) {
			unserved = append(unserved, gvk)
			continue
		}
		if err != nil {
			return unserved, fmt.Errorf("find the API of %s: %w", gvk.Kind, err)
		}
		if err := w.access.ControllerMay(ctx, m, "list", "watch"); err != nil {
			return unserved, err
		}
		if err := w.start(ctx, gvk); err != nil {
			return unserved, err
		}
	}
	return unserved, nil
}

// start starts, once per kind, a watch on the members of that kind
// (the cache's informer is label-selected) that maps events to the parent,
// then waits at most syncTimeout for the informer to sync. A kind whose
// informer has not synced is read from the API server (see memberReader).
func (w *Watcher) start(ctx context.Context, gvk schema.GroupVersionKind) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	e, loaded := w.watched.LoadOrStore(gvk, &watchEntry{})
	if !loaded {
		if err := IndexMembers(ctx, w.cache, u); err != nil {
			w.watched.Delete(gvk)
			return fmt.Errorf("watch %s: %w", gvk.Kind, err)
		}
		if err := w.ctrl.Watch(source.Kind(w.cache, client.Object(u), w.handler)); err != nil {
			w.watched.Delete(gvk)
			return fmt.Errorf("watch %s: %w", gvk.Kind, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if _, err := w.cache.GetInformer(ctx, u); err != nil {
		return fmt.Errorf("watch %s: the cache did not sync within %s: %w", gvk.Kind, syncTimeout, err)
	}
	e.(*watchEntry).synced.Store(true)
	return nil
}

// IndexPartOf is the field index of every member kind's cache on the
// part-of label. controller-runtime's cache answers a label selector by
// testing every object of the kind in the namespace, building a map of its
// labels for each: with N Compositions in one namespace, listing one
// set's members cost N label maps per kind, and a converge of N sets N².
// Listed by this index, a set reads its own members only.
const IndexPartOf = "applyset.partOf"

// IndexMembers adds IndexPartOf to the cache of u's kind. The cache is the
// manager's, shared by the reconcilers of Compositions and of each
// published kind: an index another one added first is as good.
func IndexMembers(ctx context.Context, c cache.Cache, u *unstructured.Unstructured) error {
	err := c.IndexField(ctx, u, IndexPartOf, func(o client.Object) []string {
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
		if _, ok := i.GetIndexer().GetIndexers()["field:"+IndexPartOf]; ok {
			return nil
		}
	}
	return fmt.Errorf("index by %s: %w", applyset.LabelPartOf, err)
}

// memberReader is Watcher.Reader: the cache, else live.
type memberReader struct {
	w    *Watcher
	live client.Reader
}

var _ client.Reader = memberReader{}

func (m memberReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if m.w.Synced(obj.GetObjectKind().GroupVersionKind()) {
		ctx, cancel := context.WithTimeout(ctx, cacheReadTimeout)
		defer cancel()
		return m.w.cache.Get(ctx, key, obj, opts...)
	}
	return m.live.Get(ctx, key, obj, opts...)
}

func (m memberReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return m.live.List(ctx, list, opts...)
}
