package bundle_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/stencil-dev/stencil/internal/cli/bundle"
	"github.com/stencil-dev/stencil/internal/cli/exit"
)

// run runs stencil bundle with args and returns its stdout, stderr and
// exit code.
func run(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := bundle.NewCommand(genericclioptions.NewConfigFlags(false))
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err := cmd.Execute()
	if err != nil {
		errOut.WriteString("error: " + err.Error() + "\n")
	}
	return out.String(), errOut.String(), exit.Code(err)
}

// deployFolder writes a bundle whose template reads replicaCount where
// values.yaml says replicas, and returns its folder.
func deployFolder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "web")
	files := map[string]string{
		"values.yaml": "replicas: 2\nimage:\n  repository: nginx\n",
		"templates/deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {{ .Values.replicaCount | default 1 }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: {{ .Values.image.repository }}
`,
	}
	for p, c := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSchemaPrints: bundle schema prints the schema values.yaml and the
// templates give, closed where values.yaml is concrete.
func TestSchemaPrints(t *testing.T) {
	out, errOut, code := run(t, "schema", deployFolder(t))
	if code != 0 {
		t.Fatalf("schema: exit %d, stderr %s", code, errOut)
	}
	var s struct {
		AdditionalProperties any `json:"additionalProperties"`
		Properties           map[string]struct {
			Type    any `json:"type"`
			Default any `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("stdout is no JSON: %v\n%s", err, out)
	}
	if s.AdditionalProperties != false || s.Properties["replicas"].Type != "integer" || s.Properties["replicas"].Default != 2.0 {
		t.Errorf("schema %s: want it closed, replicas an integer defaulting to 2", out)
	}
	if _, ok := s.Properties["replicaCount"]; !ok {
		t.Errorf("schema %s: want replicaCount, which the template reads", out)
	}
}

// TestSchemaWrite: --write writes DIR/values.schema.json once, and again
// only with --force; -o writes a file of the caller's choosing.
func TestSchemaWrite(t *testing.T) {
	dir := deployFolder(t)
	if _, errOut, code := run(t, "schema", dir, "--write"); code != 0 {
		t.Fatalf("schema --write: exit %d, stderr %s", code, errOut)
	}
	written, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	if err != nil || !strings.Contains(string(written), `"replicas"`) {
		t.Fatalf("values.schema.json: %v\n%s", err, written)
	}
	_, errOut, code := run(t, "schema", dir, "--write")
	if code == 0 || !strings.Contains(errOut, "exists: give --force") {
		t.Errorf("schema --write over a schema: exit %d, stderr %q; want it refused, naming --force", code, errOut)
	}
	if _, errOut, code := run(t, "schema", dir, "--write", "--force"); code != 0 || !strings.Contains(errOut, "it is not read") {
		t.Errorf("schema --write --force: exit %d, stderr %q; want it written, noting the schema it replaces is not read", code, errOut)
	}
	file := filepath.Join(t.TempDir(), "s.json")
	if _, errOut, code := run(t, "schema", dir, "-o", file); code != 0 {
		t.Fatalf("schema -o: exit %d, stderr %s", code, errOut)
	}
	if got, _ := os.ReadFile(file); !bytes.Equal(got, written) {
		t.Errorf("-o wrote %s, want what --write wrote", got)
	}
	if _, errOut, code := run(t, "schema", dir, "-o", file, "--write"); code == 0 {
		t.Errorf("schema -o --write: exit 0, stderr %q; want the two refused together", errOut)
	}
}

// TestLintWarnsOfUndeclaredValues: lint warns, with file and line and a
// suggestion, of a value read that values.yaml does not set, then that
// neither values.yaml nor the schema declares; a warning is no problem.
func TestLintWarnsOfUndeclaredValues(t *testing.T) {
	dir := deployFolder(t)
	out, errOut, code := run(t, "lint", "--offline", dir)
	want := "warning: " + dir + ": templates/deploy.yaml:6: .Values.replicaCount is read but values.yaml does not set it (did you mean .Values.replicas?)"
	if code != 0 || !strings.Contains(errOut, want) {
		t.Errorf("lint: exit %d, stdout %s, stderr %q; want exit 0 and %q", code, out, errOut, want)
	}
	if strings.Contains(errOut, "image.repository") {
		t.Errorf("lint stderr %q: warns of image.repository, which values.yaml sets", errOut)
	}
	schema := `{"type": "object", "properties": {"replicas": {"type": "integer"}, "image": {"type": "object"}}}`
	if err := os.WriteFile(filepath.Join(dir, "values.schema.json"), []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, _ = run(t, "lint", "--offline", dir)
	if want := "neither values.yaml nor values.schema.json declares it (did you mean .Values.replicas?)"; !strings.Contains(errOut, want) {
		t.Errorf("lint with a schema: stderr %q, want %q", errOut, want)
	}
}
