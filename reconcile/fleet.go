package reconcile

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/rollout"
	"github.com/stencil-dev/stencil/reconcile/triggers"
)

// A Bundle's parents as a fleet: what the rollout controller (package
// rollout) reads of them, and which of them a Bundle's change brings a
// pass of.

// Parents lists the parents of Bundle bundle r serves, from its cache,
// with their effective specs (engine.Fleet): the Compositions that name
// it, or every instance of the kind it publishes.
func (r *Controller) Parents(ctx context.Context, bundle string) ([]applyset.Parent, error) {
	if r.kind == nil {
		comps := &v1alpha1.CompositionList{}
		if err := r.parents.List(ctx, comps, client.MatchingFields{triggers.IndexBundle: bundle}); err != nil {
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
