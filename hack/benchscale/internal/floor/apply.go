package floor

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/parallel"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/table"
	"github.com/stencil-dev/stencil/reconcile/engine"
)

// parentWrites are the writes a Composition needs whatever its controller
// does: the user's create before its members, and one status write after
// them. The floor with parents makes them with the bare client.
type parentWrites struct {
	// create creates the i-th set's Composition; status writes its status.
	create, status func(ctx context.Context, c client.Client, i int) error
}

// apply applies the sets with a bare server-side apply client: no reads,
// no status, no bookkeeping. Like the controller, it works on concurrency
// sets at once and applies up to applyConcurrency objects of a set at
// once, under cfg's client-side rate limits. With parents, each set is its
// Composition's: created before the set is applied, its status written
// after. What it did so far is returned with an error.
func apply(ctx context.Context, cfg *rest.Config, sets [][]*unstructured.Unstructured, concurrency, applyConcurrency int, parents *parentWrites) (table.Floor, error) {
	counter := requests.NewCounter()
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(counter.Wrap)
	scheme, err := engine.NewScheme()
	if err != nil {
		return table.Floor{}, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return table.Floor{}, err
	}
	// Discover the kinds before the clock starts, as a controller has.
	for _, o := range sets[0] {
		if _, err := c.RESTMapper().RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version); err != nil {
			return table.Floor{}, err
		}
	}
	if parents != nil {
		if _, err := c.RESTMapper().RESTMapping(v1alpha1.GroupVersion.WithKind("Composition").GroupKind(), v1alpha1.GroupVersion.Version); err != nil {
			return table.Floor{}, err
		}
	}
	counter.Reset()
	res := table.Floor{}
	for _, set := range sets {
		res.Objects += len(set)
	}
	start := time.Now()
	err = parallel.ForEach(ctx, concurrency, len(sets), func(ctx context.Context, i int) error {
		return applySet(ctx, c, sets[i], i, applyConcurrency, parents)
	})
	res.Elapsed = time.Since(start)
	res.Requests = counter.Snapshot()
	return res, err
}

// applySet applies the i-th set, applyConcurrency objects at once, its
// parent's writes around it.
func applySet(ctx context.Context, c client.Client, set []*unstructured.Unstructured, i, applyConcurrency int, parents *parentWrites) error {
	if parents != nil {
		if err := parents.create(ctx, c, i); err != nil {
			return fmt.Errorf("create Composition %s: %w", fixture.CompositionName(i), err)
		}
	}
	err := parallel.ForEach(ctx, applyConcurrency, len(set), func(ctx context.Context, j int) error {
		o := set[j]
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner("stencil"), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
		return nil
	})
	if err != nil || parents == nil {
		return err
	}
	if err := parents.status(ctx, c, i); err != nil {
		return fmt.Errorf("write the status of Composition %s: %w", fixture.CompositionName(i), err)
	}
	return nil
}
