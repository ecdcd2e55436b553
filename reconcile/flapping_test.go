package reconcile

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

func TestChangedFields(t *testing.T) {
	tests := []struct {
		name          string
		desired, live map[string]any
		want          []string
	}{
		{"same", map[string]any{"data": map[string]any{"a": "1"}}, map[string]any{"data": map[string]any{"a": "1", "b": "2"}}, nil},
		{"changed value", map[string]any{"data": map[string]any{"a": "1"}}, map[string]any{"data": map[string]any{"a": "2"}}, []string{"data.a"}},
		{"missing field", map[string]any{"spec": map[string]any{"replicas": int64(2)}}, map[string]any{"spec": map[string]any{}}, []string{"spec.replicas"}},
		{"list element", map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}},
			map[string]any{"spec": map[string]any{"ports": []any{map[string]any{"port": int64(81), "protocol": "TCP"}}}}, []string{"spec.ports[0].port"}},
		{"list length", map[string]any{"args": []any{"a"}}, map[string]any{"args": []any{"a", "b"}}, []string{"args"}},
		{"quantities compare by value", map[string]any{"cpu": "0.5"}, map[string]any{"cpu": "500m"}, nil},
		{"bounded", map[string]any{"a": "1", "b": "1", "c": "1", "d": "1", "e": "1", "f": "1"}, map[string]any{}, []string{"a", "b", "c", "d", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, changedFields(tt.desired, tt.live, maxChangedFields)); diff != "" {
				t.Errorf("changedFields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlapDetector(t *testing.T) {
	name := types.NamespacedName{Namespace: "ns", Name: "app"}
	cm := obj("ConfigMap", "flappy")
	cm.SetNamespace("ns")
	write := []ApplyResult{{Object: cm, Action: Configured, Changed: []string{"data.a"}}}
	unchanged := []ApplyResult{{Object: cm, Action: Unchanged}}
	start := time.Now()
	var d flapDetector

	// Writes under the same inputs, one a minute: the fifth flaps.
	for i := range flapWrites - 1 {
		if f, ok := d.record(name, "k1", write, start.Add(time.Duration(i)*time.Minute)); ok {
			t.Fatalf("write %d: flapping %v, want not yet", i+1, f)
		}
	}
	if _, ok := d.record(name, "k1", unchanged, start.Add(4*time.Minute)); ok {
		t.Fatalf("an unchanged apply counted as a write")
	}
	f, ok := d.record(name, "k1", write, start.Add(5*time.Minute))
	if !ok || f.member != "ConfigMap/ns/flappy" || f.writes != flapWrites || !cmp.Equal(f.fields, []string{"data.a"}) {
		t.Fatalf("fifth write: got %+v, %v; want ConfigMap/ns/flappy flapping on data.a", f, ok)
	}

	// New inputs start afresh.
	if _, ok := d.record(name, "k2", write, start.Add(6*time.Minute)); ok {
		t.Errorf("flapping right after the inputs changed")
	}
	// Writes further apart than the window never add up.
	d.forget(name)
	for i := range 2 * flapWrites {
		if _, ok := d.record(name, "k1", write, start.Add(time.Duration(i)*(flapWindow/2+time.Minute))); ok {
			t.Fatalf("write %d, %s apart: flapping", i+1, flapWindow/2+time.Minute)
		}
	}
	if n := len(d.history[name].writes["ConfigMap/ns/flappy"]); n > flapWrites {
		t.Errorf("history holds %d writes, want at most %d", n, flapWrites)
	}
	d.forget(name)
	if len(d.history) != 0 {
		t.Errorf("history of a forgotten Composition kept")
	}
}
