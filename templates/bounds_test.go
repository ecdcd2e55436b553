package templates_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/budget"
)

// huge lifts the size bounds, so that only a deadline stops a render.
var huge = budget.Limits{MaxSteps: 1 << 62, MaxRangeIterations: 1 << 62, MaxTemplateCalls: 1 << 62}

// Helpers of the fan-out cases: each call makes two more, 30 deep (2^30 calls).
const (
	includeFan  = "{{- define \"fan\" -}}\n{{- if lt (len .) 30 -}}\n{{ include \"fan\" (append . 1) }}{{ include \"fan\" (append . 1) }}\n{{- end -}}\n{{- end -}}\n"
	templateFan = "{{- define \"tfan\" -}}\n{{- if lt (len .) 30 -}}\n{{ template \"tfan\" (append . 1) }}{{ template \"tfan\" (append . 1) }}\n{{- end -}}\n{{- end -}}\n"
	nested3     = "{{ range 10000 }}{{ range 10000 }}{{ range 10000 }}x{{ end }}{{ end }}{{ end }}"
	// spin calls no function and writes nothing: only a deadline stops it.
	spin = "{{ range 1000000000 }}{{ range 1000000000 }}{{ end }}{{ end }}"
)

// renderWith renders the files with values, limits and an optional
// deadline, and returns the error as a *RenderError. The bundle is loaded
// before the deadline starts: on a busy machine its parsing could take a
// good part of it, and the deadline would stop the render before the
// line a test expects it in.
func renderWith(t *testing.T, files map[string]string, vals string, l budget.Limits, timeout time.Duration, p *budget.Progress) *templates.RenderError {
	t.Helper()
	b, in := bundle(t, files), templates.Input{Values: values(vals), Composition: web, Limits: l, Progress: p}
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	_, err := templates.RenderContext(ctx, b, in)
	if err == nil {
		t.Fatal("render succeeded; want it stopped")
	}
	var re *templates.RenderError
	if !errors.As(err, &re) {
		t.Fatalf("error %T is not a *RenderError: %v", err, err)
	}
	return re
}

