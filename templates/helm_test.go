package templates_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// The tests of this file pin what `helm template` (Helm v4.3.1) prints
// for small charts written for them, so a chart ports unchanged. Helm's
// behaviour is read from its source, cited at each test
// (helm.sh/helm/v4@v4.3.1/...), and each expectation was checked by
// rendering the same chart with Helm v4.3.1's engine (as for the
// helm-port chart, helm_port_test.go).

// helmChart is the chart every case of a table renders: one template,
// t.yaml, a ConfigMap whose data the case writes, and a helper.
func helmChart(data string) map[string]string {
	return map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"values.yaml": "present: {a: 1}\nliteral: \"a<no value>b\"\nbig: 1000000\nhuge: 9007199254740993\nmaxint: 9223372036854775807\nfloat: 1.5\nexp: 1e6\n",
		"templates/_helpers.tpl": `{{- define "h.missing" -}}{{ .Values.missing }}{{- end -}}
{{- define "h.name" -}}{{ .Release.Name }}{{- end -}}
{{- define "h.a" -}}{{ .Values.present.a }}{{- end -}}`,
		"templates/t.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n" + data,
	}
}

// renderData renders helmChart(data) and returns the ConfigMap's data.
func renderData(t *testing.T, data, vals string) (map[string]any, error) {
	t.Helper()
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: helmChart(data)}})
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	objs, err := templates.Render(b, templates.Input{Values: values(vals), Composition: web})
	if err != nil {
		return nil, err
	}
	if len(objs) != 1 {
		t.Fatalf("rendered %d objects, want 1", len(objs))
	}
	got, _ := objs[0].Object["data"].(map[string]any)
	return got, nil
}

// TestHelmMissingKey: a missing key prints as an empty string. Helm's
// engine executes with missingkey=zero, which still prints "<no value>"
// for a missing key of a map[string]any, and then erases every
// "<no value>" from each template file's output and from tpl's result
// (pkg/engine/engine.go: render, "Work around the issue where Go will
// emit <no value>", and tplFun); include's result keeps it. What the
// value is passed to (printf, default, toString) sees nil.
func TestHelmMissingKey(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"missing key", `  v: "{{ .Values.missing }}"`, ""},
		{"missing key of a present map", `  v: "{{ .Values.present.missing }}"`, ""},
		{"missing key in a variable", `  v: "{{ $x := .Values.missing }}{{ $x }}"`, ""},
		{"missing key among text", `  v: "a{{ .Values.missing }}b"`, "ab"},
		{"printf %v", `  v: "{{ printf "%v" .Values.missing }}"`, "<nil>"},
		{"printf %s", `  v: "{{ printf "%s" .Values.missing }}"`, "%!s(<nil>)"},
		{"default", `  v: "{{ .Values.missing | default "d" }}"`, "d"},
		{"default, nested", `  v: "{{ default "d" .Values.present.missing }}"`, "d"},
		{"toString", `  v: "{{ toString .Values.missing }}"`, "<nil>"},
		{"tpl", `  v: "{{ tpl "{{ .Values.missing }}" . }}"`, ""},
		{"tpl's result is cleaned before a function sees it", `  v: "{{ tpl "{{ .Values.missing }}" . | len }}"`, "0"},
		{"include", `  v: "{{ include "h.missing" . }}"`, ""},
		{"include | quote", `  v: {{ include "h.missing" . | quote }}`, ""},
		// Helm erases only in a file's output: include's own result
		// still holds the text, so it is not empty.
		{"include's result keeps the text", `  v: "{{ include "h.missing" . | len }}"`, "10"},
		{"if include", `  v: "{{ if include "h.missing" . }}yes{{ else }}no{{ end }}"`, "yes"},
		// ... and Helm erases the text wherever it comes from.
		{"the text in a value", `  v: "{{ .Values.literal }}"`, "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderData(t, tt.data, "")
			if err != nil {
				t.Fatal(err)
			}
			if got["v"] != tt.want {
				t.Errorf("v = %q, want %q", got["v"], tt.want)
			}
		})
	}
	// A field of a missing key is an error, in Helm too: text/template
	// cannot evaluate a field of nil.
	_, err := renderData(t, `  v: "{{ .Values.missing.nested }}"`, "")
	if err == nil || !strings.Contains(err.Error(), "templates/t.yaml:6:") || !strings.Contains(err.Error(), "nil pointer evaluating interface {}.nested") {
		t.Errorf("err = %v, want text/template's nil pointer error at templates/t.yaml:6", err)
	}
}

