package templates_test

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/budget"
)

// The parent chart (testdata/charts/parent) exercises Helm's dependency
// rules: a folder subchart (web) with a nested one (leaf), the same chart
// again under an alias (api, whose leaf its parent's values disable), an
// archive (charts/cache-0.2.0.tgz) enabled by a tag, a chart disabled by
// a tag (metrics) and one by a condition though its tag is true (extra),
// import-values in both forms, globals merged down, a library chart
// (common) whose define every chart includes, and a parent template
// including a subchart's define. The two chart has a nested subchart
// whose condition is set from the root, import-values of a scalar, into
// "." and from a sub-subchart's table, a condition that is not a
// boolean, and a chart charts/ holds but Chart.yaml does not list.
//
// testdata/charts/CHART-VALUES.helm.yaml is Helm's own output, made with
// Helm v4.3.1 (go install helm.sh/helm/v4/cmd/helm@v4.3.1):
//
//	helm template rel testdata/charts/CHART -n ns -f testdata/charts/CHART-VALUES.values.yaml

// TestChartDependencies: stencil renders the test charts' objects as
// Helm does, with each values file.
func TestChartDependencies(t *testing.T) {
	for _, tt := range []struct{ chart, values, helm string }{
		{"parent", "parent.values.yaml", "parent.helm.yaml"},                 // every rule on
		{"parent", "parent-off.values.yaml", "parent-off.helm.yaml"},         // api off by its first condition, cache by its tag
		{"parent", "parent-null.values.yaml", "parent-null.helm.yaml"},       // null deletes a subchart's default
		{"parent", "parent-globals.values.yaml", "parent-globals.helm.yaml"}, // the parent's globals win over a subchart's own
		{"parent", "parent-cond.values.yaml", "parent-cond.helm.yaml"},       // a condition wins over a false tag
		{"two", "two-empty.values.yaml", "two-empty.helm.yaml"},              // b off, a condition that is no boolean
		{"two", "two-b.values.yaml", "two-b.helm.yaml"},                      // b on, from the root's values
		{"disabled", "disabled.values.yaml", "disabled.helm.yaml"},           // disabled subcharts' files unparsed, their defines absent
		{"disabled", "disabled-aoff.values.yaml", "disabled-aoff.helm.yaml"}, // aoff on: its defines replace base's and the root's empty one
	} {
		t.Run(tt.values, func(t *testing.T) {
			b, err := templates.Load(os.DirFS(filepath.Join("testdata", "charts", tt.chart)), templates.LoadOptions{Name: tt.chart})
			if err != nil {
				t.Fatal(err)
			}
			got := renderChart(t, b, tt.values)
			helm, err := os.ReadFile(filepath.Join("testdata", "charts", tt.helm))
			if err != nil {
				t.Fatal(err)
			}
			want := helmObjects(t, string(helm))
			byName(got)
			byName(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("stencil's objects differ from Helm's (-helm +stencil):\n%s", diff)
			}
		})
	}
}

// renderChart renders b for Composition rel in ns with a values file of
// testdata/charts.
func renderChart(t *testing.T, b *templates.Bundle, file string) []map[string]any {
	t.Helper()
	objs, err := renderChartErr(t, b, file)
	if err != nil {
		t.Fatal(err)
	}
	var got []map[string]any
	for _, o := range objs {
		got = append(got, o.Object)
	}
	return got
}

func renderChartErr(t *testing.T, b *templates.Bundle, file string) ([]*unstructured.Unstructured, error) {
	t.Helper()
	vals, err := os.ReadFile(filepath.Join("testdata", "charts", file))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(vals)
	if err != nil {
		t.Fatal(err)
	}
	return templates.Render(b, templates.Input{Values: values(string(js)), Composition: templates.CompositionInfo{Name: "rel", Namespace: "ns"}})
}

func byName(l []map[string]any) {
	sort.Slice(l, func(i, j int) bool { return name(l[i]) < name(l[j]) })
}

// TestChartDependencyErrors: a subchart's values are validated with its
// own values.schema.json, and its templates fail at their own file and
// line, as Helm's (Helm's messages, from helm template, in comments).
func TestChartDependencyErrors(t *testing.T) {
	b, err := templates.Load(os.DirFS(filepath.Join("testdata", "charts", "parent")), templates.LoadOptions{Name: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, values, want string }{
		// web:
		// - at '/replicas': minimum: got 0, want 1
		{"subchart schema", `{"web": {"replicas": 0}}`, "values.web.replicas: must be >= 1"},
		// execution error at (parent/charts/metrics/templates/never.yaml:1:3):
		// metrics is disabled and must not render
		{"enabled by a tag", `{"tags": {"monitoring": true}}`, "charts/metrics/templates/never.yaml:1: metrics is disabled and must not render"},
		{"enabled by a condition", `{"extra": {"enabled": true}}`, "charts/extra/templates/never.yaml:1: extra is disabled and must not render"},
		{"values of a subchart not an object", `{"web": "x"}`, "values.web: must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := templates.Render(b, templates.Input{Values: values(tt.values), Composition: web})
			var re *templates.RenderError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a RenderError saying %q", err, tt.want)
			}
		})
	}
}

