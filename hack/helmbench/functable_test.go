package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/Masterminds/sprig/v3"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/engine"
)

// The section "Built-in objects and functions" of docs/helm.md has a
// row for every function of Helm v4.3.1's engine and every built-in
// object; these tests keep it from rotting when Helm is upgraded or
// stencil's functions change.

// tableRow is a row of the section's tables: the names of its first
// cell (`name`, `.Files.Get`), what stencil does, and the tests named in
// its last cell.
type tableRow struct {
	names     []string
	behaviour string
	tests     []string
}

var (
	codeRE = regexp.MustCompile("`([^`]+)`")
	testRE = regexp.MustCompile(`\bTest[A-Za-z0-9_]+`)
)

// docsTable reads the section's table rows.
func docsTable(t *testing.T) []tableRow {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "docs", "helm.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Built-in objects and functions\n")
	if !ok {
		t.Fatal(`docs/helm.md has no section "Built-in objects and functions"`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var rows []tableRow
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if !strings.HasPrefix(line, "| `") || len(cells) != 3 {
			continue
		}
		r := tableRow{behaviour: cells[1], tests: testRE.FindAllString(cells[2], -1)}
		for _, m := range codeRE.FindAllStringSubmatch(cells[0], -1) {
			r.names = append(r.names, m[1])
		}
		rows = append(rows, r)
	}
	return rows
}

