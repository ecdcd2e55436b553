package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// outputsBundle is appServiceBundle with status outputs: one over the
// Deployment's spec (which a dry run changes), one over its status (which
// no controller writes in envtest, so it cannot be computed).
const outputsBundle = appServiceBundle + `  outputs:
  - name: replicas
    type: integer
    value: members["Deployment/web"].spec.replicas
  - name: available
    type: integer
    value: members["Deployment/web"].status.availableReplicas
`

// TestDiffShowsOutputs: stencil diff prints the status outputs a values
// change would give, over the dry run's would-be members; an output the
// dry run cannot compute prints nothing, and right after a reconcile
// nothing is printed at all.
func TestDiffShowsOutputs(t *testing.T) {
	ctx := context.Background()
	k := controller.Client
	ns := testenv.Namespace(t, k)
	bundle := "outputs-" + ns
	kubectl(t, fmt.Sprintf(outputsBundle, bundle), "apply", "-f", "-")
	comp := compositionYAML(ns, "web", bundle, `{"replicas": 2}`)
	kubectl(t, comp, "apply", "-f", "-")
	applied(t, k, composition(ns, "web"), 2)
	eventually(t, "the controller to compute the outputs", func() (bool, error) {
		c := &v1alpha1.Composition{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, c); err != nil {
			return false, err
		}
		raw, ok := c.Status.Outputs["replicas"]
		return c.Status.ObservedGeneration == c.Generation && ok && string(raw.Raw) == "2", nil
	})

	out, errOut, code := stencil(t, comp, "diff", "-f", "-")
	if code != 0 || out != "" {
		t.Fatalf("diff right after reconcile: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and no output", code, out, errOut)
	}

	changed := compositionYAML(ns, "web", bundle, `{"replicas": 3}`)
	out, errOut, code = stencil(t, changed, "diff", "-f", "-")
	if code != 1 {
		t.Fatalf("diff after a values change: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	want := "# Composition " + ns + "/web: status.outputs.replicas 2 → 3\n"
	if !strings.Contains(out, want) {
		t.Errorf("diff does not show the output's change %q:\n%s", want, out)
	}
	if strings.Contains(out, "available") {
		t.Errorf("diff shows an output the dry run cannot compute:\n%s", out)
	}
	// diff wrote no status.
	c := &v1alpha1.Composition{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, c); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := json.Unmarshal(c.Status.Outputs["replicas"].Raw, &n); err != nil || n != 2 {
		t.Errorf("after diff status.outputs.replicas = %s (err %v), want 2", c.Status.Outputs["replicas"].Raw, err)
	}
}

// TestDiffShowsInstanceOutputs: for an instance of a published kind, whose
// outputs are its top-level status fields, diff names them status.<name>.
func TestDiffShowsInstanceOutputs(t *testing.T) {
	ctx := context.Background()
	k := controller.Client
	ns := testenv.Namespace(t, k)
	group := ns + ".example.com"
	kubectl(t, publishedBundle("pubout-"+ns, group)+`  outputs:
  - name: replicas
    type: integer
    value: members["Deployment/web"].spec.replicas
`, "apply", "-f", "-")
	appServicesEstablished(t, k, group)
	t.Cleanup(func() {
		_ = k.Delete(ctx, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "appservices." + group}})
	})
	apiVersion := group + "/v1"
	in := fmt.Sprintf("apiVersion: %s\nkind: AppService\nmetadata:\n  name: web\n  namespace: %s\nspec:\n  replicas: 2\n", apiVersion, ns)
	// Established is not yet admitted: the policy's binding and
	// parameters for the kind reach the API server some time after.
	testenv.WaitKindChecked(t, k, objectOf(t, in), 0)
	kubectl(t, in, "apply", "-f", "-")
	applied(t, k, parentRef(apiVersion, "AppService", ns, "web"), 2)
	eventually(t, "the controller to compute the instance's outputs", func() (bool, error) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind("AppService")
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, u); err != nil {
			return false, err
		}
		n, ok, _ := unstructured.NestedInt64(u.Object, "status", "replicas")
		return ok && n == 2, nil
	})
	out, errOut, code := stencil(t, in, "diff", "-f", "-")
	if code != 0 || out != "" {
		t.Fatalf("diff right after reconcile: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and no output", code, out, errOut)
	}
	out, errOut, code = stencil(t, strings.Replace(in, "replicas: 2", "replicas: 3", 1), "diff", "-f", "-")
	if want := "# AppService " + ns + "/web: status.replicas 2 → 3\n"; code != 1 || !strings.Contains(out, want) {
		t.Errorf("diff after a spec change: exit %d, want 1 and %q\nstdout:\n%s\nstderr:\n%s", code, want, out, errOut)
	}
}