// TestBounds: a hostile template or hostile values stop the render with a
// RenderError naming the bound, the file and the line being executed.
func TestBounds(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string // templates/t.yaml and helpers
		values  string
		limits  budget.Limits
		timeout time.Duration
		reason  string
		file    string
		line    int
		msg     string
	}{
		// Loops, with the default limits.
		{"range over 3e9", map[string]string{"templates/t.yaml": "a: 1\n{{ range 3000000000 }}x{{ end }}"}, "", budget.Limits{},
			0, templates.ReasonTooLarge, "templates/t.yaml", 2, "render stopped: more than 1000000 range iterations"},
		{"three nested ranges", map[string]string{"templates/t.yaml": "\n\n" + nested3}, "", budget.Limits{},
			0, templates.ReasonTooLarge, "templates/t.yaml", 3, "more than 1000000 range iterations"},
		{"range over a tenant's count", map[string]string{"templates/t.yaml": "{{ range int .Values.count }}{{ end }}"}, `{"count":1000000000000000}`, budget.Limits{},
			0, templates.ReasonTooLarge, "templates/t.yaml", 1, "more than 1000000 range iterations"},
		{"negative limits take the defaults", map[string]string{"templates/t.yaml": "{{ range 3000000000 }}{{ end }}"}, "", budget.Limits{MaxSteps: math.MinInt64, MaxRangeIterations: -1},
			0, templates.ReasonTooLarge, "templates/t.yaml", 1, "more than 1000000 range iterations"},
		{"steps", map[string]string{"templates/t.yaml": "{{ range until 5000 }}{{ if true }}{{ end }}{{ end }}"}, "", budget.Limits{MaxSteps: 1000},
			0, templates.ReasonTooLarge, "templates/t.yaml", 1, "render stopped: more than 1000 steps"},
		// Nesting: include, template and tpl share the render's budget.
		{"include fan-out", map[string]string{"templates/t.yaml": `{{ include "fan" list }}`, "templates/_fan.tpl": includeFan}, "", budget.Limits{MaxTemplateCalls: 1000},
			0, templates.ReasonTooLarge, "templates/_fan.tpl", 3, "more than 1000 template calls"},
		{"template fan-out", map[string]string{"templates/t.yaml": `{{ template "tfan" list }}`, "templates/_fan.tpl": templateFan}, "", budget.Limits{MaxTemplateCalls: 1000},
			0, templates.ReasonTooLarge, "templates/_fan.tpl", 3, "more than 1000 template calls"},
		{"include recursion", map[string]string{"templates/t.yaml": "\n" + `{{ include "self" . }}`, "templates/_self.tpl": "{{ define \"self\" }}\n{{ include \"self\" . }}{{ end }}"}, "", budget.Limits{},
			0, templates.ReasonTooLarge, "templates/_self.tpl", 2, "nested more than 100 deep"},
		{"tpl of a loop in values", map[string]string{"templates/t.yaml": "a: 1\n{{ tpl .Values.t . }}"}, `{"t":"{{ range until 10000 }}{{ range until 10000 }}x{{ end }}{{ end }}"}`, budget.Limits{MaxRangeIterations: 5000},
			0, templates.ReasonTooLarge, "templates/t.yaml", 2, "more than 5000 range iterations"},
		{"tpl in tpl in include", map[string]string{"templates/t.yaml": `{{ include "h" . }}`, "templates/_h.tpl": "{{ define \"h\" }}\n\n{{ tpl .Values.t . }}{{ end }}"}, `{"t":"{{ tpl \"{{ range 3000000000 }}{{ end }}\" . }}"}`, budget.Limits{MaxRangeIterations: 5000},
			0, templates.ReasonTooLarge, "templates/_h.tpl", 3, "more than 5000 range iterations"},
		// Whole render: the files of one render share the bounds (they
		// run in Helm's order, u.yaml before t.yaml).
		{"two files", map[string]string{"templates/t.yaml": "\n{{ range 600 }}{{ end }}", "templates/u.yaml": "{{ range 600 }}{{ end }}"}, "", budget.Limits{MaxRangeIterations: 1000},
			0, templates.ReasonTooLarge, "templates/t.yaml", 2, "more than 1000 range iterations"},
		{"output through includes", map[string]string{"templates/t.yaml": "{{ include \"big\" . }}\n{{ include \"big\" . }}", "templates/_big.tpl": `{{ define "big" }}{{ repeat 400 "x" }}{{ end }}`}, "", budget.Limits{MaxOutputBytes: 1000},
			0, templates.ReasonTooLarge, "templates/_big.tpl", 1, "output larger than 1000 bytes"},
		// Deadline.
		{"deadline", map[string]string{"templates/t.yaml": "\n\n" + spin}, "", huge,
			200 * time.Millisecond, templates.ReasonTimeout, "templates/t.yaml", 3, "render stopped: deadline exceeded"},
		{"deadline in an include", map[string]string{"templates/t.yaml": `{{ include "spin" . }}`, "templates/_spin.tpl": "{{ define \"spin\" }}\n" + spin + "{{ end }}"}, "", huge,
			200 * time.Millisecond, templates.ReasonTimeout, "templates/_spin.tpl", 2, "deadline exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re := renderWith(t, tt.files, tt.values, tt.limits, tt.timeout, nil)
			if re.Reason != tt.reason || re.File != tt.file || re.Line <= 0 || (tt.line > 0 && re.Line != tt.line) {
				t.Errorf("got reason %q at %s:%d, want %q at %s:%d: %v", re.Reason, re.File, re.Line, tt.reason, tt.file, tt.line, re)
			}
			if !strings.Contains(re.Error(), tt.msg) {
				t.Errorf("error %q\nwant it to contain %q", re, tt.msg)
			}
		})
	}
}

// TestCanceled: a render whose context is canceled (not past its deadline)
// is not the bundle's fault: no Reason, and the error wraps context.Canceled.
func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := templates.RenderContext(ctx, bundle(t, map[string]string{"templates/t.yaml": spin}), templates.Input{Composition: web, Limits: huge})
	var re *templates.RenderError
	if !errors.As(err, &re) || re.Reason != "" || !errors.Is(err, context.Canceled) {
		t.Errorf("err = %#v, want a RenderError without Reason wrapping context.Canceled", err)
	}
}

