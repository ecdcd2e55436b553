package shard_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/internal/testenv/suite"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// sharded returns a Composition of shard in ("" for none) with value v.
func sharded(ns, name, bundle, in, v string) *v1alpha1.Composition {
	c := suite.Composition(ns, name, bundle, `{"v":"`+v+`"}`)
	if in != "" {
		c.Labels = map[string]string{shard.Label: in}
	}
	return c
}

// configMapHas waits until the member ConfigMap name carries data v=want.
func configMapHas(t *testing.T, ns, name, want string) {
	t.Helper()
	testenv.Eventually(t, 0, "ConfigMap "+name+" v="+want, func() (bool, error) {
		cm := &corev1.ConfigMap{}
		err := env.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)
		return err == nil && cm.Data["v"] == want, err
	})
}

// TestShardsSplitCompositions: two sharded controllers and the unsharded
// one each reconcile their own Compositions only: none renders, writes or
// finalizes another's, a member's change reaches only its own shard, and a
// Composition moved between shards (or out of sharding) is taken over by
// the shard it moved to while the one it left writes nothing.
func TestShardsSplitCompositions(t *testing.T) {
	ns := testenv.Namespace(t, env.Client)
	b := env.Bundle(t, "shards-"+ns, map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Composition.Name }}\ndata:\n  v: {{ .Values.v | quote }}\n",
	})
	shardA, shardB := env.StartShard(t, "a"), env.StartShard(t, "b")

	env.MustCreate(t, sharded(ns, "in-a", b.Name, "a", "1"))
	inB := sharded(ns, "in-b", b.Name, "b", "1")
	env.MustCreate(t, inB)
	none := sharded(ns, "none", b.Name, "", "1")
	env.MustCreate(t, none)
	for _, name := range []string{"in-a", "in-b", "none"} {
		env.Condition(t, ns, name, v1alpha1.ConditionReady, metav1.ConditionTrue)
		configMapHas(t, ns, name, "1")
	}
	renders := func(c *testenv.Controller, name string) int64 { return c.Renders(ns, name) }
	for _, tc := range []struct {
		who     string
		c       *testenv.Controller
		own     string
		foreign []string
	}{
		{"shard a", shardA, "in-a", []string{"in-b", "none"}},
		{"shard b", shardB, "in-b", []string{"in-a", "none"}},
		{"unsharded", env.Controller, "none", []string{"in-a", "in-b"}},
	} {
		if renders(tc.c, tc.own) == 0 {
			t.Errorf("%s never rendered its Composition %s", tc.who, tc.own)
		}
		for _, f := range tc.foreign {
			if n := renders(tc.c, f); n != 0 {
				t.Errorf("%s rendered %s, another shard's Composition, %d times", tc.who, f, n)
			}
		}
	}

	// A change of shard b's Composition and of its member reach shard b
	// alone: shard a and the unsharded controller neither render it nor
	// write anything in the namespace (the unsharded one serves other
	// tests' parents, gone or going, elsewhere meanwhile).
	shardA.Settle(t, ns)
	env.Controller.Settle(t, ns)
	requestsA, requestsNone := shardA.Mark(), env.Controller.Mark()
	env.UpdateComposition(t, inB, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"v":"2"}`) })
	configMapHas(t, ns, "in-b", "2")
	if err := env.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "in-b"}}); err != nil {
		t.Fatalf("delete shard b's member: %v", err)
	}
	configMapHas(t, ns, "in-b", "2")
	env.Condition(t, ns, "in-b", v1alpha1.ConditionReady, metav1.ConditionTrue)
	for _, other := range []struct {
		who   string
		c     *testenv.Controller
		since testenv.Mark
	}{{"shard a", shardA, requestsA}, {"the unsharded controller", env.Controller, requestsNone}} {
		if w := other.c.WritesSince(other.since, ns); len(w) != 0 {
			t.Errorf("%s made %d writes in the namespace while only shard b's Composition changed: %q", other.who, len(w), w)
		}
		if n := renders(other.c, "in-b"); n != 0 {
			t.Errorf("%s rendered shard b's Composition %d times", other.who, n)
		}
	}

	// Moved from shard b to shard a: shard a takes it over (and follows
	// its next change), shard b lets go of it without a write.
	shardB.Settle(t, ns)
	requestsB := shardB.Mark()
	env.UpdateComposition(t, inB, func(c *v1alpha1.Composition) { c.Labels[shard.Label] = "a" })
	testenv.Eventually(t, 0, "shard a to render the Composition moved into it", func() (bool, error) {
		return renders(shardA, "in-b") > 0, nil
	})
	env.UpdateComposition(t, inB, func(c *v1alpha1.Composition) { c.Spec.Values.Raw = []byte(`{"v":"3"}`) })
	configMapHas(t, ns, "in-b", "3")
	env.Condition(t, ns, "in-b", v1alpha1.ConditionReady, metav1.ConditionTrue)
	// Out of sharding: the unsharded controller takes it over.
	env.UpdateComposition(t, inB, func(c *v1alpha1.Composition) {
		delete(c.Labels, shard.Label)
		c.Spec.Values.Raw = []byte(`{"v":"4"}`)
	})
	configMapHas(t, ns, "in-b", "4")
	if renders(env.Controller, "in-b") == 0 {
		t.Errorf("the unsharded controller did not render the Composition moved out of sharding")
	}
	// Deleted: its own controller finalizes it; shard b, which it left, never.
	if err := env.Delete(context.Background(), inB); err != nil {
		t.Fatalf("delete Composition: %v", err)
	}
	env.Gone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "in-b"}})
	env.Gone(t, inB)
	// Shard b's rollout controller counts its parents of the Bundle one
	// fewer, on the (cluster-scoped) Bundle and its revisions; nothing it
	// writes reaches the Composition, its members or its namespace.
	if w := shardB.WritesSince(requestsB, ns); len(w) != 0 {
		t.Errorf("shard b made %d writes in the namespace after its Composition moved to shard a: %q", len(w), w)
	}
}

// TestShardSelector: a shard selects its own label value only; the
// unsharded controller selects only what carries no shard label.
func TestShardSelector(t *testing.T) {
	for _, tc := range []struct {
		shard string
		set   map[string]string
		want  bool
	}{
		{"", nil, true},
		{"", map[string]string{"app": "x"}, true},
		{"", map[string]string{shard.Label: "a"}, false},
		{"", map[string]string{shard.Label: ""}, false},
		{"a", map[string]string{shard.Label: "a"}, true},
		{"a", map[string]string{shard.Label: "b"}, false},
		{"a", nil, false},
	} {
		if got := shard.Selector(tc.shard).Matches(labels.Set(tc.set)); got != tc.want {
			t.Errorf("shard %q selects %v = %v, want %v", tc.shard, tc.set, got, tc.want)
		}
	}
}

// TestShardNames: shard names are DNS-1123 labels, and each shard elects
// its own leader.
func TestShardNames(t *testing.T) {
	for _, ok := range []string{"", "a", "shard-1"} {
		if err := shard.Validate(ok); err != nil {
			t.Errorf("ValidateShard(%q) = %v, want nil", ok, err)
		}
	}
	for _, bad := range []string{"A", "a_b", "-a", "a.b", string(make([]byte, 64))} {
		if err := shard.Validate(bad); err == nil {
			t.Errorf("ValidateShard(%q) = nil, want an error", bad)
		}
	}
	ids := map[string]bool{}
	for _, s := range []string{"", "a", "b"} {
		ids[shard.LeaderElectionID(s)] = true
	}
	if len(ids) != 3 {
		t.Errorf("leader election ids of shards \"\", a, b are not distinct: %v", ids)
	}
}