// TestSubchartBounds: a subchart's templates charge the render's budget
// and keep its guards, and errors name their file and line.
func TestSubchartBounds(t *testing.T) {
	files := map[string]string{
		"Chart.yaml":             "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"charts/sub/Chart.yaml":  "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/values.yaml": "count: 5\n",
		"charts/sub/templates/loop.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: loop\ndata:\n" +
			"{{- range until (int .Values.count) }}\n  k{{ . }}: v\n{{- end }}\n",
		"charts/sub/templates/tests/t.yaml": "apiVersion: v1\nkind: Pod\nmetadata:\n  name: t-{{ now | date \"0405\" }}\n  annotations: {helm.sh/hook: test}\n",
	}
	b := bundle(t, files)
	_, err := templates.Render(b, templates.Input{Composition: web, Limits: budget.Limits{MaxRangeIterations: 3}})
	var re *templates.RenderError
	if !errors.As(err, &re) || re.File != "charts/sub/templates/loop.yaml" || re.Line != 6 || re.Reason != templates.ReasonTooLarge {
		t.Fatalf("err = %v, want ReasonTooLarge at charts/sub/templates/loop.yaml:6", err)
	}
	objs, err := templates.Render(b, templates.Input{Composition: web})
	if err != nil || len(objs) != 1 {
		t.Fatalf("render = %d objects, %v; want the loop's ConfigMap only (the test hook dropped)", len(objs), err)
	}
	files["charts/sub/templates/env.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: e\n  annotations:\n    home: {{ env \"HOME\" }}\n"
	_, err = templates.Render(bundle(t, files), templates.Input{Composition: web})
	if !errors.As(err, &re) || re.File != "charts/sub/templates/env.yaml" || re.Line != 6 {
		t.Fatalf("err = %v, want the refusal of env at charts/sub/templates/env.yaml:6", err)
	}
}

// helmObjects parses `helm template`'s output.
func helmObjects(t *testing.T, out string) []map[string]any {
	t.Helper()
	var objs []map[string]any
	for _, doc := range regexp.MustCompile(`(?m)^---$`).Split(out, -1) {
		m := map[string]any{}
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatal(err)
		}
		if len(m) > 0 {
			objs = append(objs, m)
		}
	}
	return objs
}

func name(o map[string]any) string {
	return o["metadata"].(map[string]any)["name"].(string)
}

// TestChartMissingDependency: a dependency Chart.yaml lists but charts/
// lacks is an error naming it, as Helm's.
func TestChartMissingDependency(t *testing.T) {
	_, err := templates.Load(os.DirFS(filepath.Join("testdata", "charts", "missing")), templates.LoadOptions{Name: "missing"})
	var re *templates.RenderError
	if !errors.As(err, &re) || re.File != "Chart.yaml" || !strings.Contains(re.Msg, "found in Chart.yaml, but missing in charts/ directory: absent") {
		t.Fatalf("err = %v, want Helm's missing dependency error naming absent", err)
	}
}

// TestChartConcurrentRenders: renders of one bundle with subcharts share
// its chart tree and cached values safely (run with -race).
func TestChartConcurrentRenders(t *testing.T) {
	b, err := templates.Load(os.DirFS(filepath.Join("testdata", "charts", "parent")), templates.LoadOptions{Name: "parent"})
	if err != nil {
		t.Fatal(err)
	}
	want := renderChart(t, b, "parent.values.yaml")
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			file := "parent.values.yaml"
			if i%2 == 1 {
				file = "parent-off.values.yaml"
			}
			objs, err := renderChartErr(t, b, file)
			if err != nil {
				t.Error(err)
				return
			}
			if file == "parent.values.yaml" && len(objs) != len(want) {
				t.Errorf("rendered %d objects, want %d", len(objs), len(want))
			}
		})
	}
	wg.Wait()
}