// TestProgress: Where names the file and line being executed, during the
// render (from another goroutine) and after it stopped.
func TestProgress(t *testing.T) {
	files := map[string]string{"templates/a.yaml": "", "templates/t.yaml": `{{ include "loop" . }}`, "templates/_loop.tpl": "{{ define \"loop\" }}\n\n" + spin + "{{ end }}"}
	p := new(budget.Progress)
	if f, l := p.Where(); f != "" || l != 0 {
		t.Errorf("before the render: %s:%d, want nothing", f, l)
	}
	done := make(chan *templates.RenderError)
	go func() { done <- renderWith(t, files, "", huge, 300*time.Millisecond, p) }()
	for running := true; running; {
		select {
		case re := <-done:
			if re.Reason != templates.ReasonTimeout {
				t.Errorf("reason %q, want %q: %v", re.Reason, templates.ReasonTimeout, re)
			}
			running = false
		case <-time.After(5 * time.Millisecond):
			if f, _ := p.Where(); f != "" && f != "templates/_loop.tpl" && f != "templates/t.yaml" && f != "templates/a.yaml" {
				t.Errorf("during the render: %s", f)
			}
		}
	}
	if f, l := p.Where(); f != "templates/_loop.tpl" || l != 3 {
		t.Errorf("after the render: %s:%d, want templates/_loop.tpl:3", f, l)
	}
}

// TestRealBundlesWithinDefaults: the webapp testdata and every example
// bundle render under the default limits, and even under a hundredth of
// them (the defaults are far above real charts).
func TestRealBundlesWithinDefaults(t *testing.T) {
	dirs, err := filepath.Glob("../examples/bundles/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no example bundles: %v", err)
	}
	dirs = append([]string{"testdata/webapp", "testdata/webapp-kustomize"}, dirs...)
	d := budget.DefaultLimits()
	tight := budget.Limits{MaxSteps: d.MaxSteps / 100, MaxRangeIterations: d.MaxRangeIterations / 100,
		MaxTemplateCalls: d.MaxTemplateCalls / 100, MaxIncludeDepth: 10, MaxOutputBytes: d.MaxOutputBytes / 100}
	for _, dir := range dirs {
		t.Run(strings.TrimPrefix(dir, "../"), func(t *testing.T) {
			b, err := templates.Load(os.DirFS(dir), templates.LoadOptions{Name: filepath.Base(dir)})
			if err != nil {
				t.Fatal(err)
			}
			vals := exampleValues(t, filepath.Base(dir))
			for _, l := range []budget.Limits{{}, tight} {
				if _, err := templates.Render(b, templates.Input{Values: vals, Composition: web, Limits: l}); err != nil {
					t.Errorf("limits %+v: %v", l, err)
				}
			}
		})
	}
}

// exampleValues returns the values of examples/compositions/NAME.yaml, or
// the spec of examples/instances/NAME.yaml (an instance of the kind the
// bundle publishes: its spec is the values), nil when there is neither.
func exampleValues(t *testing.T, name string) *apiextensionsv1.JSON {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("../examples/compositions", name+".yaml"))
	if errors.Is(err, os.ErrNotExist) {
		data, err = os.ReadFile(filepath.Join("../examples/instances", name+".yaml"))
		if errors.Is(err, os.ErrNotExist) {
			return nil
		} else if err != nil {
			t.Fatal(err)
		}
		var inst struct {
			Spec *apiextensionsv1.JSON `json:"spec"`
		}
		if err := yaml.Unmarshal(data, &inst); err != nil {
			t.Fatal(err)
		}
		return inst.Spec
	} else if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Spec struct {
			Values *apiextensionsv1.JSON `json:"values"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c.Spec.Values
}

// TestTplScope: tpl runs in a clone of the template set (shared functions,
// copied on write): its defines are seen by its own include, never by the
// helpers' callers elsewhere, and concurrent renders of one Bundle agree.
func TestTplScope(t *testing.T) {
	b := bundle(t, map[string]string{
		"templates/_h.tpl": `{{ define "h" }}helper{{ end }}`,
		"templates/t.yaml": cm(`{{ tpl "{{ define \"h\" }}tpl{{ end }}{{ include \"h\" . }}" . | quote }}`),
		"templates/u.yaml": strings.Replace(cm(`{{ include "h" . | quote }}`), "name: c", "name: d", 1),
	})
	want := "---\napiVersion: v1\ndata:\n  v: tpl\nkind: ConfigMap\nmetadata:\n  name: c\n---\napiVersion: v1\ndata:\n  v: helper\nkind: ConfigMap\nmetadata:\n  name: d\n"
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			objs, err := templates.Render(b, templates.Input{Composition: web})
			if err == nil && toYAML(t, objs) != want {
				err = errors.New("output:\n" + toYAML(t, objs))
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
