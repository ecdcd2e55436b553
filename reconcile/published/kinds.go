package published

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/stencil-dev/stencil/reconcile/engine"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Kinds runs one controller per published kind. Each has its own
// cache of the kind's instances (this shard's only), so that stopping it
// drops its informer, and its own reconciler (see ServeFunc). A kind's
// controller starts once its CRD is Established and stops when no Bundle
// publishes the kind any more, or when the manager stops.
type Kinds struct {
	serveKind ServeFunc

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
	kind   engine.Kind
	cancel context.CancelFunc
	done   <-chan struct{}
}

// Changes holds one notice when the kinds served changed since it was
// last read.
func (k *Kinds) Changes() <-chan event.GenericEvent { return k.changes }

// ServeFunc serves a published kind's instances until ctx ends; the
// returned channel is closed once its controller and cache have stopped
// (reconcile.ServeKind, on the engine).
type ServeFunc func(ctx context.Context, kind engine.Kind) (done <-chan struct{}, err error)

func newKindControllers(serve ServeFunc) *Kinds {
	return &Kinds{serveKind: serve, started: make(chan struct{}), running: map[schema.GroupVersionKind]*kindController{},
		changes: make(chan event.GenericEvent, 1)}
}

// changed notes that the kinds served changed. Called with k.mu held.
func (k *Kinds) changed() {
	select {
	case k.changes <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{}}:
	default:
	}
}

// Served returns the kinds served, sorted by group and resource.
func (k *Kinds) Served() []engine.Kind {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := make([]engine.Kind, 0, len(k.running))
	for _, c := range k.running {
		out = append(out, c.kind)
	}
	slices.SortFunc(out, func(a, b engine.Kind) int {
		return cmp.Or(cmp.Compare(a.GVK.Group, b.GVK.Group), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.GVK.Version, b.GVK.Version))
	})
	return out
}

// Start implements manager.Runnable: the kinds' controllers run under the
// manager's context, on the leader, and all stop when it ends.
func (k *Kinds) Start(ctx context.Context) error {
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
func (k *Kinds) serve(ctx context.Context, kind engine.Kind) error {
	select {
	case <-k.started:
	case <-ctx.Done():
		return ctx.Err()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if c, ok := k.running[kind.GVK]; ok {
		if c.kind == kind {
			return nil
		}
		c.stop()
		delete(k.running, kind.GVK)
	}
	c, err := k.start(kind)
	if err != nil {
		return err
	}
	k.running[kind.GVK] = c
	k.changed()
	return nil
}

// stopBundle stops the controllers of the kinds bundle publishes, but the
// one of keep.
func (k *Kinds) stopBundle(bundle string, keep schema.GroupVersionKind) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for gvk, c := range k.running {
		if c.kind.Bundle == bundle && gvk != keep {
			c.stop()
			delete(k.running, gvk)
			k.changed()
		}
	}
}

// start starts kind's controller. Called with k.mu held.
func (k *Kinds) start(kind engine.Kind) (*kindController, error) {
	ctx, cancel := context.WithCancel(k.ctx)
	done, err := k.serveKind(ctx, kind)
	if err != nil {
		cancel()
		return nil, err
	}
	return &kindController{kind: kind, cancel: cancel, done: done}, nil
}

// stop stops the controller and its cache and waits for its workers.
func (c *kindController) stop() {
	c.cancel()
	<-c.done
}
