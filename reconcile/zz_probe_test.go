package reconcile_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/internal/testenv"
)

func TestZZProbe(t *testing.T) {
	ns := testenv.Namespace(t, k)
	ctx := context.Background()
	try := func(what string, set func(u *unstructured.Unstructured)) {
		for _, kind := range []string{"cm", "comp"} {
			mk := func(name string) *unstructured.Unstructured {
				u := &unstructured.Unstructured{}
				if kind == "cm" {
					u.SetAPIVersion("v1")
					u.SetKind("ConfigMap")
				} else {
					u.SetAPIVersion("stencil.dev/v1alpha1")
					u.SetKind("Composition")
					u.Object["spec"] = map[string]any{"bundle": "x"}
				}
				u.SetNamespace(ns)
				u.SetName(name)
				return u
			}
			absent := mk(what + "-absent-" + kind)
			set(absent)
			err := k.Apply(ctx, client.ApplyConfigurationFromUnstructured(absent), client.FieldOwner("probe"))
			t.Logf("%s %s absent: err=%v uid=%s rv=%s mf=%v", what, kind, err, absent.GetUID(), absent.GetResourceVersion(), absent.GetManagedFields())
			present := mk(what + "-present-" + kind)
			if err := k.Apply(ctx, client.ApplyConfigurationFromUnstructured(present.DeepCopy()), client.FieldOwner("admin")); err != nil {
				t.Fatal(err)
			}
			set(present)
			err = k.Apply(ctx, client.ApplyConfigurationFromUnstructured(present), client.FieldOwner("probe"))
			t.Logf("%s %s present: err=%v", what, kind, err)
		}
	}
	try("uid", func(u *unstructured.Unstructured) { u.SetUID(types.UID("00000000-0000-0000-0000-000000000000")) })
	try("rv", func(u *unstructured.Unstructured) { u.SetResourceVersion("1") })
}