// helmFunctions are the functions Helm v4.3.1's engine defines: sprig's
// text functions (its public map) and the names Helm's engine source
// spells as string literals (pkg/engine, from the module cache), kept
// when a template calling them parses in Helm's engine.
func helmFunctions(t *testing.T) []string {
	t.Helper()
	candidates := map[string]bool{}
	for name := range sprig.TxtFuncMap() {
		candidates[name] = true
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "helm.sh/helm/v4").Output()
	if err != nil {
		t.Fatalf("go list helm.sh/helm/v4: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "pkg", "engine")
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	literal := regexp.MustCompile(`"([A-Za-z_][A-Za-z0-9_]*)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range literal.FindAllStringSubmatch(string(src), -1) {
			candidates[m[1]] = true
		}
	}
	if len(files) == 0 || !candidates["toToml"] {
		t.Fatalf("no engine source under %s", dir)
	}
	var names []string
	for name := range candidates {
		if defined(HelmSnippet, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// defined reports whether a template calling name parses with render's
// engine: an undefined function is an error of the parse.
func defined(render func(snippet, values string) Outcome, name string) bool {
	return render("{{ if false }}{{ "+name+" }}{{ end }}", "").Fail != "parse"
}

// TestDocsListEveryHelmFunction: every function of Helm's engine has a
// row; a row that says stencil does as Helm names a function stencil
// defines; a row holding TestFunctionsAsHelm names a function that test
// calls; every test a row names exists.
func TestDocsListEveryHelmFunction(t *testing.T) {
	rows := docsTable(t)
	listed := map[string]tableRow{}
	for _, r := range rows {
		for _, n := range r.names {
			listed[n] = r
		}
	}
	helm := helmFunctions(t)
	if len(helm) < 230 {
		t.Fatalf("found %d functions of Helm's engine; expected about 233", len(helm))
	}
	for _, name := range helm {
		if _, ok := listed[name]; !ok {
			t.Errorf("Helm's engine has %s, which docs/helm.md's table does not list", name)
		}
	}
	called := strings.Join(diffSnippets(), " ")
	tests := definedTests(t)
	for _, r := range rows {
		if strings.HasPrefix(r.names[0], ".") {
			continue
		}
		for _, name := range r.names {
			if strings.HasPrefix(r.behaviour, "as Helm") && !defined(StencilSnippet, name) {
				t.Errorf("docs/helm.md says stencil's %s is as Helm's, but stencil has no such function", name)
			}
			if slices.Contains(r.tests, "TestFunctionsAsHelm") && !regexp.MustCompile(`\b`+name+`\b`).MatchString(called) {
				t.Errorf("docs/helm.md names TestFunctionsAsHelm for %s, which that test never calls", name)
			}
		}
		checkTests(t, r, tests)
	}
}

// TestDocsListEveryBuiltinObject: every built-in object Helm's engine
// gives a template (the render values' keys, .Release's, each field of
// the chart metadata and of .Capabilities and their methods, .Files'
// methods, .Template's) has a row, and every test a row names exists.
func TestDocsListEveryBuiltinObject(t *testing.T) {
	rows := docsTable(t)
	listed := map[string]bool{}
	for _, r := range rows {
		for _, n := range r.names {
			listed[n] = true
		}
	}
	var want []string
	top, files := helmTop(t)
	for key, v := range top {
		want = append(want, "."+key)
		if m, ok := v.(map[string]any); ok && (key == "Release" || key == "Template") {
			for k := range m {
				want = append(want, "."+key+"."+k)
			}
		}
	}
	for name := range members(reflect.TypeOf(files)) {
		want = append(want, ".Files."+name)
	}
	for _, f := range reflect.VisibleFields(reflect.TypeFor[chartv2.Metadata]()) {
		want = append(want, ".Chart."+f.Name)
	}
	want = append(want, ".Chart.IsRoot")
	for _, f := range reflect.VisibleFields(reflect.TypeFor[common.Capabilities]()) {
		want = append(want, ".Capabilities."+f.Name)
		for m := range members(f.Type) {
			want = append(want, ".Capabilities."+f.Name+"."+m)
		}
	}
	for _, name := range want {
		if !listed[name] {
			t.Errorf("Helm's templates see %s, which docs/helm.md's table does not list", name)
		}
	}
	tests := definedTests(t)
	for _, r := range rows {
		checkTests(t, r, tests)
	}
}

// helmTop renders with Helm's engine a template that captures its data
// and its .Files.
func helmTop(t *testing.T) (top map[string]any, files any) {
	t.Helper()
	c := &chartv2.Chart{Metadata: &chartv2.Metadata{APIVersion: "v2", Name: "objects", Version: "0.1.0"},
		Templates: []*common.File{{Name: "templates/t.yaml", Data: []byte("{{ capture . }}")}}}
	vals, err := util.ToRenderValues(c, map[string]any{}, common.ReleaseOptions{Name: "web", Namespace: "shop"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := engine.Engine{CustomTemplateFuncs: map[string]any{"capture": func(v map[string]any) string {
		top = maps.Clone(v)
		return ""
	}}}
	if _, err := e.RenderWithContext(t.Context(), c, vals); err != nil {
		t.Fatal(err)
	}
	return top, top["Files"]
}

// members are the exported fields and methods (of the value or a
// pointer to it) of a type.
func members(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	if t.Kind() == reflect.Struct {
		for _, f := range reflect.VisibleFields(t) {
			if f.IsExported() {
				out[f.Name] = true
			}
		}
	}
	for _, typ := range []reflect.Type{t, reflect.PointerTo(t)} {
		for i := range typ.NumMethod() {
			out[typ.Method(i).Name] = true
		}
	}
	return out
}

// definedTests are the Test functions of stencil's packages and this
// module.
func definedTests(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(`)
	for _, root := range []string{".", filepath.Join("..", "..", "templates"), filepath.Join("..", "..", "reconcile")} {
		_ = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(path, "_test.go") {
				src, _ := os.ReadFile(path)
				for _, m := range decl.FindAllStringSubmatch(string(src), -1) {
					out[m[1]] = true
				}
			}
			return nil
		})
	}
	return out
}

func checkTests(t *testing.T, r tableRow, tests map[string]bool) {
	t.Helper()
	if len(r.tests) == 0 {
		t.Errorf("docs/helm.md's row for %s names no test", r.names)
	}
	for _, name := range r.tests {
		if !tests[name] {
			t.Errorf("docs/helm.md's row for %s names %s, which does not exist", r.names, name)
		}
	}
}
