package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stencil-dev/stencil/internal/testenv"
)

// TestMigrateBundleFromCluster: stencil migrate --bundle NAME reads the
// Bundle from the cluster (as the kubeconfig's user) and converts a v1
// instance of its kind with its rules; --check exits 1 first and writes
// nothing.
func TestMigrateBundleFromCluster(t *testing.T) {
	ns := testenv.Namespace(t, controller.Client)
	name, group := "mig-"+ns, ns+".example.com"
	manifest, errOut, code := stencil(t, "", "bundle", "pack", filepath.Join(testenv.Root(), "examples", "versions", "appservice"), "--name", name)
	if code != 0 {
		t.Fatalf("pack: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(manifest, "group: app.example.com") {
		t.Fatalf("the packed Bundle does not say its group:\n%s", manifest)
	}
	// A group of this test's own: no other test's kind is claimed.
	kubectl(t, strings.Replace(manifest, "group: app.example.com", "group: "+group, 1), "apply", "--server-side", "-f", "-")
	t.Cleanup(func() { kubectl(t, "", "delete", "bundle", name, "--wait=false") })

	file := filepath.Join(t.TempDir(), "shop.yaml")
	in := "# kept\napiVersion: " + group + "/v1\nkind: AppService\nmetadata:\n  name: shop\n  namespace: " + ns + "\nspec:\n  size: 2 # pods\n  image: nginx:1.27\n  ports:\n  - name: http\n    port: 80\n"
	if err := os.WriteFile(file, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := stencil(t, "", "migrate", "-f", file, "--bundle", name, "--check")
	if code != 1 || !strings.Contains(out, "AppService "+ns+"/shop: "+group+"/v1 → v2 (spec.size → spec.replicas; changed spec.ports)") {
		t.Errorf("--check: exit %d, want 1 and the change named\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(file); string(got) != in {
		t.Errorf("--check wrote the file:\n%s", got)
	}
	if _, errOut, code := stencil(t, "", "migrate", "-f", file, "--bundle", name); code != 0 {
		t.Fatalf("migrate: exit %d\n%s", code, errOut)
	}
	want := strings.NewReplacer(group+"/v1", group+"/v2", "size: 2", "replicas: 2", "  - name: http\n    port: 80\n", "    http: 80\n").Replace(in)
	if got, _ := os.ReadFile(file); string(got) != want {
		t.Errorf("migrated file:\n%s\nwant:\n%s", got, want)
	}
}
