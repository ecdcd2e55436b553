package reconcile

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/queue"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// ServeKind starts a controller of kind's instances on base until ctx
// ends: its own cache of this shard's instances (so that stopping it drops
// its informer), its own member watches and memos. done is closed once
// the controller and its cache have stopped. The Bundle controller
// (package published) serves the kinds Bundles publish through it.
func ServeKind(ctx context.Context, base *engine.Engine, kind engine.Kind) (done <-chan struct{}, err error) {
	ctx, cancel := context.WithCancel(ctx)
	parents, err := cache.New(base.Config, cache.Options{
		Scheme:               base.Scheme,
		Mapper:               base.Mapper,
		DefaultLabelSelector: shard.Selector(base.Options.Shard),
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("cache of %s: %w", kind.GVK.Kind, err)
	}
	r := newController(base, &kind, parents)
	obj := instanceObject(kind.GVK)
	if err := parents.IndexField(ctx, obj, indexApplySetID, func(o client.Object) []string {
		return []string{applyset.ID(o.GetName(), o.GetNamespace(), kind.GVK.GroupKind())}
	}); err != nil {
		cancel()
		return nil, fmt.Errorf("index %s by ApplySet id: %w", kind.GVK.Kind, err)
	}
	name := "published-" + kind.GVK.GroupKind().String()
	c, err := controller.NewUnmanaged(name, controller.Options{
		Reconciler:              r,
		MaxConcurrentReconciles: max(base.Options.MaxConcurrentReconciles, 1),
		NewQueue:                queue.ByNamespace,
		SkipNameValidation:      ptr.To(true), // a kind served again reuses its name
		Logger:                  ctrl.Log.WithName("controller").WithValues("kind", kind.GVK.GroupKind().String()),
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("controller of %s: %w", kind.GVK.Kind, err)
	}
	r.watches.Bind(c, handler.EnqueueRequestsFromMapFunc(r.parentOf))
	if err := r.notifyRollout(ctx, parents, kind); err != nil {
		cancel()
		return nil, err
	}
	for _, src := range []source.Source{
		source.Kind(parents, client.Object(obj), &handler.EnqueueRequestForObject{}, parentPredicates()),
		source.Kind(base.Cache, client.Object(&v1alpha1.Bundle{}), r.bundleEvents()),
		source.Kind(base.Cache, client.Object(&corev1.Namespace{}), handler.EnqueueRequestsFromMapFunc(r.parentsInNamespace), labelsChanged()),
		source.Channel(base.APIs.Subscribe(ctx), handler.EnqueueRequestsFromMapFunc(r.allParents)),
		source.Channel(base.Authority.SubscribeKind(ctx, r.parentResource()), handler.EnqueueRequestsFromMapFunc(r.allParents)),
		r.lookupSource(),
	} {
		if err := c.Watch(src); err != nil {
			cancel()
			return nil, fmt.Errorf("controller of %s: %w", kind.GVK.Kind, err)
		}
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		defer cancel()
		log := ctrl.Log.WithName("published").WithValues("kind", kind.GVK.String(), "bundle", kind.Bundle)
		go func() {
			if err := parents.Start(ctx); err != nil {
				log.Error(err, "cache of the published kind stopped")
			}
		}()
		log.Info("serving the published kind")
		defer base.Serve(kind.GVK.GroupKind(), r)()
		if err := c.Start(ctx); err != nil {
			log.Error(err, "controller of the published kind stopped")
		}
		log.Info("stopped serving the published kind")
	}()
	return stopped, nil
}

// instanceObject is an empty instance of a published kind, to watch or read.
func instanceObject(gvk schema.GroupVersionKind) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	return u
}

// parentGVK is the kind of parents r serves.
func (r *Controller) parentGVK() schema.GroupVersionKind {
	if r.kind != nil {
		return r.kind.GVK
	}
	return v1alpha1.GroupVersion.WithKind("Composition")
}

// listParents lists the parents r serves, from its cache, as requests.
func (r *Controller) listParents(ctx context.Context, opts ...client.ListOption) ([]ctrlreconcile.Request, error) {
	var list client.ObjectList = &v1alpha1.CompositionList{}
	if r.kind != nil {
		u := &unstructured.UnstructuredList{}
		u.SetGroupVersionKind(r.kind.GVK.GroupVersion().WithKind(r.kind.GVK.Kind + "List"))
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

// parentOf maps a member to the parent whose ApplySet id it carries,
// through the shard-selected cache: a member of another shard maps to nothing.
func (r *Controller) parentOf(ctx context.Context, o client.Object) []ctrlreconcile.Request {
	id := o.GetLabels()[applyset.LabelPartOf]
	if id == "" {
		return nil
	}
	reqs, err := r.listParents(ctx, client.MatchingFields{indexApplySetID: id})
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list parents by ApplySet id", "id", id)
	}
	return reqs
}

// parentsOfBundle maps a Bundle to the parents that render it: the
// Compositions that name it, or every instance of the kind it publishes.
func (r *Controller) parentsOfBundle(ctx context.Context, o client.Object) []ctrlreconcile.Request {
	var opts []client.ListOption
	switch {
	case r.kind == nil:
		opts = append(opts, client.MatchingFields{indexBundle: o.GetName()})
	case r.kind.Bundle != o.GetName():
		return nil
	}
	reqs, err := r.listParents(ctx, opts...)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list parents by Bundle", "bundle", o.GetName())
	}
	return reqs
}

// allParents maps a change of the served APIs to every parent r serves.
func (r *Controller) allParents(ctx context.Context, _ client.Object) []ctrlreconcile.Request {
	reqs, err := r.listParents(ctx)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list parents after the served APIs changed")
	}
	return reqs
}

// parentsInNamespace maps a Namespace to the parents r serves in it: a
// change of its labels may change whether their Bundle's
// spec.namespaceSelector selects it (see preparer.allowed).
func (r *Controller) parentsInNamespace(ctx context.Context, o client.Object) []ctrlreconcile.Request {
	reqs, err := r.listParents(ctx, client.InNamespace(o.GetName()))
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list parents in a namespace", "namespace", o.GetName())
	}
	return reqs
}

// labelsChanged passes the updates of an object that change its labels.
func labelsChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
		},
	}
}
