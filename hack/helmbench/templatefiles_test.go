package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	loaderv2 "helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"

	"github.com/stencil-dev/stencil/templates"
)

// templateFilesChart is templates' TestHelmEveryTemplateFile chart: every
// kind of file of templates/ Helm reads (a .tpl of defines, objects in
// .txt and .json, a blank file, NOTES.txt and other files ending in it,
// a partial of any extension), a subchart's, and a library's.
func templateFilesChart(extra map[string]string) map[string]string {
	cm := func(name string) string { return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n" }
	files := map[string]string{
		"Chart.yaml":                      "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"values.yaml":                     "url: shop.example\n",
		"templates/pod-template.tpl":      `{{- define "demo.pod" }}name: {{ . }}{{ end -}}`,
		"templates/uses-define.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  {{- include \"demo.pod\" \"from-tpl\" | nindent 2 }}\n",
		"templates/object.txt":            cm("from-txt"),
		"templates/deep/object.json":      `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-json"}}`,
		"templates/blank.txt":             "{{/* nothing */}}\n  \n",
		"templates/NOTES.txt":             "\n  Visit https://{{ .Values.url }} ({{ .Release.Name }}){{ .Values.missing }}\n\n",
		"templates/MY-NOTES.txt":          cm("never-an-object"),
		"templates/more/NOTES.txt":        cm("never-an-object-either"),
		"templates/_partial.txt":          cm("never-executed"),
		"charts/sub/Chart.yaml":           "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/templates/s.txt":      cm("from-subchart-txt"),
		"charts/sub/templates/NOTES.txt":  "the subchart's notes\n",
		"charts/lib/Chart.yaml":           "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n",
		"charts/lib/templates/_l.txt":     `{{- define "lib.name" }}from-library{{ end -}}`,
		"charts/lib/templates/broken.txt": "{{ broken",
		"templates/uses-library.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"lib.name\" . }}\n",
	}
	maps.Copy(files, extra)
	return files
}

// renderBoth writes files to a folder and renders it as a chart with
// Helm's engine (as SuiteHelm) and with stencil's (as SuiteStencil).
func renderBoth(t *testing.T, files map[string]string) (helm, stencil Rendered, helmNotes, stencilNotes string, helmErr, stencilErr error) {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := loaderv2.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := chartutil.ProcessDependencies(c, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	helm, helmNotes, helmErr = helmRenderChart(c, map[string]any{})
	b, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: "demo"})
	if err != nil {
		return helm, nil, helmNotes, "", helmErr, err
	}
	stencil, _, stencilNotes, stencilErr = stencilRender(b, "")
	return helm, stencil, helmNotes, stencilNotes, helmErr, stencilErr
}

// TestTemplateFilesAsHelm: stencil prints the objects and the notes
// Helm's engine and install print for every kind of file of templates/,
// and fails where Helm fails: a fail in any NOTES.txt (a subchart's too),
// prose in a file of templates/.
func TestTemplateFilesAsHelm(t *testing.T) {
	helm, stencil, helmNotes, stencilNotes, helmErr, stencilErr := renderBoth(t, templateFilesChart(nil))
	if helmErr != nil || stencilErr != nil {
		t.Fatalf("helm: %v; stencil: %v", helmErr, stencilErr)
	}
	if diffs := diffRendered(helm, stencil, ""); len(diffs) > 0 {
		t.Errorf("objects differ: %v", diffs)
	}
	if want := []string{"v1 ConfigMap <nil>/from-json", "v1 ConfigMap <nil>/from-library", "v1 ConfigMap <nil>/from-subchart-txt", "v1 ConfigMap <nil>/from-tpl", "v1 ConfigMap <nil>/from-txt"}; !slices.Equal(slices.Sorted(maps.Keys(helm)), want) {
		t.Errorf("Helm rendered %v, want %v", slices.Sorted(maps.Keys(helm)), want)
	}
	if helmNotes != stencilNotes || helmNotes != "Visit https://shop.example (release-name)" {
		t.Errorf("notes: helm %q, stencil %q", helmNotes, stencilNotes)
	}
	for name, extra := range map[string]map[string]string{
		"fail in NOTES.txt":                {"templates/NOTES.txt": "{{ fail \"stop\" }}"},
		"required in NOTES.txt":            {"templates/NOTES.txt": "{{ required \"need it\" .Values.missing }}"},
		"fail in another NOTES.txt":        {"templates/more/NOTES.txt": "{{ fail \"stop\" }}"},
		"fail in a subchart's NOTES.txt":   {"charts/sub/templates/NOTES.txt": "{{ fail \"stop\" }}"},
		"prose in templates/":              {"templates/README.md": "# demo\n\nThis chart renders ConfigMaps.\n"},
		"a parse error in a non-YAML file": {"templates/conf.ini": "a = {{ .Values.b\n"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, _, _, helmErr, stencilErr := renderBoth(t, templateFilesChart(extra))
			if helmErr == nil || stencilErr == nil {
				t.Errorf("helm: %v; stencil: %v; want both to fail", helmErr, stencilErr)
			}
		})
	}
}
