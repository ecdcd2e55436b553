package sandbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/templates"
)

// TestNotesCrossTheProtocol: a worker's render sets Input.Notes as the
// in-process render does, and a failing NOTES.txt fails the worker's
// render with its file and line, the notes left unset.
func TestNotesCrossTheProtocol(t *testing.T) {
	files := map[string]string{
		"templates/a.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		"templates/NOTES.txt": "\n{{ .Composition.Name }} is installed; {{ $_ := lookup \"v1\" \"Secret\" \"x\" \"y\" }}see its ConfigMap.\n",
	}
	pool := newPool(t, sandbox.Limits{}, 1)
	in := input
	var got templates.Notes
	in.Notes = &got
	if _, err := pool.Render(context.Background(), load(t, "notes", files), in); err != nil {
		t.Fatal(err)
	}
	if want := (templates.Notes{Text: "app is installed; see its ConfigMap.", Sensitive: true}); got != want {
		t.Errorf("notes %+v, want %+v", got, want)
	}

	files["templates/NOTES.txt"] = "line one\n{{ fail \"no notes today\" }}\n"
	got = templates.Notes{}
	_, err := pool.Render(context.Background(), load(t, "notes-fail", files), in)
	var re *templates.RenderError
	if !errors.As(err, &re) || re.File != "templates/NOTES.txt" || re.Line != 2 {
		t.Fatalf("error %v, want a RenderError at templates/NOTES.txt:2", err)
	}
	if got != (templates.Notes{}) {
		t.Errorf("notes %+v set by a render that failed", got)
	}
}
