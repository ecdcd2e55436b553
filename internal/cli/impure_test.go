package cli_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/templates"
)

// impureChart looks up a ConfigMap and keeps a generated password the way
// Bitnami's charts do (its own Secret looked up, else a new one).
var impureChart = map[string]string{
	"Chart.yaml": "apiVersion: v2\nname: impure\nversion: 0.1.0\n",
	"templates/result.yaml": `{{- $src := lookup "v1" "ConfigMap" .Release.Namespace "source" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: result
data:
  source: {{ dig "data" "v" "absent" $src | quote }}
`,
	"templates/db.yaml": `{{- $s := lookup "v1" "Secret" .Release.Namespace "db" }}
apiVersion: v1
kind: Secret
metadata:
  name: db
data:
  password: {{ if $s }}{{ index $s.data "password" }}{{ else }}{{ randAlphaNum 16 | b64enc }}{{ end }}
  token: {{ uuidv4 | b64enc }}
`,
}

// TestRenderLookupAndGenerated (issue 30): offline, every lookup answers
// empty (as helm template); online, render answers them live as the user
// and shows the generated values the controller keeps, so once the
// controller has applied the chart, diff sees nothing to change.
func TestRenderLookupAndGenerated(t *testing.T) {
	ctx := context.Background()
	dir := writeBundle(t, impureChart)
	k := controller.Client
	ns := testenv.Namespace(t, k)
	if err := k.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "source"}, Data: map[string]string{"v": "live"}}); err != nil {
		t.Fatal(err)
	}
	source := func(out string) string {
		for _, o := range renderedObjects(t, out) {
			if o.GetName() == "result" {
				return o.Object["data"].(map[string]any)["source"].(string)
			}
		}
		return ""
	}
	out, errOut, code := stencil(t, "", "render", "--offline", "--bundle", dir, "--name", "app", "-n", ns)
	if code != 0 || source(out) != "absent" {
		t.Fatalf("render --offline: exit %d, source %q, want absent: %s", code, source(out), errOut)
	}
	out, errOut, code = stencil(t, "", "render", "--bundle", dir, "--name", "app", "-n", ns)
	if code != 0 || source(out) != "live" {
		t.Fatalf("render online: exit %d, source %q, want live: %s", code, source(out), errOut)
	}

	loaded, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: "impure"})
	if err != nil {
		t.Fatal(err)
	}
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "impure-" + ns}, Spec: loaded.Spec()}
	if err := k.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Delete(context.Background(), b) })
	comp := fmt.Sprintf("apiVersion: stencil.dev/v1alpha1\nkind: Composition\nmetadata:\n  name: app\n  namespace: %s\nspec:\n  bundle: %s\n", ns, b.Name)
	kubectl(t, comp, "apply", "-f", "-")
	eventually(t, "the controller to apply the chart", func() (bool, error) {
		c := &v1alpha1.Composition{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "app"}, c); err != nil {
			return false, err
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == v1alpha1.ConditionReady && cond.Status == metav1.ConditionTrue && c.Status.ObservedGeneration == c.Generation {
				return true, nil
			}
		}
		return false, nil
	})
	out, errOut, code = stencil(t, comp, "diff", "-f", "-")
	if code != 0 {
		t.Errorf("diff after reconcile: exit %d, want 0 (the generated values and lookups as the controller applied them)\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "password") {
		t.Errorf("diff shows the password: %s", out)
	}
}

// TestRenderChartCRDs (issue 30 item 3): offline, render learns the kinds
// of a chart's crds/ folder and their scope (a custom resource of a kind
// no cluster serves renders, placed in its namespace), and prints the
// CRDs first with --include-crds, as helm template --include-crds.
func TestRenderChartCRDs(t *testing.T) {
	crd := `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.offline.example.com
spec:
  group: offline.example.com
  names: {kind: Gizmo, plural: gizmos}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
`
	dir := writeBundle(t, map[string]string{
		"Chart.yaml":       "apiVersion: v2\nname: gizmos\nversion: 0.1.0\n",
		"stencil.yaml":     "permissions:\n  clusterScoped: [{group: apiextensions.k8s.io, kind: CustomResourceDefinition}]\n",
		"crds/gizmo.yaml":  crd,
		"templates/g.yaml": "apiVersion: offline.example.com/v1\nkind: Gizmo\nmetadata:\n  name: g\n",
	})
	out, errOut, code := stencil(t, "", "render", "--offline", "--bundle", dir, "--name", "app", "-n", "team")
	if code != 0 {
		t.Fatalf("render --offline: exit %d: %s", code, errOut)
	}
	objs := renderedObjects(t, out)
	if len(objs) != 1 || objs[0].GetKind() != "Gizmo" || objs[0].GetNamespace() != "team" {
		t.Errorf("render printed %d objects (%v), want the Gizmo in namespace team", len(objs), objs)
	}
	out, errOut, code = stencil(t, "", "render", "--offline", "--include-crds", "--bundle", dir, "--name", "app", "-n", "team")
	if code != 0 {
		t.Fatalf("render --include-crds: exit %d: %s", code, errOut)
	}
	objs = renderedObjects(t, out)
	if len(objs) != 2 || objs[0].GetKind() != "CustomResourceDefinition" || objs[0].GetName() != "gizmos.offline.example.com" || objs[1].GetKind() != "Gizmo" {
		t.Errorf("render --include-crds printed %v, want the CRD, then the Gizmo", objs)
	}
	if objs[0].GetLabels()["applyset.kubernetes.io/part-of"] != "" {
		t.Errorf("the crds/ CRD carries the set's part-of label: it is no member")
	}
}
