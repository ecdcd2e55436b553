package cli_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// outputsStencilYAML is outputsBundle's outputs as a bundle folder's
// stencil.yaml, with extra appended to the list.
func outputsStencilYAML(extra string) string {
	return `outputs:
- name: replicas
  type: integer
  value: members["Deployment/web"].spec.replicas
- name: available
  type: integer
  value: members["Deployment/web"].status.availableReplicas
` + extra
}

// TestDiffBundleShowsOutputs: stencil diff --bundle DIR (a new version of
// a Bundle, against the parents using it in the cluster) prints the status
// outputs the new version would give each parent, computed over the dry
// run's would-be members as diff -f does: an output over a child's spec
// the new templates change, and an output the new version declares that
// the parent does not have yet (which changes no child: exit 0). An
// output the dry run cannot compute (a member's status) prints nothing.
func TestDiffBundleShowsOutputs(t *testing.T) {
	ctx := context.Background()
	k := controller.Client
	ns := testenv.Namespace(t, k)
	bundle := "boutputs-" + ns
	kubectl(t, fmt.Sprintf(outputsBundle, bundle), "apply", "-f", "-")
	kubectl(t, compositionYAML(ns, "web", bundle, `{"replicas": 2}`), "apply", "-f", "-")
	applied(t, k, composition(ns, "web"), 2)
	eventually(t, "the controller to compute the outputs", func() (bool, error) {
		c := &v1alpha1.Composition{}
		if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, c); err != nil {
			return false, err
		}
		raw, ok := c.Status.Outputs["replicas"]
		return c.Status.ObservedGeneration == c.Generation && ok && string(raw.Raw) == "2", nil
	})

	// The same version: nothing changes, nothing is printed but the summary.
	same := bundleFolder(t, bundle, "", map[string]string{"stencil.yaml": outputsStencilYAML("")})
	out, errOut, code := stencil(t, "", "diff", "--bundle", same, "-n", ns)
	if code != 0 || strings.Contains(out, "status.") {
		t.Fatalf("diff --bundle of the cluster's version: exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0 and no output line", code, out, errOut)
	}

	// Templates that double the replicas: the child changes and so does
	// the output over its spec.
	doubled := bundleFolder(t, bundle, "", map[string]string{
		"stencil.yaml":              outputsStencilYAML(""),
		"templates/deployment.yaml": strings.Replace(appServiceFiles["templates/deployment.yaml"], "{{ .Values.replicas }}", "{{ mul .Values.replicas 2 }}", 1),
	})
	out, errOut, code = stencil(t, "", "diff", "--bundle", doubled, "-n", ns)
	header := "# " + ns + "/web (Composition)\n"
	if want := "  status.outputs.replicas 2 → 4\n"; code != 1 || !strings.Contains(out, header) || !strings.Contains(out, want) {
		t.Errorf("diff --bundle with doubled replicas: exit %d, want 1, %q and %q\nstdout:\n%s\nstderr:\n%s", code, header, want, out, errOut)
	}
	if strings.Contains(out, "available") {
		t.Errorf("diff --bundle shows an output the dry run cannot compute:\n%s", out)
	}
	out, errOut, code = stencil(t, "", "diff", "--bundle", doubled, "-n", ns, "-o", "diff")
	if want := "# Composition " + ns + "/web: status.outputs.replicas 2 → 4\n"; code != 1 || !strings.Contains(out, want) {
		t.Errorf("diff --bundle -o diff: exit %d, want 1 and %q\nstdout:\n%s\nstderr:\n%s", code, want, out, errOut)
	}

	// A new output, no child changed: shown under the parent's header,
	// and not a change for the exit status or the summary.
	added := bundleFolder(t, bundle, "", map[string]string{"stencil.yaml": outputsStencilYAML(`- name: double
  type: integer
  value: members["Deployment/web"].spec.replicas * 2
`)})
	out, errOut, code = stencil(t, "", "diff", "--bundle", added, "-n", ns)
	if want := header + "  status.outputs.double (unset) → 4\n"; code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "1 unchanged") {
		t.Errorf("diff --bundle with a new output: exit %d, want 0, %q and 1 unchanged\nstdout:\n%s\nstderr:\n%s", code, want, out, errOut)
	}

	// diff wrote no status.
	c := &v1alpha1.Composition{}
	if err := k.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, c); err != nil {
		t.Fatal(err)
	}
	if raw := c.Status.Outputs["replicas"]; string(raw.Raw) != "2" {
		t.Errorf("after diff status.outputs.replicas = %s, want 2", raw.Raw)
	}
	if _, ok := c.Status.Outputs["double"]; ok {
		t.Errorf("after diff status.outputs has double: %v", c.Status.Outputs)
	}
}
