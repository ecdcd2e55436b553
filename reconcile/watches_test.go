package reconcile_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/applyset"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// TestMemberIndex: the part-of index may be added to one kind's cache by
// several reconcilers (Compositions', each published kind's) sharing the
// manager's cache, and a list through it returns one set's members only.
func TestMemberIndex(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := testenv.Namespace(t, k)
	for name, set := range map[string]string{"a1": "set-a", "a2": "set-a", "b1": "set-b"} {
		mustCreate(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{applyset.LabelPartOf: set}}})
	}
	scheme, err := engine.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	opts := shard.CacheOptions("")
	opts.Scheme = scheme
	c, err := cache.New(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	for i := range 2 {
		if err := reconcile.IndexMembers(ctx, c, u); err != nil {
			t.Fatalf("registration %d of the index: %v", i+1, err)
		}
	}
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("v1")
	list.SetKind("ConfigMapList")
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingFields{reconcile.IndexPartOf: "set-a"}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range list.Items {
		got = append(got, o.GetName())
	}
	slices.Sort(got)
	if want := []string{"a1", "a2"}; !slices.Equal(got, want) {
		t.Errorf("members of set-a listed through the index: %v, want %v", got, want)
	}
}
