package rollout

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

// TestWatcherObserves: a parent counts as Ready on the revision it last
// rendered, for its generation; every revision it was ever seen on keeps
// it; a wave's start is noted once; an event wakes a wait.
func TestWatcherObserves(t *testing.T) {
	w := newWatcher()
	parent := func(name, hash string, ready bool) *v1alpha1.Composition {
		c := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: namespace(0), Name: name, Generation: 1}}
		c.Status.ObservedGeneration, c.Status.BundleRevision = 1, hash
		st := metav1.ConditionFalse
		if ready {
			st = metav1.ConditionTrue
		}
		c.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: st}}
		return c
	}
	w.observe(parent("a", "h1", true))
	w.observe(parent("b", "h1", false))
	w.observe(parent("a", "h2", true))
	if got := w.readyOn("h1"); got != 0 {
		t.Errorf("readyOn(h1) = %d, want 0 (a moved on, b is not Ready)", got)
	}
	if got := w.readyOn("h2"); got != 1 {
		t.Errorf("readyOn(h2) = %d, want 1", got)
	}
	if got := w.everOn("h1"); got != 2 {
		t.Errorf("everOn(h1) = %d, want 2", got)
	}

	bundle := func(wave int32) *v1alpha1.Bundle {
		b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: bundleName}}
		b.Status.Rollouts = []v1alpha1.RolloutStatus{{Target: "t", Wave: wave}}
		return b
	}
	w.observe(bundle(1))
	starts, at := w.waveStarts()
	w.observe(bundle(1))
	if _, again := w.waveStarts(); len(starts) != 1 || !again[1].Equal(at[1]) {
		t.Errorf("wave starts %v at %v, then %v: want wave 1 noted once", starts, at, again)
	}
	other := bundle(2)
	other.Name = "another"
	w.observe(other)
	if starts, _ := w.waveStarts(); len(starts) != 1 {
		t.Errorf("another Bundle's wave was noted: %v", starts)
	}
	w.forgetWaves()
	go func() {
		time.Sleep(10 * time.Millisecond)
		w.observe(bundle(2))
	}()
	if err := w.until(context.Background(), time.Minute, "wave 2", func() bool { return w.state().Wave == 2 }); err != nil {
		t.Fatal(err)
	}
	if starts, _ := w.waveStarts(); len(starts) != 1 || starts[0] != 2 {
		t.Errorf("after forgetWaves, wave starts %v, want [2]", starts)
	}
}
