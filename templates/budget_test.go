package templates_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/templates"
)

// TestDeadlineNamesLine: a render stopped at its deadline names the line
// being executed, in its error and in Progress, however slow each
// iteration is.
func TestDeadlineNamesLine(t *testing.T) {
	files := map[string]string{
		"templates/t.yaml": "{{ $s := repeat 20000 \"a\" }}\n\n" +
			"{{ range 1000000000 }}{{ if regexMatch \"a*b\" $s }}{{ end }}{{ end }}\n",
		"templates/u.yaml": "{{ include \"slow\" . }}",
		"templates/_slow.tpl": "{{ define \"slow\" }}\n{{ $s := repeat 20000 \"a\" }}\n" +
			"{{ range 1000000000 }}{{ if regexMatch \"a*b\" $s }}{{ end }}{{ end }}{{ end }}",
	}
	for _, tt := range []struct {
		name, file string
		line       int
	}{
		{"templates/t.yaml", "templates/t.yaml", 3},
		{"templates/u.yaml", "templates/_slow.tpl", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := new(templates.Progress)
			re := renderWith(t, map[string]string{tt.name: files[tt.name], "templates/_slow.tpl": files["templates/_slow.tpl"]}, "", huge, 200*time.Millisecond, p)
			if re.Reason != templates.ReasonTimeout || re.File != tt.file || re.Line != tt.line {
				t.Errorf("got %q at %s:%d, want %q at %s:%d: %v", re.Reason, re.File, re.Line, templates.ReasonTimeout, tt.file, tt.line, re)
			}
			if f, l := p.Where(); f != tt.file || l != tt.line {
				t.Errorf("Progress at %s:%d, want %s:%d", f, l, tt.file, tt.line)
			}
		})
	}
}

// TestReservedNames: the budget's functions and variable cannot be
// named in a template (where they are not defined when it is parsed) or
// in tpl's text (where they are, and are refused), so no template can
// charge or refund the budget itself.
func TestReservedNames(t *testing.T) {
	for _, tt := range []struct {
		name, text, values string
		line               int
		msg                string
	}{
		{"function", "a: 1\n{{ _stencil0 }}{{ range 1 }}{{ end }}", "", 2, `function "_stencil0" not defined`},
		{"function in a pipeline", "{{ if true }}\n{{ print (_stencil1) }}{{ end }}", "", 2, "not defined"},
		{"variable", "{{ range 1 }}\n{{ $_stencil := 1 }}{{ end }}", "", 2, "$_stencil is reserved"},
		{"in tpl's text", "a: 1\n{{ tpl .Values.t . }}", `{"t":"{{ range 3 }}{{ _stencil0 }}{{ end }}"}`, 2, "_stencil0 is reserved"},
		{"in tpl's text, in a pipeline", "a: 1\n\n{{ tpl .Values.t . }}", `{"t":"{{ if (print (_stencil0)) }}{{ end }}"}`, 3, "_stencil0 is reserved"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderFiles(t, tmpl(tt.text), tt.values)
			var re *templates.RenderError
			if !errors.As(err, &re) || re.File != "templates/t.yaml" || re.Line != tt.line || !strings.Contains(re.Msg, tt.msg) {
				t.Fatalf("err = %v, want a RenderError at templates/t.yaml:%d saying %q", err, tt.line, tt.msg)
			}
		})
	}
}

// TestStepsCountBodies: a body is charged its steps when it starts: one
// per node it may walk, the larger branch of an if.
func TestStepsCountBodies(t *testing.T) {
	// Each iteration: the iteration, the body list, the if, and the
	// larger branch (its list and 3 nodes) = 1 + 1 + 1 + 4; and the
	// file's list and the range.
	text := "{{ range 100 }}{{ if . }}{{ $x := 1 }}{{ $y := 2 }}{{ $z := 3 }}{{ else }}{{ $w := 4 }}{{ end }}{{ end }}"
	for _, tt := range []struct {
		steps int64
		ok    bool
	}{{702, true}, {701, false}} {
		b := bundle(t, tmpl(text))
		_, err := templates.Render(b, templates.Input{Composition: web, Limits: templates.Limits{MaxSteps: tt.steps}})
		if (err == nil) != tt.ok {
			t.Errorf("MaxSteps %d: err = %v, want ok=%v", tt.steps, err, tt.ok)
		}
	}
}
