package templates_test

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// renderNotes renders files as Bundle demo for web and returns the
// render's notes.
func renderNotes(t *testing.T, files map[string]string, vals string) (templates.Notes, error) {
	t.Helper()
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: files}})
	if err != nil {
		return templates.Notes{}, err
	}
	var n templates.Notes
	_, err = templates.Render(b, templates.Input{Values: values(vals), Composition: web, Notes: &n})
	return n, err
}

// TestHelmNotes: templates/NOTES.txt is rendered as Helm's install
// renders it (helm.sh/helm/v4 pkg/engine executes it with the other
// templates, pkg/action's renderResources keeps the root chart's as the
// release's notes): its text is Input.Notes, without the spaces around
// it, "<no value>" erased; it sees what the templates run before it set
// in the shared data; a subchart's runs too, but its text is dropped.
func TestHelmNotes(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":                     "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"values.yaml":                    "url: shop.example\n",
		"templates/cm.yaml":              "{{ $_ := set .Values \"set\" \"by cm.yaml\" }}" + supportCM,
		"templates/NOTES.txt":            "\n  Visit https://{{ .Values.url }} ({{ .Release.Name }}, {{ .Values.set }}){{ .Values.missing }}\n\n",
		"charts/sub/Chart.yaml":          "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/templates/NOTES.txt": "the subchart's notes\n",
	}
	n, err := renderNotes(t, files, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := "Visit https://shop.example (web, by cm.yaml)"; n.Text != want || n.Sensitive {
		t.Errorf("notes %+v, want text %q, not sensitive", n, want)
	}

	delete(files, "templates/NOTES.txt")
	if n, err := renderNotes(t, files, ""); err != nil || n != (templates.Notes{}) {
		t.Errorf("without a NOTES.txt: notes %+v, %v; want none", n, err)
	}
}

// TestHelmNotesErrors: a fail or a required in a NOTES.txt fails the
// render, as it fails Helm's install, with a RenderError naming the file
// and line, and the render's notes are not set; a subchart's NOTES.txt
// fails it too (Helm executes it even though it prints it not).
func TestHelmNotesErrors(t *testing.T) {
	chart := func(file, text string) map[string]string {
		return map[string]string{
			"Chart.yaml":            "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
			"templates/cm.yaml":     supportCM,
			"charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
			file:                    text,
		}
	}
	tests := []struct {
		name, file, text, vals string
		line                   int
		msg                    string
	}{
		{"fail", "templates/NOTES.txt", "Installed.\n{{ fail \"set a password first\" }}\n", "", 2, "set a password first"},
		{"required", "templates/NOTES.txt", "Visit\n\n{{ required \"url is required\" .Values.url }}\n", "", 3, "url is required"},
		{"a subchart's", "charts/sub/templates/NOTES.txt", "{{ fail \"sub\" }}", "", 1, "sub"},
		{"another NOTES.txt", "templates/extra/MY-NOTES.txt", "\n{{ fail \"extra\" }}", "", 2, "extra"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := renderNotes(t, chart(tt.file, tt.text), tt.vals)
			var re *templates.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("error %v, want a RenderError", err)
			}
			if re.File != tt.file || re.Line != tt.line || !strings.Contains(re.Msg, tt.msg) {
				t.Errorf("error at %s:%d %q, want %s:%d %q", re.File, re.Line, re.Msg, tt.file, tt.line, tt.msg)
			}
			if n != (templates.Notes{}) {
				t.Errorf("notes %+v set by a render that failed", n)
			}
		})
	}
	if _, err := renderNotes(t, chart("templates/NOTES.txt", "{{ required \"url is required\" .Values.url }}"), `{"url": "x"}`); err != nil {
		t.Errorf("with the value required: %v", err)
	}
}

// TestHelmNotesSensitive: a render that looked up an object, read an
// observed value or called a generator marks its notes Sensitive (what
// any template read may reach the text through the shared data), so no
// status shows them (package templates/notes).
func TestHelmNotesSensitive(t *testing.T) {
	for _, tt := range []struct {
		name, cm  string
		sensitive bool
	}{
		{"nothing read", supportCM, false},
		{"lookup", "{{ $_ := lookup \"v1\" \"Secret\" \"shop\" \"db\" }}" + supportCM, true},
		{"observed", "{{ $_ := observed \"v1/Service/web\" \"spec.clusterIP\" }}" + supportCM, true},
		{"a generator", "{{ $_ := randAlphaNum 16 }}" + supportCM, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n, err := renderNotes(t, map[string]string{"templates/cm.yaml": tt.cm, "templates/NOTES.txt": "installed"}, "")
			if err != nil {
				t.Fatal(err)
			}
			if n.Text != "installed" || n.Sensitive != tt.sensitive {
				t.Errorf("notes %+v, want text installed, sensitive %v", n, tt.sensitive)
			}
		})
	}
}
