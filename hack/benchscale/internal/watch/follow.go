package watch

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Follow starts c's informers for objs, each added or updated object
// handed to observe, and waits until they have synced; what names the
// cache in the error when they do not.
func Follow(ctx context.Context, c cache.Cache, what string, observe func(obj any), objs ...client.Object) error {
	for _, obj := range objs {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { observe(o) },
			UpdateFunc: func(_, o any) { observe(o) },
		}); err != nil {
			return err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("%s did not sync", what)
	}
	return nil
}
