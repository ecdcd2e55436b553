package applyset

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func TestFlapDetector(t *testing.T) {
	name := types.NamespacedName{Namespace: "ns", Name: "app"}
	cm := &unstructured.Unstructured{}
	cm.SetKind("ConfigMap")
	cm.SetName("flappy")
	cm.SetNamespace("ns")
	write := []ApplyResult{{Object: cm, Action: Configured, Changed: []string{"data.a"}}}
	unchanged := []ApplyResult{{Object: cm, Action: Unchanged}}
	start := time.Now()
	var d FlapDetector

	// Writes under the same inputs, one a minute: the fifth flaps.
	for i := range flapWrites - 1 {
		if f, ok := d.Record(name, "k1", write, start.Add(time.Duration(i)*time.Minute)); ok {
			t.Fatalf("write %d: flapping %v, want not yet", i+1, f)
		}
	}
	if _, ok := d.Record(name, "k1", unchanged, start.Add(4*time.Minute)); ok {
		t.Fatalf("an unchanged apply counted as a write")
	}
	f, ok := d.Record(name, "k1", write, start.Add(5*time.Minute))
	if !ok || f.member != "ConfigMap/ns/flappy" || f.writes != flapWrites || !cmp.Equal(f.fields, []string{"data.a"}) {
		t.Fatalf("fifth write: got %+v, %v; want ConfigMap/ns/flappy flapping on data.a", f, ok)
	}

	// New inputs start afresh.
	if _, ok := d.Record(name, "k2", write, start.Add(6*time.Minute)); ok {
		t.Errorf("flapping right after the inputs changed")
	}
	// Writes further apart than the window never add up.
	d.Forget(name)
	for i := range 2 * flapWrites {
		if _, ok := d.Record(name, "k1", write, start.Add(time.Duration(i)*(flapWindow/2+time.Minute))); ok {
			t.Fatalf("write %d, %s apart: flapping", i+1, flapWindow/2+time.Minute)
		}
	}
	if n := len(d.history[name].writes["ConfigMap/ns/flappy"]); n > flapWrites {
		t.Errorf("history holds %d writes, want at most %d", n, flapWrites)
	}
	d.Forget(name)
	if len(d.history) != 0 {
		t.Errorf("history of a forgotten Composition kept")
	}
}
