package migrate_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stencil-dev/stencil/internal/cli/exit"
	"github.com/stencil-dev/stencil/internal/cli/migrate"
)

// versions is the two-version AppService example.
const versions = "../../../examples/versions"

// migrateCmd runs stencil migrate with args; it returns the output and
// the exit code.
func migrateCmd(t *testing.T, args ...string) (string, int) {
	t.Helper()
	cmd := migrate.NewCommand(genericclioptions.NewConfigFlags(false))
	cmd.SilenceUsage = true
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil {
		out.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), exit.Code(err)
}

// TestMigrateExample: the example's instances and Composition, migrated
// with the example Bundle and the engine's converter: --check exits 1 and
// writes nothing; the migration writes the golden files
// (testdata/example); then --check exits 0.
func TestMigrateExample(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"instances", "compositions"} {
		if err := os.CopyFS(filepath.Join(dir, sub), os.DirFS(filepath.Join(versions, sub))); err != nil {
			t.Fatal(err)
		}
	}
	bundleArgs := []string{"-f", dir, "-R", "--bundle", filepath.Join(versions, "appservice")}
	before := files(t, dir)
	out, code := migrateCmd(t, append(bundleArgs, "--check")...)
	if code != 1 {
		t.Errorf("--check: exit %d, want 1:\n%s", code, out)
	}
	if diff := cmp.Diff(before, files(t, dir)); diff != "" {
		t.Errorf("--check wrote (-before +after):\n%s", diff)
	}
	out, code = migrateCmd(t, bundleArgs...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{
		"instances/appservice-v1.yaml: AppService shop: app.example.com/v1 → v2 (spec.size → spec.replicas; changed spec.ports)",
		"compositions/appservice.yaml: Composition default/legacy-shop: values → valuesMigrations size-to-replicas, ports-list-to-map (spec.values.size → spec.values.replicas; changed spec.values.ports)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for name, got := range files(t, dir) {
		golden := filepath.Join("testdata", "example", name)
		if *update && got != before[name] {
			if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if os.IsNotExist(err) {
			want, err = []byte(before[name]), nil
		}
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	out, code = migrateCmd(t, append(bundleArgs, "--check")...)
	if code != 0 || !strings.Contains(out, "nothing to migrate") {
		t.Errorf("--check after the migration: exit %d, want 0:\n%s", code, out)
	}
}

// TestMigrateCheckError: with --check, an error exits 2 (1 is "something
// would change").
func TestMigrateCheckError(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("a: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := migrateCmd(t, "-f", bad, "--bundle", filepath.Join(versions, "appservice"), "--check")
	if code != 2 || !strings.Contains(out, "bad.yaml: ") {
		t.Errorf("exit %d, want 2 and the file named:\n%s", code, out)
	}
}
