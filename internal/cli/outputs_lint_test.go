package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLintOutputs: bundle lint compiles the outputs and readiness rules of
// stencil.yaml and names each that does not compile with its position;
// the articles' bundles, which declare theirs, have none.
func TestLintOutputs(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"stencil.yaml": "outputs:\n- name: phase\n  type: string\n  value: 'members.x.data.('\n" +
			"readiness:\n- member: ConfigMap\n  readyWhen: '1 + 1'\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, _, code := stencil(t, "", "bundle", "lint", dir, "--offline")
	if code != 1 || !strings.Contains(out, "stencil.yaml: spec.outputs[0].value:1:") ||
		!strings.Contains(out, "spec.readiness[0].readyWhen: the expression's type is int, want bool") {
		t.Errorf("lint: exit %d, output:\n%s\nwant both problems named with their paths", code, out)
	}
	for _, b := range []string{"foo", "appservice", "cloudmanager"} {
		// (Their defaults lack required values: only stencil.yaml counts.)
		out, _, _ := stencil(t, "", "bundle", "lint", filepath.Join("..", "..", "examples", "bundles", b), "--offline")
		if strings.Contains(out, "stencil.yaml:") || !strings.Contains(out, "(api): CustomResourceDefinition") {
			t.Errorf("lint of %s:\n%s\nwant its api ok and no problem in stencil.yaml", b, out)
		}
	}
}

// TestLintRolloutGates: bundle lint compiles the rollout gates of
// stencil.yaml, as the Bundles' admission does, naming each that does not
// compile with its position.
func TestLintRolloutGates(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "templates"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"stencil.yaml": "rollout:\n  strategy: Waves\n  gates:\n  - name: ok\n    expression: wave.ready == wave.total\n" +
			"  - name: broken\n    expression: 'wave.parents.all(p, p.ready'\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	out, _, code := stencil(t, "", "bundle", "lint", dir, "--offline")
	if code != 1 || !strings.Contains(out, "stencil.yaml: spec.rollout.gates[1] (broken):1:") || strings.Contains(out, "(ok)") {
		t.Errorf("lint: exit %d, output:\n%s\nwant the broken gate named with its position, and only it", code, out)
	}
}
