package reconcile

import (
	"context"
	"fmt"
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/rollout"
)

// A Bundle's parents as a fleet: what the rollout controller (package
// rollout) reads of them, and which of them a Bundle's change brings a
// pass of.

// bundleEvents maps a Bundle's events to the parents r serves that render
// it. An update that changes only the Bundle's rollouts (the rollout
// controller's status writes: as waves start and as parents are counted)
// brings a pass only of the parents whose place in it changed
// (rollout.Placement): a wave moves its own parents, not the Bundle's
// thousand others.
func (r *Controller) bundleEvents() handler.EventHandler {
	all := func(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
		for _, req := range r.parentsOfBundle(ctx, o) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			all(ctx, e.Object, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			all(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			all(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) {
			old, cur := e.ObjectOld.(*v1alpha1.Bundle), e.ObjectNew.(*v1alpha1.Bundle)
			for _, req := range r.parentsOfBundle(ctx, cur) {
				if !rolloutOnly(old, cur) || r.placementChanged(ctx, old, cur, req) {
					q.Add(req)
				}
			}
		},
	}
}

// rolloutOnly reports whether a Bundle changed from old to cur in its
// status.rollouts alone.
func rolloutOnly(old, cur *v1alpha1.Bundle) bool {
	if old.Generation != cur.Generation || !maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) {
		return false
	}
	a, b := old.Status, cur.Status
	a.Rollouts, b.Rollouts = nil, nil
	return equality.Semantic.DeepEqual(a, b)
}

// placementChanged reports whether the parent req names has another place
// in cur's rollout than in old's.
func (r *Controller) placementChanged(ctx context.Context, old, cur *v1alpha1.Bundle, req ctrlreconcile.Request) bool {
	key := rollout.Key{Kind: r.parentGVK().GroupKind().String(), Namespace: req.Namespace, Name: req.Name}
	canary := false
	if cur.Spec.Rollout != nil && cur.Spec.Rollout.Canary != nil {
		p, _, err := r.fetch(ctx, req.NamespacedName)
		if err != nil || p == nil {
			return true
		}
		canary = r.Canary(ctx, cur, p)
	}
	var order rollout.Order
	if rollout.Ranked(old, r.Options.Shard) || rollout.Ranked(cur, r.Options.Shard) {
		var err error
		if order, err = r.Order.Order(ctx); err != nil {
			return true // the pass reports it
		}
	}
	return rollout.Placement(old, order, r.Options.Shard, key, canary) != rollout.Placement(cur, order, r.Options.Shard, key, canary)
}

// Parents lists the parents of Bundle bundle r serves, from its cache,
// with their effective specs (engine.Fleet): the Compositions that name
// it, or every instance of the kind it publishes.
func (r *Controller) Parents(ctx context.Context, bundle string) ([]applyset.Parent, error) {
	if r.kind == nil {
		comps := &v1alpha1.CompositionList{}
		if err := r.parents.List(ctx, comps, client.MatchingFields{indexBundle: bundle}); err != nil {
			return nil, fmt.Errorf("list Compositions: %w", err)
		}
		out := make([]applyset.Parent, 0, len(comps.Items))
		for i := range comps.Items {
			out = append(out, &comps.Items[i])
		}
		return out, nil
	}
	if r.kind.Bundle != bundle {
		return nil, nil
	}
	b := &v1alpha1.Bundle{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: r.kind.Bundle}, b); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(r.kind.GVK.GroupVersion().WithKind(r.kind.GVK.Kind + "List"))
	if err := r.parents.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list %s: %w", r.kind.GVK.Kind, err)
	}
	out := make([]applyset.Parent, 0, len(list.Items))
	for i := range list.Items {
		spec, _ := publish.InstanceSpec(b.Name, b.Spec.API, &list.Items[i])
		out = append(out, applyset.NewInstance(&list.Items[i], spec))
	}
	return out, nil
}

// notifyRollout has the informer of kind's instances in parents tell the
// rollout controller of the changes a rollout reads (rollout.Notable).
func (r *Controller) notifyRollout(ctx context.Context, parents cache.Cache, kind engine.Kind) error {
	notifier := r.RolloutNotifier()
	if notifier == nil {
		return nil
	}
	inf, err := parents.GetInformer(ctx, instanceObject(kind.GVK), cache.BlockUntilSynced(false))
	if err != nil {
		return fmt.Errorf("informer of %s: %w", kind.GVK.Kind, err)
	}
	instance := func(o any) applyset.Parent {
		u, ok := o.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		spec, _ := publish.InstanceSpec(kind.Bundle, nil, u)
		return applyset.NewInstance(u, spec)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notifier.Notify(kind.Bundle) },
		DeleteFunc: func(any) { notifier.Notify(kind.Bundle) },
		UpdateFunc: func(o, n any) {
			if a, b := instance(o), instance(n); a == nil || b == nil || rollout.Notable(a, b) {
				notifier.Notify(kind.Bundle)
			}
		},
	})
	return err
}