// TestChartTreeErrors: what Helm would not render, or would render
// without a word, is refused when the bundle loads, naming the file.
func TestChartTreeErrors(t *testing.T) {
	chart := func(name, deps string) string {
		return "apiVersion: v2\nname: " + name + "\nversion: 1.0.0\n" + deps
	}
	tests := []struct {
		name  string
		files map[string]string
		file  string
		want  string
	}{
		{"missing in a subchart", map[string]string{
			"Chart.yaml": chart("demo", ""), "charts/sub/Chart.yaml": chart("sub", "dependencies:\n- name: absent\n  version: 1.0.0\n"),
		}, "charts/sub/Chart.yaml", "found in Chart.yaml, but missing in charts/sub/charts/ directory: absent"},
		{"missing in requirements.yaml", map[string]string{
			"Chart.yaml": "apiVersion: v1\nname: demo\nversion: 1.0.0\n", "requirements.yaml": "dependencies:\n- name: gone\n  version: 1.0.0\n",
		}, "requirements.yaml", "missing in charts/ directory: gone"},
		{"version out of range", map[string]string{
			"Chart.yaml": chart("demo", "dependencies:\n- name: sub\n  version: ~2.0.0\n"), "charts/sub/Chart.yaml": chart("sub", ""),
		}, "charts/sub/Chart.yaml", `version 1.0.0 does not satisfy "~2.0.0"`},
		{"no Chart.yaml", map[string]string{
			"Chart.yaml": chart("demo", ""), "charts/sub/values.yaml": "a: 1\n",
		}, "charts/sub", "without Chart.yaml"},
		{"two subcharts of one name", map[string]string{
			"Chart.yaml":          chart("demo", "dependencies:\n- name: a\n- name: b\n  alias: a\n"),
			"charts/a/Chart.yaml": chart("a", ""),
			"charts/b/Chart.yaml": chart("b", ""),
		}, "Chart.yaml", "two subcharts are named a"},
		{"a subchart's values.yaml", map[string]string{
			"Chart.yaml": chart("demo", ""), "charts/sub/Chart.yaml": chart("sub", ""), "charts/sub/values.yaml": "a: 1\na: 2\n",
		}, "charts/sub/values.yaml", "duplicate"},
		{"a subchart's template", map[string]string{
			"Chart.yaml": chart("demo", ""), "charts/sub/Chart.yaml": chart("sub", ""), "charts/sub/templates/x.yaml": "a\n{{ if }}\n",
		}, "charts/sub/templates/x.yaml", "missing value for if"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: tt.files}})
			var re *templates.RenderError
			if !errors.As(err, &re) || re.File != tt.file || !strings.Contains(re.Msg, tt.want) {
				t.Fatalf("err = %v, want a RenderError of %s saying %q", err, tt.file, tt.want)
			}
		})
	}
}

// TestChartTreeBound: aliases multiply the uses of a chart at each level;
// a tree of more than MaxCharts uses is refused when the bundle loads.
func TestChartTreeBound(t *testing.T) {
	files := map[string]string{}
	// Each level uses the next one ten times: 10^4 uses of the last.
	var dir string
	for level := range 5 {
		deps := ""
		if level < 4 {
			deps = "dependencies:\n"
			for i := range 10 {
				deps += fmt.Sprintf("- name: c%d\n  alias: a%d\n", level+1, i)
			}
		}
		chart := fmt.Sprintf("apiVersion: v2\nname: c%d\nversion: 1.0.0\n%s", level, deps)
		if level == 0 {
			files["Chart.yaml"] = chart
			dir = "charts/c1"
			continue
		}
		files[dir+"/Chart.yaml"] = chart
		dir += fmt.Sprintf("/charts/c%d", level+1)
	}
	_, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: files}})
	var re *templates.RenderError
	if !errors.As(err, &re) || re.Reason != templates.ReasonTooLarge || !strings.Contains(re.Msg, "MaxCharts") {
		t.Fatalf("err = %v, want ReasonTooLarge naming MaxCharts", err)
	}
}

// TestChartDisabledSubchartUnparsed: a disabled subchart's files are
// never parsed, as Helm removes it before parsing (testdata/charts/
// disabled): its defines do not replace an enabled chart's, and a
// helper that does not parse fails only a render that enables it, at
// its file and line (Helm: parse error at
// (disabled/charts/broken/templates/_helpers.tpl:1): missing value for if).
func TestChartDisabledSubchartUnparsed(t *testing.T) {
	dir := filepath.Join("testdata", "charts", "disabled")
	fsys := fstest.MapFS{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		fsys[filepath.ToSlash(rel)] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	// Without the broken helper, the defines alone.
	ok := maps.Clone(fsys)
	ok["charts/broken/templates/_helpers.tpl"] = &fstest.MapFile{Data: []byte(`{{ define "broken.name" }}{{ end }}`)}
	b, err := templates.Load(ok, templates.LoadOptions{Name: "disabled"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := templates.Render(b, templates.Input{Composition: templates.CompositionInfo{Name: "rel", Namespace: "ns"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetName() == "rel-root" {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			if data["note"] != "" || data["shared"] != "from base" {
				t.Errorf("root's data = %v, want note empty and shared from base (aoff's defines absent)", data)
			}
		}
	}
	// With it: no error until a render enables it.
	b, err = templates.Load(fsys, templates.LoadOptions{Name: "disabled"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = templates.Render(b, templates.Input{Values: values(`{"tags": {"broken": true}}`), Composition: templates.CompositionInfo{Name: "rel", Namespace: "ns"}})
	var re *templates.RenderError
	if !errors.As(err, &re) || re.File != "charts/broken/templates/_helpers.tpl" || re.Line != 1 {
		t.Fatalf("err = %v, want a parse error at charts/broken/templates/_helpers.tpl:1", err)
	}
	if _, err := templates.Render(b, templates.Input{Composition: templates.CompositionInfo{Name: "rel", Namespace: "ns"}}); err != nil {
		t.Fatalf("a render that leaves it disabled: %v", err)
	}
}
