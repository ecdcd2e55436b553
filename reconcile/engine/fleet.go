package engine

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/rollout"
)

// Kind is a kind a Bundle publishes, as the controller serves it.
type Kind struct {
	GVK schema.GroupVersionKind
	// Bundle is the Bundle that publishes it.
	Bundle string
	// Resource is the kind's plural, its resource name.
	Resource string
}

// Fleet is a controller of parents as the engine lists them: the
// Composition controller, or the controller of one published kind.
type Fleet interface {
	// Parents lists the parents of Bundle bundle the controller serves,
	// from its own cache, with their effective specs.
	Parents(ctx context.Context, bundle string) ([]applyset.Parent, error)
}

// Serve records f as the controller of parents of kind gk until the
// returned func is called (a published kind stopped serving).
func (e *Engine) Serve(gk schema.GroupKind, f Fleet) (stop func()) {
	e.fleet.Store(gk, f)
	return func() { e.fleet.CompareAndDelete(gk, f) }
}

// ListParents lists the parents of Bundle bundle this shard serves: its
// Compositions, and the instances of the kind it publishes, from the
// caches of their controllers (rollout.Lister).
func (e *Engine) ListParents(ctx context.Context, bundle string) ([]applyset.Parent, error) {
	var out []applyset.Parent
	var errs error
	e.fleet.Range(func(_, v any) bool {
		parents, err := v.(Fleet).Parents(ctx, bundle)
		if err != nil {
			errs = err
			return false
		}
		out = append(out, parents...)
		return true
	})
	return out, errs
}

// SetRolloutNotifier has the published kinds' controllers tell n of their
// instances' changes (package rollout watches the Compositions itself).
// Set before the kinds are served.
func (e *Engine) SetRolloutNotifier(n *rollout.Notifier) { e.notifier = n }

// RolloutNotifier is what SetRolloutNotifier set, nil before.
func (e *Engine) RolloutNotifier() *rollout.Notifier { return e.notifier }
