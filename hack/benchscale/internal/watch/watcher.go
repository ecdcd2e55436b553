package watch

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/fixture"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
)

// Watcher follows Compositions and Deployments, noting when each
// Composition was last seen Ready for its generation and when a
// Deployment turned Current, as the events arrive.
type Watcher struct {
	mu sync.Mutex
	// ready maps namespace/name to whether the Composition is Ready=True
	// with status.observedGeneration equal to its generation.
	ready map[string]bool
	// readyAt maps namespace/name to the generation it was first seen
	// Ready for, with the time.
	readyAt map[string]genTime
	// current maps namespace/name of a Deployment to the first time it
	// was seen Current with its image.
	current map[string]imageTime
	// output maps namespace/name of a Composition to the value of its
	// status.outputs.extra (JSON) and when it was first seen with it.
	output  map[string]valueTime
	changes *wait.Changes
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

// Start starts informers over c's namespaces (a cache of the Watcher's
// own) and returns once they have synced.
func Start(ctx context.Context, c cache.Cache) (*Watcher, error) {
	w := &Watcher{ready: map[string]bool{}, readyAt: map[string]genTime{}, current: map[string]imageTime{}, output: map[string]valueTime{}, changes: wait.NewChanges()}
	if err := Follow(ctx, c, "the harness's cache", w.observe, &v1alpha1.Composition{}, &appsv1.Deployment{}); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *Watcher) observe(o any) {
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
		if v, has := o.Status.Outputs[fixture.OutputName]; has && w.output[key].value != string(v.Raw) {
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
	w.changes.Notify()
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

// ReadyCount counts the Ready Compositions of namespace.
func (w *Watcher) ReadyCount(namespace string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for key, ok := range w.ready {
		if ok && strings.HasPrefix(key, namespace+"/") {
			n++
		}
	}
	return n
}

// Until waits until cond holds, checking it on every event (wait.Changes).
func (w *Watcher) Until(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	return w.changes.Until(ctx, timeout, what, cond)
}

// ReadySince returns when the Composition key (namespace/name) was first
// seen Ready for gen.
func (w *Watcher) ReadySince(key string, gen int64) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.readyAt[key]
	return r.at, r.gen == gen
}

// CurrentSince returns when the Deployment key was first seen Current with
// image.
func (w *Watcher) CurrentSince(key, image string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.current[key]
	return c.at, c.image == image
}

// OutputSince returns when the Composition key was first seen with
// status.outputs.extra equal to value (JSON).
func (w *Watcher) OutputSince(key, value string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	o, ok := w.output[key]
	return o.at, ok && o.value == value
}
