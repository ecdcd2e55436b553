package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"time"

	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/templates"
)

// renderSets renders bundle for n Compositions named like the controller's
// in namespace, as `stencil render` would (plan.NewPlan: placed,
// labelled, in apply order).
func renderSets(ctx context.Context, bundle *v1alpha1.Bundle, namespace string, n int) ([][]*unstructured.Unstructured, error) {
	b, err := templates.LoadObject(bundle)
	if err != nil {
		return nil, err
	}
	apis := cluster.OfflineAPIs()
	sets := make([][]*unstructured.Unstructured, n)
	for i := range n {
		in := templates.Input{Composition: templates.CompositionInfo{Name: compositionName(i), Namespace: namespace}}
		planned, err := plan.NewPlan(ctx, inProcess{}, b, in, apis)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", compositionName(i), err)
		}
		for _, o := range planned.Objects {
			// Without the part-of label, the floor's objects stay out of
			// the controller's label-selected cache.
			labels := o.GetLabels()
			delete(labels, applyset.LabelPartOf)
			o.SetLabels(labels)
		}
		sets[i] = planned.Objects
	}
	return sets, nil
}

// floorResult is what the bare server-side apply client did.
type floorResult struct {
	elapsed  time.Duration
	objects  int
	requests requestCounts
	// plane is the CPU time the control plane used meanwhile.
	plane planeCPU
}

// parentWrites are the writes a Composition needs whatever its controller
// does: the user's create before its members, and one status write after
// them. The floor with parents makes them with the bare client.
type parentWrites struct {
	// create creates the i-th set's Composition; status writes its status.
	create, status func(ctx context.Context, c client.Client, i int) error
}

// applyFloor applies the sets with a bare server-side apply client: no
// reads, no status, no bookkeeping. Like the controller, it works on
// concurrency sets at once and applies up to applyConcurrency objects of a
// set at once, under cfg's client-side rate limits. With parents, each set
// is its Composition's: created before the set is applied, its status
// written after.
func applyFloor(ctx context.Context, cfg *rest.Config, sets [][]*unstructured.Unstructured, concurrency, applyConcurrency int, parents *parentWrites) (floorResult, error) {
	counter := &verbCounter{counts: requestCounts{}}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return counter.wrap(rt) })
	scheme, err := reconcile.NewScheme()
	if err != nil {
		return floorResult{}, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return floorResult{}, err
	}
	// Discover the kinds before the clock starts, as a controller has.
	for _, o := range sets[0] {
		if _, err := c.RESTMapper().RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version); err != nil {
			return floorResult{}, err
		}
	}
	if parents != nil {
		if _, err := c.RESTMapper().RESTMapping(v1alpha1.GroupVersion.WithKind("Composition").GroupKind(), v1alpha1.GroupVersion.Version); err != nil {
			return floorResult{}, err
		}
	}
	counter.reset()
	res := floorResult{}
	for _, set := range sets {
		res.objects += len(set)
	}
	start := time.Now()
	err = forEach(ctx, concurrency, len(sets), func(ctx context.Context, i int) error {
		if parents != nil {
			if err := parents.create(ctx, c, i); err != nil {
				return fmt.Errorf("create Composition %s: %w", compositionName(i), err)
			}
		}
		set := sets[i]
		err := forEach(ctx, applyConcurrency, len(set), func(ctx context.Context, j int) error {
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
			return fmt.Errorf("write the status of Composition %s: %w", compositionName(i), err)
		}
		return nil
	})
	res.elapsed = time.Since(start)
	res.requests = counter.snapshot()
	return res, err
}

// verbCounter counts the requests a client sends, by verb.
type verbCounter struct {
	mu     sync.Mutex
	counts requestCounts
}

func (v *verbCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		verb := map[string]string{http.MethodGet: "get", http.MethodPost: "create", http.MethodPut: "update",
			http.MethodPatch: "patch", http.MethodDelete: "delete"}[req.Method]
		v.mu.Lock()
		v.counts[verb+" objects"]++
		v.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// reset forgets what was counted.
func (v *verbCounter) reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.counts = requestCounts{}
}

// snapshot returns a copy of the counts.
func (v *verbCounter) snapshot() requestCounts {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.counts)
}

// forEach runs fn for 0..n-1, at most limit at once, and returns the first
// error; after an error, the items not yet started are skipped.
func forEach(ctx context.Context, limit, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for i := range n {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, i); err != nil {
				cancel(err)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// compositionName names the i-th benchmark Composition.
func compositionName(i int) string { return fmt.Sprintf("c-%05d", i) }
