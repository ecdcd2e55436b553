package plan_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/cluster"
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/templates"
)

// TestPlanOwnerReferences: a member of the parent's namespace is planned
// with the parent's owner reference, as its controller unless the render
// names one; one of another namespace, a cluster-scoped one, one kept
// from deletion, and every member of a parent with no UID (offline) are
// planned without.
func TestPlanOwnerReferences(t *testing.T) {
	cm := func(name, meta string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" + meta
	}
	files := map[string]string{
		"templates/a.yaml":      cm("a", ""),
		"templates/other.yaml":  cm("other", "  namespace: elsewhere\n"),
		"templates/kept.yaml":   cm("kept", "  annotations:\n    helm.sh/resource-policy: keep\n"),
		"templates/pinned.yaml": cm("pinned", "  annotations:\n    stencil.dev/prune: disabled\n"),
		"templates/owned.yaml":  cm("owned", "  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: boss, uid: b, controller: true}\n"),
		"templates/pc.yaml":     "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: high\nvalue: 1000\n",
	}
	perms := v1alpha1.BundlePermissions{Namespaces: []string{"elsewhere"}, ClusterScoped: []v1alpha1.GroupKind{{Group: "scheduling.k8s.io", Kind: "PriorityClass"}}}
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: v1alpha1.BundleSpec{Files: files, Permissions: perms}})
	if err != nil {
		t.Fatal(err)
	}
	comp := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c", UID: "u"}, Spec: v1alpha1.CompositionSpec{Bundle: "b"}}
	ref := func(controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "stencil.dev/v1alpha1", Kind: "Composition", Name: "c", UID: "u", Controller: controller}
	}
	for _, tc := range []struct {
		name string
		live *plan.LiveComposition
		want map[string][]metav1.OwnerReference
	}{
		{"online", plan.Live(comp), map[string][]metav1.OwnerReference{
			"a":     {ref(new(true))},
			"owned": {{APIVersion: "v1", Kind: "ConfigMap", Name: "boss", UID: "b", Controller: new(true)}, ref(nil)},
		}},
		{"offline", nil, map[string][]metav1.OwnerReference{
			"owned": {{APIVersion: "v1", Kind: "ConfigMap", Name: "boss", UID: "b", Controller: new(true)}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := plan.NewPlan(context.Background(), testenv.InProcess{}, b, plan.RenderInput(comp, tc.live, cluster.OfflineCapabilities()), cluster.OfflineAPIs())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]metav1.OwnerReference{}
			for _, o := range p.Objects {
				if refs := o.GetOwnerReferences(); len(refs) > 0 {
					got[o.GetName()] = refs
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("owner references by member (-want +got):\n%s", diff)
			}
		})
	}
}
