package reconcile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/queue"
	"github.com/stencil-dev/stencil/reconcile/shard"
	"github.com/stencil-dev/stencil/reconcile/triggers"
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
	if err := parents.IndexField(ctx, obj, triggers.IndexApplySetID, func(o client.Object) []string {
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
	r.watches.Bind(c, handler.EnqueueRequestsFromMapFunc(r.triggers.MemberOf))
	if err := r.notifyRollout(ctx, parents, kind); err != nil {
		cancel()
		return nil, err
	}
	for _, src := range []source.Source{
		source.Kind(parents, client.Object(obj), &handler.EnqueueRequestForObject{}, triggers.ParentPredicates()),
		source.Kind(base.Cache, client.Object(&v1alpha1.Bundle{}), r.triggers.BundleEvents()),
		source.Kind(base.Cache, client.Object(&corev1.Namespace{}), handler.EnqueueRequestsFromMapFunc(r.triggers.InNamespace), triggers.LabelsChanged()),
		source.Channel(base.APIs.Subscribe(ctx), handler.EnqueueRequestsFromMapFunc(r.triggers.All)),
		source.Channel(base.Authority.SubscribeKind(ctx, r.parentResource()), handler.EnqueueRequestsFromMapFunc(r.triggers.All)),
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
