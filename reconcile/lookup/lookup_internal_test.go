package lookup

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tlookup "github.com/stencil-dev/stencil/templates/lookup"
)

func configMap(ns, name, v string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"v": v}}}
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetManagedFields(nil)
	u.Object["metadata"].(map[string]any)["managedFields"] = []any{map[string]any{"manager": "stencil"}}
	return u
}

// TestOverlay: the objects a pass wrote stand for their informer copies,
// for an object and in a list, without managedFields; others are left.
func TestOverlay(t *testing.T) {
	one := tlookup.Key{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a", Name: "x"}
	list := tlookup.Key{APIVersion: "v1", Kind: "ConfigMap", Namespace: "a"}
	cached := map[string]any{"apiVersion": "v1", "kind": "List", "items": []any{
		configMap("a", "w", "old").Object, configMap("a", "x", "old").Object,
	}}
	written := []*unstructured.Unstructured{configMap("a", "x", "new"), configMap("a", "y", "new"), configMap("b", "x", "other"), nil}

	got := overlay(configMap("a", "x", "old").Object, one, written)
	if got["data"].(map[string]any)["v"] != "new" {
		t.Errorf("object: %v, want the written one", got["data"])
	}
	if _, ok := got["metadata"].(map[string]any)["managedFields"]; ok {
		t.Errorf("object: managedFields kept")
	}
	items := overlay(cached, list, written)["items"].([]any)
	var names, values []string
	for _, it := range items {
		m := it.(map[string]any)
		names = append(names, m["metadata"].(map[string]any)["name"].(string))
		values = append(values, m["data"].(map[string]any)["v"].(string))
	}
	if want := []string{"w", "x", "y"}; !equal(names, want) || !equal(values, []string{"old", "new", "new"}) {
		t.Errorf("list: %v %v, want w, x, y with x and y written", names, values)
	}
	if got := overlay(nil, tlookup.Key{APIVersion: "v1", Kind: "Secret", Namespace: "a", Name: "x"}, written); got != nil {
		t.Errorf("another kind: %v, want the cached answer (none)", got)
	}
	if got := overlay(nil, list, nil); got != nil {
		t.Errorf("nothing written: %v", got)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReadersAndSweep: a change of an object a parent's last render read
// (or of a list it read) brings that parent back through its kind's
// queue, and no other; a parent that reads anew forgets what it read
// before; an informer no parent reads from is stopped after idleRounds
// sweeps, one that is read from is kept.
func TestReadersAndSweep(t *testing.T) {
	s := New(nil, nil, nil)
	kind := schema.GroupKind{Group: "stencil.dev", Kind: "Composition"}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	s.Bind(kind, q)
	cms := informerKey{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, namespace: "a"}
	secrets := informerKey{gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, namespace: "a"}
	stopped := map[informerKey]bool{}
	for _, k := range []informerKey{cms, secrets} {
		_, cancel := context.WithCancel(context.Background())
		s.informers[k] = &informer{stop: func() { stopped[k] = true; cancel() }}
	}
	one := Parent{Kind: kind, Key: types.NamespacedName{Namespace: "a", Name: "one"}}
	two := Parent{Kind: kind, Key: types.NamespacedName{Namespace: "a", Name: "two"}}
	s.record(one, []readKey{{inf: cms, name: "x"}}, nil)
	s.record(two, []readKey{{inf: cms, name: ""}}, map[string]bool{"v1 Secret a y": true})

	s.changed(cms, configMap("a", "x", "v"))
	if got := drain(q); !equal(got, []string{"a/one", "a/two"}) {
		t.Errorf("x changed: %v, want one (read it) and two (listed its kind)", got)
	}
	s.changed(cms, configMap("a", "z", "v"))
	if got := drain(q); !equal(got, []string{"a/two"}) {
		t.Errorf("z changed: %v, want two alone", got)
	}
	s.record(one, []readKey{{inf: cms, name: "w"}}, nil)
	s.changed(cms, configMap("a", "x", "v"))
	if got := drain(q); !equal(got, []string{"a/two"}) {
		t.Errorf("x changed after one read w instead: %v, want two alone", got)
	}
	if !s.denied[two]["v1 Secret a y"] {
		t.Errorf("two's refused lookup not kept for Peek")
	}

	for range idleRounds {
		s.sweep()
	}
	if !stopped[secrets] || s.informers[secrets] != nil {
		t.Errorf("the Secrets informer nobody reads was not stopped")
	}
	if stopped[cms] || s.informers[cms] == nil {
		t.Errorf("the ConfigMaps informer two parents read was stopped")
	}
	s.Forget(one)
	s.Forget(two)
	for range idleRounds {
		s.sweep()
	}
	if !stopped[cms] {
		t.Errorf("the ConfigMaps informer was not stopped once its parents were forgotten")
	}
}

// drain returns the keys in q, sorted.
func drain(q workqueue.TypedRateLimitingInterface[reconcile.Request]) []string {
	var out []string
	for q.Len() > 0 {
		r, _ := q.Get()
		out = append(out, r.String())
		q.Done(r)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
