package cli_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/templates"
)

func writeBundle(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLintOffline: a misspelled field of a built-in kind and invalid values
// are both reported, each with its location, and the exit status is 1.
func TestLintOffline(t *testing.T) {
	dir := writeBundle(t, map[string]string{
		"values.yaml":        "replicas: 1\n",
		"values.schema.json": `{"type":"object","properties":{"replicas":{"type":"integer","minimum":1}}}`,
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replica: {{ .Values.replicas }}
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
`,
	})
	bad := filepath.Join(t.TempDir(), "bad-values.yaml")
	if err := os.WriteFile(bad, []byte("replicas: 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code := stencil(t, "", "bundle", "lint", dir, "--offline", "-f", bad)
	if code != 1 {
		t.Errorf("lint exit %d, want 1", code)
	}
	for _, want := range []string{`(defaults): Deployment web:`, `unknown field "spec.replica"`, `(` + bad + `): values.replicas: must be >= 1`} {
		if !strings.Contains(out, want) {
			t.Errorf("lint output:\n%s\nwant it to contain %q", out, want)
		}
	}
}

// TestPack: the Bundle manifest of a folder loads to the same revision as
// the folder itself.
func TestPack(t *testing.T) {
	dir := filepath.Join(testenv.Root(), "examples", "bundles", "webapp")
	out, errOut, code := stencil(t, "", "bundle", "pack", dir, "--name", "webapp")
	if code != 0 {
		t.Fatalf("pack: exit %d: %s", code, errOut)
	}
	b := &v1alpha1.Bundle{}
	if err := yaml.UnmarshalStrict([]byte(out), b); err != nil {
		t.Fatalf("pack output is not a Bundle: %v\n%s", err, out)
	}
	if b.Kind != "Bundle" || b.Name != "webapp" || b.Spec.Schema == nil || b.Spec.Files["templates/_helpers.tpl"] == "" {
		t.Errorf("packed Bundle %s/%s: schema %v, files %d", b.Kind, b.Name, b.Spec.Schema != nil, len(b.Spec.Files))
	}
	fromObject, err := templates.LoadObject(b)
	if err != nil {
		t.Fatal(err)
	}
	fromDir, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: "webapp"})
	if err != nil {
		t.Fatal(err)
	}
	if fromObject.Revision() != fromDir.Revision() {
		t.Errorf("revision of the packed Bundle %s, of the folder %s", fromObject.Revision(), fromDir.Revision())
	}
}

// TestPackRefusesLinks: a link in a bundle folder is refused, naming it,
// by pack and lint, and the file it points to is never printed.
func TestPackRefusesLinks(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(secret, []byte("root:x:0:0:s3cr3t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := writeBundle(t, map[string]string{
		"values.yaml":         "name: x\n",
		"templates/cm.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n",
		"templates/_hide.tpl": "",
	})
	if err := os.Symlink(secret, filepath.Join(dir, "templates", "passwd.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"bundle", "pack", dir}, {"bundle", "lint", dir, "--offline"}} {
		out, errOut, code := stencil(t, "", args...)
		if code == 0 {
			t.Errorf("%s: exit 0, want an error", strings.Join(args[:2], " "))
		}
		if !strings.Contains(out+errOut, "templates/passwd.yaml: a symbolic link") {
			t.Errorf("%s: output:\n%s%s\nwant it to name templates/passwd.yaml as a symbolic link", strings.Join(args[:2], " "), out, errOut)
		}
		if strings.Contains(out+errOut, "s3cr3t") {
			t.Errorf("%s printed the linked file:\n%s%s", strings.Join(args[:2], " "), out, errOut)
		}
	}
}

// TestPackHelmIgnore: pack leaves out what the folder's .helmignore names,
// with Helm's rules, as `helm package` does (the rules themselves are
// tested in templates), and lint loads the folder the same way: an
// ignored template that would not parse is no error.
func TestPackHelmIgnore(t *testing.T) {
	dir := writeBundle(t, map[string]string{
		".helmignore":            "# editor files\n*.swp\n*.orig\nci/\n",
		"values.yaml":            "name: x\n",
		"templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n",
		"templates/cm.yaml.orig": "{{ broken",
		"templates/.cm.yaml.swp": "{{ broken",
		"ci/test-values.yaml":    "name: y\n",
		"files/keep.txt":         "kept",
	})
	out, errOut, code := stencil(t, "", "bundle", "pack", dir, "--name", "ign")
	if code != 0 {
		t.Fatalf("pack: exit %d: %s", code, errOut)
	}
	b := &v1alpha1.Bundle{}
	if err := yaml.UnmarshalStrict([]byte(out), b); err != nil {
		t.Fatalf("pack output is not a Bundle: %v\n%s", err, out)
	}
	var paths []string
	for p := range b.Spec.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if want := []string{".helmignore", "files/keep.txt", "templates/cm.yaml", "values.yaml"}; !slices.Equal(paths, want) {
		t.Errorf("packed files %v, want %v", paths, want)
	}
	if out, errOut, code := stencil(t, "", "bundle", "lint", dir, "--offline"); code != 0 || !strings.Contains(out, "1 objects ok") {
		t.Errorf("lint: exit %d:\n%s%s", code, out, errOut)
	}
}

// TestRenderKeepsIntegers: integers from values.yaml and from a
// Composition file's spec.values (YAML, through the render worker) print
// exactly, where Helm prints 1e+06 and rounds above 2^53 (the one
// deliberate difference from Helm; templates.TestHelmNumbers).
func TestRenderKeepsIntegers(t *testing.T) {
	dir := writeBundle(t, map[string]string{
		"values.yaml":       "fromFile: 1000000\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: numbers\ndata:\n  fromFile: \"{{ .Values.fromFile }}\"\n  fromComposition: \"{{ .Values.fromComposition }}\"\n  huge: \"{{ .Values.huge }}\"\n",
	})
	comp := compositionYAML("team-a", "numbers", "numbers", "{fromComposition: 2000000, huge: 9007199254740993}")
	out, errOut, code := stencil(t, comp, "render", "-f", "-", "--bundle", dir, "--offline")
	if code != 0 {
		t.Fatalf("render: exit %d: %s", code, errOut)
	}
	for _, want := range []string{`fromFile: "1000000"`, `fromComposition: "2000000"`, `huge: "9007199254740993"`} {
		if !strings.Contains(out, want) {
			t.Errorf("render output:\n%s\nwant it to contain %s", out, want)
		}
	}
}

// TestLintHintsAtOpenAPISchema: a values.schema.json written as an OpenAPI
// v3 schema (before values.schema.json meant JSON Schema) gets a note
// from lint and pack saying where such a schema goes; a Helm chart's gets
// none.
func TestLintHintsAtOpenAPISchema(t *testing.T) {
	files := map[string]string{
		"values.schema.json": `{"type":"object","properties":{"extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}`,
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hint\n",
	}
	dir := writeBundle(t, files)
	for _, args := range [][]string{{"bundle", "lint", dir, "--offline"}, {"bundle", "pack", dir}} {
		_, errOut, code := stencil(t, "", args...)
		if code != 0 || !strings.Contains(errOut, "note: values.schema.json: it uses x-kubernetes-…, an OpenAPI v3 keyword") || !strings.Contains(errOut, "values.schema.yaml") {
			t.Errorf("%s: exit %d, stderr:\n%s", args[1], code, errOut)
		}
	}
	files["values.schema.json"] = `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`
	if _, errOut, _ := stencil(t, "", "bundle", "lint", writeBundle(t, files), "--offline"); strings.Contains(errOut, "note: values.schema.json") {
		t.Errorf("a JSON Schema got a note:\n%s", errOut)
	}
}
