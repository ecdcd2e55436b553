package bundle_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stencil-dev/stencil/internal/cli/bundle"
	"github.com/stencil-dev/stencil/internal/cli/exit"
)

// example is the two-version AppService example.
const example = "../../../examples/versions/appservice"

// lint runs stencil bundle lint --offline DIR and returns its output and
// exit code.
func lint(t *testing.T, dir string) (string, int) {
	t.Helper()
	cmd := bundle.NewCommand(genericclioptions.NewConfigFlags(false))
	cmd.SilenceUsage = true
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"lint", "--offline", dir})
	err := cmd.Execute()
	if err != nil {
		out.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), exit.Code(err)
}

// copyExample copies the example into a folder of the test's own, with
// stencil.yaml's old replaced by new.
func copyExample(t *testing.T, old, new string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "appservice")
	if err := os.CopyFS(dir, os.DirFS(example)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "stencil.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), old) {
		t.Fatalf("stencil.yaml lacks %q", old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(data), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLintRoundTripsPass: the example's conversions lose nothing, over
// its examples and values generated from both schemas.
func TestLintRoundTripsPass(t *testing.T) {
	out, code := lint(t, example)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "(conversion): ") || !strings.Contains(out, "round trips between 2 versions ok") {
		t.Errorf("no round trips reported:\n%s", out)
	}
}

// TestLintRoundTripFails: a conversion back to v1 that fails for the
// example's ports is reported with the version pair and the example.
func TestLintRoundTripFails(t *testing.T) {
	dir := copyExample(t, `{'name': name, 'port': port}`, `{'name': name, 'port': self.missing}`)
	out, code := lint(t, dir)
	if code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, out)
	}
	if !strings.Contains(out, "(conversion): v1 → v2 → v1: examples/web-v1.yaml AppService web: ") {
		t.Errorf("the failed round trip is not reported:\n%s", out)
	}
}

// TestLintConversionCompileError: an expression that does not compile is
// a problem naming its field path as stencil.yaml holds it.
func TestLintConversionCompileError(t *testing.T) {
	dir := copyExample(t, `- move: {from: size, to: replicas}
      - set:`, `- move: {from: size, to: replicas}
      - set:
          path: extra
          expression: "self.nope("
      - set:`)
	out, code := lint(t, dir)
	if code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, out)
	}
	if !strings.Contains(out, "stencil.yaml api.versions[0].conversion.toStorage[1].set.expression") {
		t.Errorf("the rule's field path is not named:\n%s", out)
	}
}

// TestLintWarnsAnnotatedFields: a conversion back to v1 that drops the
// ports keeps them only in the annotation: the round trip restores them
// (no problem), and lint warns that v1 never sees them.
func TestLintWarnsAnnotatedFields(t *testing.T) {
	dir := copyExample(t, `expression: "has(self.ports) ? self.ports.transformList(name, port, {'name': name, 'port': port}) : null"`, `expression: "null"`)
	out, code := lint(t, dir)
	if code != 0 {
		t.Errorf("exit %d, want 0 (a warning is no problem):\n%s", code, out)
	}
	if !strings.Contains(out, "(conversion): warning: v2 → v1: examples/web-v2.yaml AppService web: spec.ports is kept only in the annotation conversion.stencil.dev/v2: v1 never sees it") {
		t.Errorf("no warning of the ports:\n%s", out)
	}
}
