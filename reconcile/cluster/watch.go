package cluster

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// MetadataSource is a source of requests from a metadata-only watch of
// gvr (what names it in errors), narrowed by tweak, managedFields
// dropped: every add, update and delete calls enqueue with the object (a
// deleted one unwrapped from its tombstone).
func MetadataSource(md metadata.Interface, gvr schema.GroupVersionResource, what string, tweak func(*metav1.ListOptions),
	enqueue func(workqueue.TypedRateLimitingInterface[ctrlreconcile.Request], metav1.Object)) source.Source {
	return NamespacedMetadataSource(md, gvr, "", what, tweak, func(_ context.Context, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request], m metav1.Object) {
		enqueue(q, m)
	})
}

// NamespacedMetadataSource is MetadataSource for the objects of one
// namespace ("" is every namespace), its enqueue given the context the
// source was started with.
func NamespacedMetadataSource(md metadata.Interface, gvr schema.GroupVersionResource, namespace, what string, tweak func(*metav1.ListOptions),
	enqueue func(context.Context, workqueue.TypedRateLimitingInterface[ctrlreconcile.Request], metav1.Object)) source.Source {
	return source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[ctrlreconcile.Request]) error {
		factory := metadatainformer.NewFilteredSharedInformerFactory(md, 0, namespace, tweak)
		handle := func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if m, ok := obj.(metav1.Object); ok {
				enqueue(ctx, q, m)
			}
		}
		inf := factory.ForResource(gvr).Informer()
		if err := inf.SetTransform(StripManagedFields); err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    handle,
			UpdateFunc: func(_, n any) { handle(n) },
			DeleteFunc: handle,
		}); err != nil {
			return fmt.Errorf("watch %s: %w", what, err)
		}
		factory.Start(ctx.Done())
		return nil
	})
}

// StripManagedFields keeps a metadata watch's cache small: only the events matter.
func StripManagedFields(obj any) (any, error) {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		m.ManagedFields = nil
	}
	return obj, nil
}
