package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRenderHelmHooks pins what `stencil render` prints for a chart with
// every kind of Helm hook (testdata/helm-hooks). `helm template` prints
// all eight objects, hooks in template order after the manifests.
// stencil prints what the controller may apply: the two test Pods
// (helm.sh/hook: test, test-success) and the pre-delete Job are never
// applied and not printed; the install/upgrade hooks follow the ordinary
// objects in the order they run (weight, then kind).
func TestRenderHelmHooks(t *testing.T) {
	comp := "apiVersion: stencil.dev/v1alpha1\nkind: Composition\nmetadata:\n  name: shop\n  namespace: team-a\nspec:\n  bundle: helm-hooks\n"
	out, errOut, code := stencil(t, comp, "render", "-f", "-", "--bundle", filepath.Join("testdata", "helm-hooks"), "--offline")
	if code != 0 {
		t.Fatalf("render: exit %d: %s", code, errOut)
	}
	for _, absent := range []string{"shop-test-connection", "shop-test-legacy", "shop-cleanup"} {
		if strings.Contains(out, "name: "+absent) {
			t.Errorf("render prints %s, which stencil never applies", absent)
		}
	}
	var order []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "kind: ") {
			order = append(order, strings.TrimPrefix(line, "kind: "))
		}
	}
	if diff := cmp.Diff([]string{"Deployment", "ServiceAccount", "Job", "ConfigMap"}, order); diff != "" {
		t.Errorf("printed kinds (-want +got):\n%s", diff)
	}
	path := filepath.Join("testdata", "render-helm-hooks.golden.yaml")
	if *update {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/cli -run TestRenderHelmHooks -update writes it)", err)
	}
	if diff := cmp.Diff(string(want), out); diff != "" {
		t.Errorf("render (-want +got):\n%s", diff)
	}
}
