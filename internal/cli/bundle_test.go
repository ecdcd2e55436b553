package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// appServiceFolder is a bundle folder publishing the kubebuilder article's
// AppService, with a Helm-style values.schema.json.
func appServiceFolder(t *testing.T, stencilYAML, schema string) string {
	t.Helper()
	return writeBundle(t, map[string]string{
		"stencil.yaml":       stencilYAML,
		"values.yaml":        "size: 1\nimage: nginx:1.27\n",
		"values.schema.json": schema,
		"templates/cm.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Composition.Name }}\ndata:\n  size: {{ .Values.size | quote }}\n",
	})
}

const appServiceAPI = "api:\n  group: app.example.com\n  kind: AppService\n  version: v1\n"

// TestLintPublishedKind: lint builds the CRD of the kind a bundle
// publishes; what the API server would refuse is a problem named by its
// file and field path, with exit status 1.
func TestLintPublishedKind(t *testing.T) {
	okSchema := `{"type":"object","required":["size","image"],"properties":{"size":{"type":"integer","minimum":0},"image":{"type":"string"}}}`
	tests := []struct {
		name, stencilYAML, schema string
		code                      int
		want                      []string
	}{
		{"structural", appServiceAPI, okSchema, 0, []string{"(api): CustomResourceDefinition appservices.app.example.com ok", "(defaults): 1 objects ok"}},
		{"not expressible in a CRD", appServiceAPI, `{"type":"object","properties":{"size":{"anyOf":[{"type":"integer","minimum":1},{"type":"string"}]}}}`, 1,
			[]string{"(api): values.schema.json#/properties/size/anyOf/0/type: Forbidden:"}},
		{"default of the wrong type", appServiceAPI, `{"type":"object","properties":{"size":{"type":"integer","default":"one"}}}`, 1,
			[]string{"(api): values.schema.json properties[size].default: Invalid value:"}},
		{"stencil's own group", "api:\n  group: apps.stencil.dev\n  kind: AppService\n", okSchema, 1,
			[]string{"(api): stencil.yaml api.group: Invalid value: stencil.dev and its subdomains are stencil's own"}},
		{"a group of Kubernetes' own: a note, not a problem", "api:\n  group: samplecontroller.k8s.io\n  kind: AppService\n", okSchema, 0,
			[]string{"(api): CustomResourceDefinition appservices.samplecontroller.k8s.io ok", "(api): note: group samplecontroller.k8s.io is Kubernetes' own: stencil serves the kind only once a cluster admin creates CustomResourceDefinition appservices.samplecontroller.k8s.io with the annotation api-approved.kubernetes.io and the label stencil.dev/bundle: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := appServiceFolder(t, tt.stencilYAML, tt.schema)
			out, errOut, code := stencil(t, "", "bundle", "lint", dir, "--offline")
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tt.code, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("lint output:\n%s\nwant it to contain %q", out, w)
				}
			}
			if strings.Contains(out, `"one"`) {
				t.Errorf("lint quotes a schema value:\n%s", out)
			}
		})
	}
}

// TestBundleRBAC: bundle rbac prints the three ClusterRoles of the kind
// (the controller's with the kind's binding by name), and refuses a
// folder that publishes none.
func TestBundleRBAC(t *testing.T) {
	dir := appServiceFolder(t, appServiceAPI, `{"type":"object"}`)
	out, errOut, code := stencil(t, "", "bundle", "rbac", dir, "--name", "appservice")
	if code != 0 {
		t.Fatalf("rbac: exit %d: %s", code, errOut)
	}
	var names []string
	for _, doc := range strings.Split(out, "\n---\n") {
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
			t.Fatalf("rbac output is not ClusterRoles: %v\n%s", err, out)
		}
		// The controller's role also names the kind's binding of the
		// admission policy (issue 37); the others are the kind's alone.
		rules := 1
		if r.Labels["rbac.stencil.dev/aggregate-to-manager"] == "true" {
			rules = 2
		}
		if r.Kind != "ClusterRole" || r.Labels["stencil.dev/bundle"] != "appservice" || len(r.Rules) != rules || r.Rules[0].APIGroups[0] != "app.example.com" {
			t.Errorf("role %s: kind %s labels %v rules %v", r.Name, r.Kind, r.Labels, r.Rules)
		}
		names = append(names, r.Name)
	}
	want := []string{"stencil:published:appservices.app.example.com", "stencil:published:appservices.app.example.com-edit", "stencil:published:appservices.app.example.com-view"}
	if !slices.Equal(names, want) {
		t.Errorf("roles %q, want %q", names, want)
	}

	plain := filepath.Join(testenv.Root(), "examples", "bundles", "webapp")
	_, errOut, code = stencil(t, "", "bundle", "rbac", plain)
	if code == 0 || !strings.Contains(errOut, "publishes no kind") {
		t.Errorf("rbac of a bundle publishing nothing: exit %d: %s", code, errOut)
	}
	bad := appServiceFolder(t, "api:\n  group: example\n  kind: AppService\n", `{"type":"object"}`)
	_, errOut, code = stencil(t, "", "bundle", "rbac", bad)
	if code == 0 || !strings.Contains(errOut, "stencil.yaml api.group: Invalid value: must contain a dot") {
		t.Errorf("rbac of an invalid api: exit %d: %s", code, errOut)
	}
}