// TestHelmNumbers pins the one deliberate difference from Helm: stencil
// keeps integers as integers. Helm reads values.yaml and --values with
// sigs.k8s.io/yaml.Unmarshal into map[string]any (pkg/chart/v2/loader/
// load.go LoadValues, pkg/chart/common/values.go ReadValues), which makes
// every number a float64, so `{{ .Values.big }}` prints 1e+06 and an
// integer above 2^53 loses digits. stencil prints 1000000 and every
// int64 exactly, from values.yaml, spec.values and values set in
// templates alike; a float in values.yaml with an integral value (1e6)
// is an integer too. Other floats print as Helm prints them, and so does
// what fromYaml and fromJson parse.
func TestHelmNumbers(t *testing.T) {
	data := `  big: "{{ .Values.big }}"
  huge: "{{ .Values.huge }}"
  maxint: "{{ .Values.maxint }}"
  float: "{{ .Values.float }}"
  exp: "{{ .Values.exp }}"
  over: "{{ .Values.over }}"
  overhuge: "{{ .Values.overhuge }}"
  set: "{{ $_ := set .Values "x" 1000000 }}{{ .Values.x }}"
  mul: "{{ mul 1000 1000 }}"
  toJson: {{ pick .Values "big" "huge" | toJson | quote }}
  toYaml: {{ .Values.big | toYaml | quote }}
  fromYaml: "{{ (fromYaml "k: 1000000").k }}"
  fromJson: "{{ (fromJson "{\"k\": 1000000}").k }}"
  add1: "{{ add1 .Values.big }}"
`
	got, err := renderData(t, data, `{"over":1000000,"overhuge":9223372036854775806}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"big": "1000000", "huge": "9007199254740993", "maxint": "9223372036854775807",
		"float": "1.5", "exp": "1000000",
		"over": "1000000", "overhuge": "9223372036854775806",
		"set": "1000000", "mul": "1000000",
		"toJson": `{"big":1000000,"huge":9007199254740993}`, "toYaml": "1000000",
		"add1": "1000001",
		// fromYaml and fromJson parse as Helm's (pkg/engine/funcs.go:
		// sigs.k8s.io/yaml.Unmarshal and encoding/json into map[string]any).
		"fromYaml": "1e+06", "fromJson": "1e+06",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("numbers (-want +got):\n%s", diff)
	}
}

// TestHelmFiles: .Files holds what Helm's loader puts in a chart's Files
// (pkg/chart/v2/loader/load.go, LoadFiles): not Chart.yaml, Chart.lock,
// values.yaml, values.schema.json, templates/ or charts/ (but a .prov
// there), nor requirements.yaml of an apiVersion v2 chart.
func TestHelmFiles(t *testing.T) {
	files := map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: demo\nversion: 0.1.0\n", "Chart.lock": "x", "values.yaml": "a: 1\n",
		"values.schema.json": "{}", "requirements.yaml": "dependencies: []\n", "requirements.lock": "x",
		"templates/_helpers.tpl": "", "charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 0.1.0\n", "charts/sub-0.1.0.tgz.prov": "sig",
		"README.md": "readme", "files/a.txt": "a", "kustomize/patch.yaml": "p", ".helmignore": "*.bak\n",
		"templates/t.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  v: \"{{ range $p, $_ := .Files }}{{ $p }},{{ end }}\"\n  glob: \"{{ range $p, $_ := .Files.Glob \"**.yaml\" }}{{ $p }},{{ end }}\"\n  chart: {{ .Files.Get \"Chart.yaml\" | quote }}\n" +
			"  star: \"{{ range $p, $_ := .Files.Glob \"*\" }}{{ $p }},{{ end }}\"\n" +
			"  braces: \"{{ range $p, $_ := .Files.Glob \"{README.md,files/?.txt}\" }}{{ $p }},{{ end }}\"\n" +
			"  bad: \"{{ len (.Files.Glob \"[\") }}\"\n" +
			"  none: {{ (.Files.Glob \"nothing/*\").AsConfig | quote }}\n",
	}
	b := bundle(t, files)
	objs, err := templates.Render(b, templates.Input{Composition: web})
	if err != nil {
		t.Fatal(err)
	}
	got := objs[0].Object["data"]
	// Glob is gobwas/glob's, as Helm's (pkg/engine/files.go): * stays in
	// a folder, ** does not, {a,b} is either, a bad pattern matches all;
	// AsConfig of no file is "{}".
	want := map[string]any{"v": ".helmignore,README.md,charts/sub-0.1.0.tgz.prov,files/a.txt,kustomize/patch.yaml,", "glob": "kustomize/patch.yaml,", "chart": "",
		"star": ".helmignore,README.md,", "braces": "README.md,files/a.txt,", "bad": "5", "none": "{}"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf(".Files (-want +got):\n%s", diff)
	}
	// An apiVersion v1 chart keeps requirements.yaml and .lock in Files.
	files["Chart.yaml"] = "apiVersion: v1\nname: demo\nversion: 0.1.0\n"
	objs, err = templates.Render(bundle(t, files), templates.Input{Composition: web})
	if err != nil {
		t.Fatal(err)
	}
	if v := objs[0].Object["data"].(map[string]any)["v"]; !strings.Contains(v.(string), "requirements.lock,requirements.yaml,") {
		t.Errorf("v1 chart .Files = %v, want requirements.yaml and .lock among them", v)
	}
}

// TestHelmIgnore: a folder's .helmignore leaves files out as Helm's
// folder loader (pkg/chart/v2/loader/directory.go, loadDir, with
// pkg/ignore) does: they are neither templates nor .Files nor packed, an
// ignored folder is skipped whole (even a link inside it), and hidden
// files right under templates/ are left out without a .helmignore.
func TestHelmIgnore(t *testing.T) {
	dir := t.TempDir()
	writeBundleFolder(t, dir, map[string]string{
		".helmignore": "# Patterns to ignore when building packages.\n*.bak\nsecrets/\n/top.txt\ndocs/*.md\n.git\n",
		"Chart.yaml":  "apiVersion: v2\nname: demo\nversion: 0.1.0\n",
		"values.yaml": "a: 1\n", "a.bak": "x", "sub/b.bak": "x", "secrets/s.txt": "x", "top.txt": "x",
		"sub/top.txt": "kept", "docs/x.md": "x", "docs/y.txt": "kept", ".git/config": "x",
		"templates/.hidden.yaml": "not: [valid",
		"templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  v: \"{{ range $p, $_ := .Files }}{{ $p }},{{ end }}\"\n",
	})
	// A link is refused in a bundle folder, but not an ignored one.
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "secrets", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link.bak")); err != nil {
		t.Fatal(err)
	}
	b, err := templates.Load(folderFS(t, "os.Root", dir), templates.LoadOptions{Name: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for p := range b.Spec().Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	if diff := cmp.Diff([]string{".helmignore", "Chart.yaml", "docs/y.txt", "sub/top.txt", "templates/cm.yaml", "values.yaml"}, paths); diff != "" {
		t.Errorf("loaded files (-want +got):\n%s", diff)
	}
	objs, err := templates.Render(b, templates.Input{Composition: web})
	if err != nil {
		t.Fatal(err)
	}
	if v := objs[0].Object["data"].(map[string]any)["v"]; v != ".helmignore,docs/y.txt,sub/top.txt," {
		t.Errorf(".Files = %v", v)
	}

	// A .helmignore may leave itself out, and a bad one is an error at its line.
	writeBundleFolder(t, dir, map[string]string{".helmignore": "*.bak\nsecrets/\n.helmignore\n"})
	if b, err = templates.Load(folderFS(t, "os.Root", dir), templates.LoadOptions{Name: "demo"}); err != nil {
		t.Fatal(err)
	} else if _, ok := b.Spec().Files[".helmignore"]; ok {
		t.Errorf(".helmignore ignoring itself is still loaded")
	}
	writeBundleFolder(t, dir, map[string]string{".helmignore": "*.bak\nsecrets/**\n"})
	if _, err = templates.Load(folderFS(t, "os.Root", dir), templates.LoadOptions{Name: "demo"}); err == nil || err.Error() != ".helmignore:2: double-star (**) syntax is not supported" {
		t.Errorf("err = %v", err)
	}
	// A .helmignore that is a link is refused, as any link.
	writeBundleFolder(t, dir, map[string]string{"ignore.txt": "*.bak\nsecrets/\n"})
	if err := os.Remove(filepath.Join(dir, ".helmignore")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("ignore.txt", filepath.Join(dir, ".helmignore")); err != nil {
		t.Fatal(err)
	}
	for _, via := range []string{"os.Root", "os.DirFS"} {
		if _, err = templates.Load(folderFS(t, via, dir), templates.LoadOptions{Name: "demo"}); err == nil || !strings.HasPrefix(err.Error(), ".helmignore: not a regular file") {
			t.Errorf("%s: err = %v, want .helmignore refused as a link", via, err)
		}
	}
}

// TestHelmVariadicFunctions: sprig's variadic functions take their
// arguments as in Helm, through the render's guard (guard_adapt.go).
func TestHelmVariadicFunctions(t *testing.T) {
	data := `  pick: {{ pick .Values.sizes "a" "c" | toJson | quote }}
  omit: {{ omit .Values.sizes "a" | toJson | quote }}
  without: {{ without (list 1 2 3 2) 2 | toJson | quote }}
  merge: {{ merge (dict "a" 1) (dict "b" 2) (dict "a" 3) | toJson | quote }}
`
	got, err := renderData(t, data, `{"sizes":{"a":1,"b":2,"c":3}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"pick": `{"a":1,"c":3}`, "omit": `{"b":2,"c":3}`, "without": `[1,3]`, "merge": `{"a":1,"b":2}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestHelmTemplateOrder: Helm's engine executes a chart's templates, the
// subcharts' with them, deepest path first and, at one depth, in reverse
// lexical order (pkg/engine/engine.go: sortTemplates, byPathLen), and
// the templates of one chart share their .Values, so a template sees
// what those before it set: istio's charts rely on it (their
// zzz_profile.yaml merges the profile into .Values before every other
// template runs). Each template here appends its name to a list the
// others see; Helm v4.3.1 prints the same lists. Objects are still
// listed in path order.
func TestHelmTemplateOrder(t *testing.T) {
	step := func(name, list string) string {
		return `{{- $_ := set ` + list + ` "seq" (append (` + list + `.seq | default list) "` + name + `") }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: ` + name + `
data:
  seq: {{ ` + list + `.seq | join "," | quote }}
`
	}
	files := map[string]string{
		"Chart.yaml":                  "apiVersion: v2\nname: demo\nversion: 0.1.0\ndependencies:\n- name: sub\n  version: 0.1.0\n",
		"values.yaml":                 "sub: {}\n",
		"templates/a.yaml":            step("a", ".Values.sub"),
		"templates/zz.yaml":           step("zz", ".Values.sub"),
		"templates/x/deep.yaml":       step("deep", ".Values.sub"),
		"charts/sub/Chart.yaml":       "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"charts/sub/templates/s.yaml": step("s", ".Values"),
	}
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "demo"}, Spec: v1alpha1.BundleSpec{Files: files}})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := templates.Render(b, templates.Input{Composition: web})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		seq, _, _ := unstructured.NestedString(o.Object, "data", "seq")
		got = append(got, o.GetName()+": "+seq)
	}
	want := []string{"a: s,deep,zz,a", "deep: s,deep", "zz: s,deep,zz", "s: s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

// TestHelmValuesMethods: the top of .Values has the methods of Helm's
// Values type (pkg/chart/common/values.go), which win over keys of the
// same name: AsMap (a plain map, which sprig's dig requires), Table and
// PathValue. Functions take .Values as a map. Helm v4.3.1 prints the same
// (but for numbers, TestHelmNumbers).
func TestHelmValuesMethods(t *testing.T) {
	const vals = `{"AsMap": "shadowed"}`
	tests := []struct{ name, data, want string }{
		{"AsMap for dig", `  v: {{ dig "present" "a" "none" .Values.AsMap | quote }}`, "1"},
		{"AsMap wins over a key", `  v: {{ kindOf .Values.AsMap | quote }}`, "map"},
		{"a key of that name by index", `  v: {{ index .Values "AsMap" | quote }}`, "shadowed"},
		{"Table", `  v: {{ (.Values.Table "present").a | quote }}`, "1"},
		{"PathValue", `  v: {{ .Values.PathValue "present.a" | quote }}`, "1"},
		{"nested maps have no methods", `  v: {{ kindOf .Values.present.AsMap | quote }}`, "invalid"},
		{"toYaml", `  v: {{ toYaml .Values | quote }}`, "AsMap: shadowed\nbig: 1000000\nexp: 1000000\nfloat: 1.5\nhuge: 9007199254740993\nliteral: ab\nmaxint: 9223372036854775807\npresent:\n  a: 1"},
		{"kindOf", `  v: {{ kindOf .Values | quote }}`, "map"},
		{"hasKey", `  v: {{ hasKey .Values "present" | quote }}`, "true"},
		{"keys", `  v: {{ keys .Values | sortAlpha | join "," | quote }}`, "AsMap,big,exp,float,huge,literal,maxint,present"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderData(t, tt.data, vals)
			if err != nil {
				t.Fatal(err)
			}
			if got["v"] != tt.want {
				t.Errorf("got %q, want %q", got["v"], tt.want)
			}
		})
	}
	for _, data := range []string{
		`  v: {{ .Values.Table "missing" }}`,
		`  v: {{ .Values.PathValue "present" }}`,
	} {
		if _, err := renderData(t, data, vals); err == nil {
			t.Errorf("%s: no error, want one as Helm's", data)
		}
	}
}

// TestHelmMergeIntoValues: the four merge functions merge into the
// data's .Values as sprig's do on Helm's (mergo merges a map into a map
// at a key whatever their types: Helm's .Values is a common.Values, as
// stencil's is a values.Values). A merge into a deepCopy of the data
// leaves the data as it was and its result is data for include and
// tpl, as opentelemetry-collector renders its config; a merge into the
// data itself changes it for what runs after, as in Helm (sprig's merge
// changes its first argument). Helm v4.3.1 prints the same
// (hack/helmbench's TestFunctionsAsHelm holds these snippets too).
func TestHelmMergeIntoValues(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"into a copy of the data, for include", `  v: {{ include "h.a" (mustMergeOverwrite (deepCopy .) (dict "Values" (dict "present" (dict "a" 2)))) }}|{{ .Values.present.a }}`, "2|1"},
		{"opentelemetry-collector's config", `  v: {{ $v := deepCopy .Values }}{{ $_ := set $v.present "a" 3 }}{{ $d := dict "Values" $v | mustMergeOverwrite (deepCopy .) }}{{ include "h.a" $d }}|{{ .Values.present.a }}`, "3|1"},
		{"merge keeps what the copy has", `  v: {{ $d := merge (deepCopy .) (dict "Values" (dict "present" (dict "a" 2 "b" 3))) }}{{ $d.Values.present.a }}{{ $d.Values.present.b }}`, "13"},
		{"mergeOverwrite replaces it", `  v: {{ $d := mergeOverwrite (deepCopy .) (dict "Values" (dict "present" (dict "a" 2 "b" 3))) }}{{ $d.Values.present.a }}{{ $d.Values.present.b }}`, "23"},
		{"the data merged into a map, for tpl", `  v: {{ tpl "{{ .Values.present.a }}" (mustMerge (dict "Values" (dict "present" (dict "a" 4))) (deepCopy .)) }}`, "4"},
		{"the copy keeps the methods of .Values", `  v: {{ (mustMergeOverwrite (deepCopy .) (dict "Values" (dict "b" 1))).Values.AsMap.b }}`, "1"},
		{"into the data itself, seen after", `  v: {{ $_ := merge . (dict "Values" (dict "added" "x")) }}{{ .Values.added }}`, "x"},
		{"into .Values itself", `  v: {{ $_ := mustMergeOverwrite .Values (dict "present" (dict "a" 5)) }}{{ include "h.a" . }}`, "5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := renderData(t, tt.data, "")
			if err != nil {
				t.Fatal(err)
			}
			if v := fmt.Sprint(got["v"]); v != tt.want {
				t.Errorf("got %q, want %q", v, tt.want)
			}
		})
	}
}

// TestGetHostByName: getHostByName answers "" for every name, as Helm's
// does without --enable-dns (helm template's and helm install's default),
// so charts that call it render; it makes no DNS query (localhost, which
// any resolver answers, answers "" too).
func TestGetHostByName(t *testing.T) {
	got, err := renderData(t, "  a: \"[{{ getHostByName \"localhost\" }}]\"\n  b: {{ getHostByName \"example.com\" | default \"none\" }}\n", "")
	if err != nil {
		t.Fatal(err)
	}
	if got["a"] != "[]" || got["b"] != "none" {
		t.Errorf("data %v, want a: [] and b: none", got)
	}
}
