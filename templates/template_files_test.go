package templates_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stencil-dev/stencil/templates"
)

// cmNamed is a ConfigMap named name.
func cmNamed(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"
}

// TestHelmEveryTemplateFile: every file of templates/ is a template, as
// Helm v4.3.1's (pkg/chart/v2/loader puts every file of templates/ in a
// chart's templates, pkg/engine parses them all and executes each whose
// name does not start with "_", releaseutil.SortManifests parses what is
// not blank): a define of templates/pod-template.tpl is found (falco), a
// templates/x.txt or x.json holding an object is printed, a file that
// prints only spaces is nothing, a file ending in NOTES.txt is executed
// and never an object (pkg/action's renderResources). A library chart's
// files but its partials are never parsed. A bundle without Chart.yaml
// follows the same rule. hack/helmbench's TestTemplateFilesAsHelm
// renders the same chart with Helm's engine.
func TestHelmEveryTemplateFile(t *testing.T) {
	chart := map[string]string{
		"Chart.yaml":                      "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"templates/pod-template.tpl":      `{{- define "demo.pod" }}name: {{ . }}{{ end -}}`,
		"templates/uses-define.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  {{- include \"demo.pod\" \"from-tpl\" | nindent 2 }}\n",
		"templates/object.txt":            cmNamed("from-txt"),
		"templates/deep/object.json":      `{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "from-json"}}`,
		"templates/blank.txt":             "{{/* nothing */}}\n  \n",
		"templates/NOTES.txt":             "{{ .Release.Name }} is installed\n",
		"templates/MY-NOTES.txt":          cmNamed("never-an-object"),
		"templates/more/NOTES.txt":        cmNamed("never-an-object-either"),
		"templates/_partial.txt":          cmNamed("never-executed"),
		"charts/sub/Chart.yaml":           "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/templates/s.txt":      cmNamed("from-subchart-txt"),
		"charts/sub/templates/NOTES.txt":  cmNamed("subchart-notes"),
		"charts/lib/Chart.yaml":           "apiVersion: v2\nname: lib\nversion: 0.1.0\ntype: library\n",
		"charts/lib/templates/_l.txt":     `{{- define "lib.name" }}from-library{{ end -}}`,
		"charts/lib/templates/broken.txt": "{{ broken",
		"templates/uses-library.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"lib.name\" . }}\n",
	}
	got, err := renderSupport(t, chart)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ConfigMap/from-json", "ConfigMap/from-txt", "ConfigMap/from-tpl", "ConfigMap/from-library", "ConfigMap/from-subchart-txt"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}

	t.Run("a bundle without Chart.yaml", func(t *testing.T) {
		plain := map[string]string{
			"templates/_helpers.txt": `{{- define "n" }}plain-{{ . }}{{ end -}}`,
			"templates/a.txt":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"n\" \"txt\" }}\n",
			"templates/b.yaml":       cmNamed("plain-yaml"),
			"templates/NOTES.txt":    cmNamed("plain-notes"),
		}
		got, err := renderSupport(t, plain)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"ConfigMap/plain-txt", "ConfigMap/plain-yaml"}; !slices.Equal(got, want) {
			t.Errorf("objects %v, want %v", got, want)
		}
	})

	// What is not blank is parsed as objects, as Helm's SortManifests
	// does: prose in templates/ is an error naming the file and line.
	t.Run("prose is an error", func(t *testing.T) {
		_, err := renderSupport(t, map[string]string{
			"templates/cm.yaml":   cmNamed("c"),
			"templates/README.md": "# demo\n\nThis chart renders a ConfigMap.\n",
		})
		var re *templates.RenderError
		if !errors.As(err, &re) || re.File != "templates/README.md" || re.Line < 1 {
			t.Fatalf("error %v, want a RenderError at a line of templates/README.md", err)
		}
	})

	// A template of any name parses when the bundle loads.
	t.Run("a parse error in any file", func(t *testing.T) {
		_, err := renderSupport(t, map[string]string{
			"templates/cm.yaml":  cmNamed("c"),
			"templates/conf.ini": "a = 1\nb = {{ .Values.b\n",
		})
		var re *templates.RenderError
		if !errors.As(err, &re) || re.File != "templates/conf.ini" || re.Line != 3 || !strings.Contains(re.Msg, "unclosed action") {
			t.Fatalf("error %v, want templates/conf.ini:3 unclosed action", err)
		}
	})
}
