package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// watcher follows Compositions and Deployments through informers, noting
// when each Composition was last seen Ready for its generation and when a
// Deployment turned Current, as the events arrive.
type watcher struct {
	mu sync.Mutex
	// ready maps namespace/name to whether the Composition is Ready=True
	// with status.observedGeneration equal to its generation.
	ready map[string]bool
	// readyGen maps namespace/name to the generation it was first seen
	// Ready for, with the time.
	readyAt map[string]genTime
	// current maps namespace/name of a Deployment to the first time it
	// was seen Current with its image.
	current map[string]imageTime
	// output maps namespace/name of a Composition to the value of its
	// status.outputs.extra (JSON) and when it was first seen with it.
	output  map[string]valueTime
	changed chan struct{}
}

type valueTime struct {
	value string
	at    time.Time
}

type genTime struct {
	gen int64
	at  time.Time
}

type imageTime struct {
	image string
	at    time.Time
}

// startWatcher starts informers over namespaces in a cache of its own.
func startWatcher(ctx context.Context, c cache.Cache) (*watcher, error) {
	w := &watcher{ready: map[string]bool{}, readyAt: map[string]genTime{}, current: map[string]imageTime{}, output: map[string]valueTime{}, changed: make(chan struct{}, 1)}
	for _, obj := range []client.Object{&v1alpha1.Composition{}, &appsv1.Deployment{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { w.observe(o) },
			UpdateFunc: func(_, o any) { w.observe(o) },
		}); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the harness's cache did not sync")
	}
	return w, nil
}

func (w *watcher) observe(o any) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch o := o.(type) {
	case *v1alpha1.Composition:
		key := o.Namespace + "/" + o.Name
		ok := o.Status.ObservedGeneration == o.Generation && meta.IsStatusConditionTrue(o.Status.Conditions, "Ready")
		w.ready[key] = ok
		if ok && w.readyAt[key].gen != o.Generation {
			w.readyAt[key] = genTime{gen: o.Generation, at: now}
		}
		if v, has := o.Status.Outputs[outputName]; has && w.output[key].value != string(v.Raw) {
			w.output[key] = valueTime{value: string(v.Raw), at: now}
		}
	case *appsv1.Deployment:
		key := o.Namespace + "/" + o.Name
		image := ""
		if cs := o.Spec.Template.Spec.Containers; len(cs) > 0 {
			image = cs[0].Image
		}
		if w.current[key].image == image {
			break
		}
		if deploymentCurrent(o) {
			w.current[key] = imageTime{image: image, at: now}
		}
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// deploymentCurrent reports whether kstatus computes Current for d.
func deploymentCurrent(d *appsv1.Deployment) bool {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	if err != nil {
		return false
	}
	obj := &unstructured.Unstructured{Object: u}
	// Informers drop apiVersion and kind, which choose kstatus's rule for
	// Deployments (every replica updated and available).
	obj.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
	res, err := status.Compute(obj)
	return err == nil && res.Status == status.CurrentStatus
}

// readyCount counts the Ready Compositions of namespace.
func (w *watcher) readyCount(namespace string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for key, ok := range w.ready {
		if ok && len(key) > len(namespace) && key[:len(namespace)+1] == namespace+"/" {
			n++
		}
	}
	return n
}

// waitFor waits until cond holds, checking it on every event.
func (w *watcher) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.After(timeout)
	for !cond() {
		select {
		case <-w.changed:
		case <-time.After(time.Second):
		case <-deadline:
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// readySince returns when the Composition was first seen Ready for gen.
func (w *watcher) readySince(key string, gen int64) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.readyAt[key]
	return r.at, r.gen == gen
}

// currentSince returns when the Deployment was first seen Current with image.
func (w *watcher) currentSince(key, image string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.current[key]
	return c.at, c.image == image
}

// outputSince returns when the Composition key was first seen with
// status.outputs.extra equal to value (JSON).
func (w *watcher) outputSince(key, value string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.output[key]
	return o.at, ok && o.value == value
}
