package reconcile_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/templates"
)

// TestCapabilitiesFollowTheCluster: the controller gives templates what
// the API server serves (kinds too: apps/v1/Deployment), its version, and
// .Release.IsUpgrade once the ApplySet has members; a CRD installed later
// makes its kind appear, and the Composition renders again by itself.
func TestCapabilitiesFollowTheCluster(t *testing.T) {
	ns := testenv.Namespace(t, k)
	group := "caps" + ns + ".example.com"
	b := bundle(t, "caps-"+ns, map[string]string{
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: caps
data:
  deployment: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}
  gadget: {{ .Capabilities.APIVersions.Has "` + group + `/v1/Gadget" | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
  upgrade: {{ .Release.IsUpgrade | quote }}
`,
	})
	mustCreate(t, composition(ns, "caps", b.Name, ""))
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "caps"}}
	eventually(t, "the ConfigMap of an upgrade", func() (bool, error) {
		err := k.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)
		return err == nil && cm.Data["upgrade"] == "true", fmt.Errorf("data %v (err %v)", cm.Data, err)
	})
	want := map[string]string{"deployment": "true", "gadget": "false", "kube": templates.BuiltinKubeVersion, "upgrade": "true"}
	if fmt.Sprint(cm.Data) != fmt.Sprint(want) {
		t.Errorf("data = %v, want %v", cm.Data, want)
	}

	crd := schemalessCRD(group, "Gadget", "gadgets", "Namespaced")
	mustCreate(t, crd)
	t.Cleanup(func() { _ = k.Delete(context.Background(), crd) })
	eventually(t, "the new kind in .Capabilities", func() (bool, error) {
		err := k.Get(context.Background(), client.ObjectKeyFromObject(cm), cm)
		return err == nil && cm.Data["gadget"] == "true", fmt.Errorf("data %v (err %v)", cm.Data, err)
	})
}

// TestDuplicateOncePlaced: the controller refuses a ConfigMap rendered
// with and without the Composition's namespace, which would otherwise be
// applied twice, concurrently, as two versions of one object.
func TestDuplicateOncePlaced(t *testing.T) {
	ns := testenv.Namespace(t, k)
	b := bundle(t, "dup-"+ns, map[string]string{
		"templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  v: a\n",
		"templates/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: " + ns + "\ndata:\n  v: b\n",
	})
	mustCreate(t, composition(ns, "dup", b.Name, ""))
	// The Stalled of the duplicate, not any other on the way (a cache that
	// has not seen the Bundle yet).
	stalled(t, ns, "dup", v1alpha1.ReasonRenderFailed, "ConfigMap", "rendered twice")
	if err := k.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "x"}, &corev1.ConfigMap{}); err == nil {
		t.Error("the ConfigMap was applied")
	}
}

// TestDuplicateOfAClusterKindNamesTemplates: an object of a kind the
// cluster serves cluster-scoped through a CRD, rendered with and without a
// namespace, stalls the Composition naming both templates (the render
// knows the kind's scope from .Capabilities), and nothing is applied.
func TestDuplicateOfAClusterKindNamesTemplates(t *testing.T) {
	ns := testenv.Namespace(t, k)
	group := "dupscope" + ns + ".example.com"
	crd := schemalessCRD(group, "Thing", "things", "Cluster")
	mustCreate(t, crd)
	t.Cleanup(func() { _ = k.Delete(context.Background(), crd) })
	thing := "apiVersion: " + group + "/v1\nkind: Thing\nmetadata:\n  name: x\n"
	b := bundle(t, "dupscope-"+ns, map[string]string{
		"templates/a.yaml": thing,
		"templates/b.yaml": thing + "  namespace: " + ns + "\n",
	})
	mustCreate(t, composition(ns, "dup", b.Name, ""))
	// A pass whose discovery does not list the new kind yet refuses the
	// objects otherwise; the kind's arrival in discovery renders again.
	stalled(t, ns, "dup", v1alpha1.ReasonRenderFailed, "rendered twice", "templates/a.yaml", "templates/b.yaml")
}

// schemalessCRD is a CRD of kind in group, served as plural at v1 with the
// given scope, whose objects may hold anything.
func schemalessCRD(group, kind, plural, scope string) *unstructured.Unstructured {
	crd := &unstructured.Unstructured{}
	crd.SetUnstructuredContent(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group": group, "scope": scope,
			"names": map[string]any{"kind": kind, "plural": plural, "singular": strings.ToLower(kind), "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	})
	return crd
}
