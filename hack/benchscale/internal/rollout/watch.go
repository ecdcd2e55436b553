package rollout

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/harness"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/wait"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/watch"
	"github.com/stencil-dev/stencil/reconcile/engine"
)

// watcher follows the parents' revisions and readiness and the Bundle's
// rollout.
type watcher struct {
	mu      sync.Mutex
	on      map[string]string   // parent → the revision hash of its last render
	ready   map[string]bool     // parent → Ready for its generation
	ever    map[string][]string // revision hash → parents ever seen on it
	rollout v1alpha1.RolloutStatus
	// waveAt maps a wave number to when it was first seen started.
	waveAt  map[int32]time.Time
	changes *wait.Changes
}

func newWatcher() *watcher {
	return &watcher{on: map[string]string{}, ready: map[string]bool{}, ever: map[string][]string{}, waveAt: map[int32]time.Time{}, changes: wait.NewChanges()}
}

func (w *watcher) observe(o any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch o := o.(type) {
	case *v1alpha1.Composition:
		key := o.Namespace + "/" + o.Name
		if h := o.Status.BundleRevision; h != "" && w.on[key] != h {
			w.on[key] = h
			if !slices.Contains(w.ever[h], key) {
				w.ever[h] = append(w.ever[h], key)
			}
		}
		w.ready[key] = o.Status.ObservedGeneration == o.Generation && meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionReady)
	case *v1alpha1.Bundle:
		if o.Name != bundleName {
			return
		}
		for _, r := range o.Status.Rollouts {
			if r.Shard == "" {
				w.rollout = r
				if _, seen := w.waveAt[r.Wave]; r.Target != "" && !seen {
					w.waveAt[r.Wave] = time.Now()
				}
			}
		}
	}
	w.changes.Notify()
}

// readyOn counts the parents Ready on revision hash.
func (w *watcher) readyOn(hash string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for key, h := range w.on {
		if h == hash && w.ready[key] {
			n++
		}
	}
	return n
}

// state is the Bundle's rollout (its unsharded one) last seen.
func (w *watcher) state() v1alpha1.RolloutStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *w.rollout.DeepCopy()
}

// forgetWaves forgets when the waves seen so far started, before a new
// rollout.
func (w *watcher) forgetWaves() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.waveAt = map[int32]time.Time{}
}

// waveStarts returns the wave numbers seen started, in order, and when
// each was.
func (w *watcher) waveStarts() ([]int32, map[int32]time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.waveAt)), maps.Clone(w.waveAt)
}

// everOn counts the parents ever seen on revision hash.
func (w *watcher) everOn(hash string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.ever[hash])
}

// until waits until cond holds, looking again on every change.
func (w *watcher) until(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	return w.changes.Until(ctx, timeout, what, cond)
}

// startWatch watches the rollout namespaces' Compositions and the Bundles.
func startWatch(ctx context.Context, h *harness.Harness) (*watcher, error) {
	scheme, err := engine.NewScheme()
	if err != nil {
		return nil, err
	}
	namespaces := map[string]cache.Config{}
	for i := range h.Options.RolloutNamespaces {
		namespaces[namespace(i)] = cache.Config{}
	}
	c, err := cache.New(h.AdminRC, cache.Options{Scheme: scheme, DefaultNamespaces: namespaces})
	if err != nil {
		return nil, err
	}
	w := newWatcher()
	if err := watch.Follow(ctx, c, "the rollout watch's cache", w.observe, &v1alpha1.Composition{}, &v1alpha1.Bundle{}); err != nil {
		return nil, err
	}
	return w, nil
}