// TestPackCarriesAPI: pack prints stencil.yaml's api as written: version
// and plural stay empty (the controller defaults them).
func TestPackCarriesAPI(t *testing.T) {
	dir := appServiceFolder(t, "api:\n  group: app.example.com\n  kind: AppService\n  shortNames: [as]\n", `{"type":"object"}`)
	out, errOut, code := stencil(t, "", "bundle", "pack", dir, "--name", "appservice")
	if code != 0 {
		t.Fatalf("pack: exit %d: %s", code, errOut)
	}
	b := &v1alpha1.Bundle{}
	if err := yaml.UnmarshalStrict([]byte(out), b); err != nil {
		t.Fatalf("pack output is not a Bundle: %v\n%s", err, out)
	}
	want := &v1alpha1.BundleAPI{Group: "app.example.com", Kind: "AppService", ShortNames: []string{"as"}}
	if diff := cmp.Diff(want, b.Spec.API); diff != "" {
		t.Errorf("packed spec.api (-want +got):\n%s", diff)
	}
	if _, ok := b.Spec.Files["stencil.yaml"]; ok {
		t.Error("stencil.yaml packed as a file")
	}
}

// TestLintWithInstance: for a bundle that publishes a kind, a -f file may
// be an instance of it, as the user applies it: its spec is the values.
func TestLintWithInstance(t *testing.T) {
	dir := appServiceFolder(t, appServiceAPI, `{"type":"object","properties":{"size":{"type":"integer","minimum":0}}}`)
	files := t.TempDir()
	good, bad := filepath.Join(files, "good.yaml"), filepath.Join(files, "bad.yaml")
	for path, size := range map[string]int{good: 2, bad: -1} {
		if err := os.WriteFile(path, []byte(fmt.Sprintf("apiVersion: app.example.com/v1\nkind: AppService\nmetadata:\n  name: web\nspec:\n  size: %d\n", size)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, errOut, code := stencil(t, "", "bundle", "lint", dir, "--offline", "-f", good, "-f", bad)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"(" + good + "): 1 objects ok", "(" + bad + "): values.size: must be >= 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("lint output:\n%s\nwant it to contain %q", out, want)
		}
	}
}

// TestPackChartArchives: pack writes a folder's chart archives
// (charts/*.tgz, as `helm dependency build` leaves them) unpacked, as
// text files under charts/NAME/, so the Bundle object renders exactly as
// the folder does (testdata/charts/parent holds charts/cache-0.2.0.tgz,
// enabled by parent.values.yaml's tags).
func TestPackChartArchives(t *testing.T) {
	dir := filepath.Join(testenv.Root(), "templates", "testdata", "charts", "parent")
	out, errOut, code := stencil(t, "", "bundle", "pack", dir, "--name", "parent")
	if code != 0 {
		t.Fatalf("pack: exit %d: %s", code, errOut)
	}
	obj := &v1alpha1.Bundle{}
	if err := yaml.UnmarshalStrict([]byte(out), obj); err != nil {
		t.Fatalf("pack output is not a Bundle: %v", err)
	}
	if _, ok := obj.Spec.Files["charts/cache-0.2.0.tgz"]; ok {
		t.Error("packed Bundle holds the archive charts/cache-0.2.0.tgz, want its files")
	}
	if obj.Spec.Files["charts/cache/Chart.yaml"] == "" {
		t.Error("packed Bundle has no charts/cache/Chart.yaml")
	}
	fromObject, err := templates.LoadObject(obj)
	if err != nil {
		t.Fatalf("LoadObject of the packed Bundle: %v", err)
	}
	fromDir, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	vals, err := os.ReadFile(filepath.Join(dir, "..", "parent.values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(vals)
	if err != nil {
		t.Fatal(err)
	}
	in := templates.Input{Values: &apiextensionsv1.JSON{Raw: js}, Composition: templates.CompositionInfo{Name: "rel", Namespace: "ns"}}
	want, err := templates.Render(fromDir, in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := templates.Render(fromObject, in)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(want, func(o *unstructured.Unstructured) bool { return strings.Contains(o.GetName(), "cache") }) {
		t.Fatal("the folder renders no object of the archived cache chart: the test does not exercise it")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the packed Bundle renders differently from the folder (-folder +packed):\n%s", diff)
	}
}

// TestPackRefusesBinaryFiles: a file that is not UTF-8 text cannot be
// held in a Bundle object's files: pack names it rather than print a
// Bundle whose file is mangled.
func TestPackRefusesBinaryFiles(t *testing.T) {
	dir := writeBundle(t, map[string]string{
		"values.yaml":       "name: x\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n",
		"files/logo.png":    "\x89PNG\r\n\x1a\n\xff\xfe",
	})
	out, errOut, code := stencil(t, "", "bundle", "pack", dir, "--name", "bin")
	if code == 0 || !strings.Contains(errOut, "files/logo.png") || !strings.Contains(errOut, "UTF-8") {
		t.Errorf("pack: exit %d, stderr %q (stdout %d bytes), want an error naming files/logo.png", code, errOut, len(out))
	}
}
