package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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
