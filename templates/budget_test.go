package templates_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/budget"
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
			p := new(budget.Progress)
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

// TestReservedNames: the budget's functions cannot be
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
		_, err := templates.Render(b, templates.Input{Composition: web, Limits: budget.Limits{MaxSteps: tt.steps}})
		if (err == nil) != tt.ok {
			t.Errorf("MaxSteps %d: err = %v, want ok=%v", tt.steps, err, tt.ok)
		}
	}
}

// TestTplTexts: tpl runs each text as its own, in one render and in the
// renders after it (which reuse the parsed texts): nested, empty, beside
// a helper named tpl, and in a range.
func TestTplTexts(t *testing.T) {
	b := bundle(t, map[string]string{
		"templates/_h.tpl": `{{ define "tpl" }}helper{{ end }}{{ define "h" }}[{{ . }}]{{ end }}`,
		"templates/t.yaml": cm(`"{{ tpl "a{{ tpl \"b{{ include \\\"h\\\" 1 }}\" . }}c" . }}|{{ tpl "" . }}|{{ include "tpl" . }}|` +
			`{{ range list "x" "y" "x" }}{{ tpl "<{{ . }}>" . }}{{ tpl . $ }}{{ end }}|{{ include "tpl" . }}"`),
	})
	// An empty text does not replace a template named tpl (text/template
	// keeps a template over an empty redefinition), as before.
	want := "  v: ab[1]c|helper|helper|<x>x<y>y<x>x|helper"
	for i := range 3 {
		objs, err := templates.Render(b, templates.Input{Composition: web})
		if err != nil {
			t.Fatalf("render %d: %v", i, err)
		}
		if got := toYAML(t, objs); !strings.Contains(got, want) {
			t.Fatalf("render %d:\n%s\nwant %q", i, got, want)
		}
	}
}
