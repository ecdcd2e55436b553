package templates_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"unicode"

	"github.com/Masterminds/sprig/v3"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// renderFiles loads files as a Bundle object and renders it with values;
// it returns the objects as YAML, or the error of loading or rendering.
func renderFiles(t *testing.T, files map[string]string, vals string, mutate ...func(*v1alpha1.BundleSpec)) (string, error) {
	t.Helper()
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "hostile"}, Spec: v1alpha1.BundleSpec{Files: files}}
	for _, m := range mutate {
		m(&b.Spec)
	}
	loaded, err := templates.LoadObject(b)
	if err != nil {
		return "", err
	}
	objs, err := templates.Render(loaded, templates.Input{Values: values(vals), Composition: web})
	if err != nil {
		return "", err
	}
	return toYAML(t, objs), nil
}

// tmpl is a bundle of one template, templates/t.yaml.
func tmpl(text string) map[string]string { return map[string]string{"templates/t.yaml": text} }

// billionLaughs is the classic YAML bomb: nine levels of nine aliases.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for c := 'b'; c <= 'i'; c++ {
		fmt.Fprintf(&b, "%c: &%c [", c, c)
		for i := range 9 {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*%c", c-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// longAliases passes go.yaml.in/yaml's alias ratio check (few aliases
// among many nodes) but expands a 1 MB string 200 times.
func longAliases() string {
	var b strings.Builder
	fmt.Fprintf(&b, "s: &s %s\nfill: [", strings.Repeat("x", 1<<20))
	for i := range 2000 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("0")
	}
	b.WriteString("]\nl: [")
	for i := range 200 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("*s")
	}
	b.WriteString("]\n")
	return b.String()
}

// nested is a YAML or JSON flow value n lists deep.
func nested(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

// nestedValues is a values object n maps deep.
func nestedValues(n int) string { return strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) }

// TestHostile: a hostile template or hostile values never crash the
// process nor run unbounded: the render stops with a *RenderError naming
// the file and line (or the values path), with Reason ReasonTooLarge for
// a size bound.
func TestHostile(t *testing.T) {
	tests := []struct {
		name   string
		files  map[string]string
		values string
		file   string // "" for a values error
		line   int    // 0: any line
		path   string // for a values error
		reason string
		msg    string
	}{
		// Strings growing past the render's function budget, refused
		// before they are allocated.
		{"repeat", tmpl("a: 1\n{{ repeat 100000000 \"xxxxxxxx\" }}"), "", "templates/t.yaml", 2, "", templates.ReasonTooLarge, "repeat: result larger than"},
		{"repeat negative", tmpl(`{{ repeat -1 "x" }}`), "", "templates/t.yaml", 1, "", "", "repeat: the count must not be negative"},
		{"indent", tmpl(`{{ indent 1000000000 "x" }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "indent: result larger than"},
		{"nindent per line", tmpl(`{{ nindent 100000 (repeat 1000 "\n") }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "nindent: result larger than"},
		{"indent negative", tmpl(`{{ indent -5 "x" }}`), "", "templates/t.yaml", 1, "", "", "must not be negative"},
		{"printf doubling", tmpl("{{ $s := \"0123456789abcdef\" }}\n{{ range until 40 }}{{ $s = printf \"%s%s\" $s $s }}{{ end }}"), "", "templates/t.yaml", 2, "", templates.ReasonTooLarge, "printf: result larger than"},
		{"printf widths", tmpl(`{{ printf "` + strings.Repeat("%999999d", 100) + `" }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "printf: result larger than"},
		{"printf width per element", tmpl(`{{ printf "%999999v" (until 1000) }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "printf: result larger than"},
		{"printf argument index", tmpl(`{{ printf "` + strings.Repeat("%[1]s", 2000) + `" (repeat 100000 "x") }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "printf: result larger than"},
		{"replace empty old", tmpl(`{{ replace "" (repeat 1000 "y") (repeat 100000 "x") }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "replace: result larger than"},
		{"regexReplaceAll", tmpl(`{{ regexReplaceAll "" (repeat 100000 "x") (repeat 1000 "y") }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "regexReplaceAll: result larger than"},
		{"wrapWith", tmpl(`{{ wrapWith 1 (repeat 1000 "z") (repeat 100000 "x ") }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "wrapWith: result larger than"},
		{"join", tmpl(`{{ join (repeat 1000000 ",") (until 10000) }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "join: result larger than"},
		{"b64enc doubling", tmpl("{{ $s := \"x\" }}\n{{ range until 100 }}{{ $s = b64enc (print $s $s) }}{{ end }}"), "", "templates/t.yaml", 2, "", templates.ReasonTooLarge, "result larger than"},
		{"cat of a shared list", tmpl("{{ $l := list 1 }}{{ range until 40 }}{{ $l = list $l $l }}{{ end }}\n{{ cat $l }}"), "", "templates/t.yaml", 2, "", templates.ReasonTooLarge, "cat: the value would print larger than"},
		{"splitList", tmpl(`{{ splitList "" (repeat 8000000 "x") }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "splitList: result larger than"},
		// Loops: lengths computed without overflow, before the list is made.
		{"until", tmpl(`{{ until 100000000 }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "longer than MaxLoop"},
		{"untilStep to MaxInt64", tmpl(`{{ untilStep 0 9223372036854775807 1 }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "longer than MaxLoop"},
		{"untilStep across int64", tmpl(`{{ untilStep -9223372036854775808 9223372036854775807 4611686018427387904 | len }}{{ untilStep -9223372036854775808 9223372036854775807 1 }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "longer than MaxLoop"},
		{"seq down", tmpl(`{{ seq 0 -1 -50000000 }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "seq: more than 10000 numbers"},
		{"seq to MaxInt64", tmpl(`{{ seq 9223372036854775807 }}`), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "seq: more than 10000 numbers"},
		{"append in a loop copies the list every time", tmpl("{{ $l := list }}\n{{ range until 10000 }}{{ $l = append $l . }}{{ end }}"), "", "templates/t.yaml", 2, "", templates.ReasonTooLarge, "append: result larger than"},
		{"chunk of 0", tmpl(`{{ chunk 0 (list 1 2) }}`), "", "templates/t.yaml", 1, "", "", "chunk: the chunk size must be at least 1"},
		{"substr outside", tmpl(`{{ substr 5 2 "abc" }}`), "", "templates/t.yaml", 1, "", "", "substr: the start 5 is outside"},
		// Values shared many times and nested deep: measured before they
		// are printed, serialized or copied.
		{"toJson of a shared list", tmpl("{{ $l := list \"x\" }}{{ range until 40 }}{{ $l = list $l $l }}{{ end }}\n{{ toJson $l }}"), "", "templates/t.yaml", 2, "", templates.ReasonTooLarge, "toJson: the value would print larger than"},
		{"deepCopy of a shared list", tmpl("{{ $l := list \"x\" }}{{ range until 40 }}{{ $l = list $l $l }}{{ end }}\n{{ deepCopy $l }}"), "", "templates/t.yaml", 2, "", templates.ReasonTooLarge, "deepCopy: the value would print larger than"},
		{"toYaml of a deep value", tmpl("{{ $d := dict }}{{ range until 5000 }}{{ $d = dict \"a\" $d }}{{ end }}\n{{ toYaml $d }}"), "", "templates/t.yaml", 2, "", templates.ReasonTooLarge, "toYaml: the value nests more than 100 deep"},
		{"printf of a deep value", tmpl("{{ $d := list }}{{ range until 200 }}{{ $d = list $d }}{{ end }}\n{{ printf \"%v\" $d }}"), "", "templates/t.yaml", 2, "", templates.ReasonTooLarge, "MaxValueDepth"},
		// Cycles: refused where they would be made.
		{"set a map in itself", tmpl("{{ $d := dict }}\n{{ $_ := set $d \"self\" $d }}{{ $d }}"), "", "templates/t.yaml", 2, "", "", "set: the value holds the map it is set in"},
		{"set through another map", tmpl("{{ $a := dict }}{{ $b := dict \"a\" $a }}\n{{ $_ := set $a \"b\" $b }}{{ toYaml $a }}"), "", "templates/t.yaml", 2, "", "", "set: the value holds the map"},
		{"set through a list", tmpl("{{ $a := dict }}{{ $l := list 1 (list $a) }}\n{{ $_ := set $a \"l\" $l }}"), "", "templates/t.yaml", 2, "", "", "set: the value holds the map"},
		{"set the data in itself", tmpl("\n{{ $_ := set $ \"me\" $ }}{{ toJson $ }}"), "", "templates/t.yaml", 2, "", "", "set: the value holds the map"},
		{"merge a map in itself", tmpl("{{ $d := dict \"a\" 1 }}\n{{ $_ := merge $d (dict \"self\" $d) }}{{ $d }}"), "", "templates/t.yaml", 2, "", "", "merge: a value merged in holds a map"},
		{"mergeOverwrite at a shared key", tmpl("{{ $in := dict \"x\" 1 }}{{ $d := dict \"a\" $in }}\n{{ $_ := mergeOverwrite $d (dict \"a\" (dict \"b\" $in)) }}"), "", "templates/t.yaml", 2, "", "", "mergeOverwrite: a value merged in holds a map"},
		{"mustMerge", tmpl("{{ $d := dict }}\n{{ $_ := mustMerge $d (dict \"s\" (list $d)) }}"), "", "templates/t.yaml", 2, "", "", "mustMerge: a value merged in holds a map"},
		{"set the data in .Values", tmpl("\n{{ $_ := set .Values \"root\" $ }}"), "", "templates/t.yaml", 2, "", "", "set: the value holds the map it is set in"},
		{"merge the data into .Values", tmpl("\n{{ $_ := merge . (dict \"Values\" (dict \"root\" $)) }}"), "", "templates/t.yaml", 2, "", "", "merge: a value merged in holds a map"},
		{"merge .Values into a copy holding it", tmpl("{{ $d := deepCopy . }}\n{{ $_ := mustMergeOverwrite $d (dict \"Values\" (dict \"up\" (dict \"v\" $d.Values))) }}"), "", "templates/t.yaml", 2, "", "", "mustMergeOverwrite: a value merged in holds a map"},
		{"merge into the data's structs", tmpl("\n{{ $_ := merge (dict \"c\" .Capabilities) (dict \"c\" .Capabilities) }}"), "", "templates/t.yaml", 2, "", "", "merge: cannot merge into a templates.Capabilities"},
		// YAML and JSON the functions parse.
		{"fromYaml billion laughs", tmpl("\n{{ fromYaml .Values.y }}"), `{"y":` + quoteJSON(billionLaughs()) + `}`, "templates/t.yaml", 2, "", templates.ReasonTooLarge, "fromYaml: too many aliases"},
		{"fromYaml aliases of a long string", tmpl("\n{{ fromYaml .Values.y }}"), `{"y":` + quoteJSON(longAliases()) + `}`, "templates/t.yaml", 2, "", templates.ReasonTooLarge, "fromYaml: aliases expand it to more than"},
		{"fromYaml duplicate key", tmpl("\n{{ fromYaml \"a: 1\\nb: 2\\na: 3\" }}"), "", "templates/t.yaml", 2, "", "", `fromYaml: line 3: duplicate key "a"`},
		{"fromJson too deep", tmpl("\n\n{{ fromJsonArray .Values.j }}"), `{"j":"` + nested(200) + `"}`, "templates/t.yaml", 3, "", templates.ReasonTooLarge, "fromJsonArray: the value nests more than 100 deep"},
		{"fromYamlArray too deep", tmpl(`{{ fromYamlArray .Values.j }}`), `{"j":"` + nested(200) + `"}`, "templates/t.yaml", 1, "", templates.ReasonTooLarge, "nests more than 100 deep"},
		// Values.
		{"values too deep", tmpl(cm("x")), nestedValues(150), "", 0, "values" + strings.Repeat(".a", 101), templates.ReasonTooLarge, "nested more than 100 deep (MaxValueDepth)"},
		{"values.yaml too deep", map[string]string{"templates/t.yaml": cm("x"), "values.yaml": "a: " + nested(150) + "\n"}, "", "values.yaml", 0, "", templates.ReasonTooLarge, "nested more than 100 deep"},
		{"values.yaml duplicate key", map[string]string{"templates/t.yaml": cm("x"), "values.yaml": "a: 1\nb:\n  c: 1\n  c: 2\n"}, "", "values.yaml", 4, "", "", `duplicate key "c"`},
		{"values.yaml billion laughs", map[string]string{"templates/t.yaml": cm("x"), "values.yaml": billionLaughs()}, "", "values.yaml", 0, "", "", "too many aliases"},
		// Rendered output.
		{"output duplicate key", tmpl("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: x\n  a: y\n"), "", "templates/t.yaml", 8, "", "", `duplicate key "a"`},
		{"output billion laughs", tmpl("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  " + strings.ReplaceAll(billionLaughs(), "\n", "\n  ")), "", "templates/t.yaml", 0, "", templates.ReasonTooLarge, "too many aliases"},
		{"output aliases of a long string", tmpl("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  " + strings.ReplaceAll(strings.TrimSpace(longAliases()), "\n", "\n  ")), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "aliases expand it to more than 16777216 bytes"},
		{"object larger than the API server takes", tmpl("# first\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: {{ repeat 2000000 \"x\" }}\n"), "", "templates/t.yaml", 3, "", templates.ReasonTooLarge, "more than the 1572864 the API server stores"},
		{"List item larger than the API server takes", tmpl("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: c}, data: {a: {{ repeat 2000000 \"x\" }}}}\n"), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "item 0 of the List is"},
		{"List item without a name", tmpl("apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n"), "", "templates/t.yaml", 1, "", "", "item 0 of the List needs apiVersion, kind and metadata.name"},
		{"List of too many objects", tmpl("apiVersion: v1\nkind: List\nitems:\n{{ range until 2500 }}- {apiVersion: v1, kind: ConfigMap, metadata: {name: c{{ . }}}}\n{{ end }}"), "", "templates/t.yaml", 1, "", templates.ReasonTooLarge, "more than 2000 (MaxObjects)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderFiles(t, tt.files, tt.values)
			if err == nil {
				t.Fatalf("no error; want one containing %q", tt.msg)
			}
			var re *templates.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("error %T is not a *RenderError: %v", err, err)
			}
			if re.File != tt.file || (tt.line > 0 && re.Line != tt.line) || (tt.file != "" && tt.file != "values.yaml" && re.Line <= 0) || re.Path != tt.path {
				t.Errorf("error at file %q line %d path %q, want %q line %d path %q: %v", re.File, re.Line, re.Path, tt.file, tt.line, tt.path, re)
			}
			if re.Reason != tt.reason {
				t.Errorf("reason %q, want %q: %v", re.Reason, tt.reason, re)
			}
			if !strings.Contains(re.Error(), tt.msg) {
				t.Errorf("error %q\nwant it to contain %q", re, tt.msg)
			}
		})
	}
}

func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// TestSharingAndMergingStillWork: what the cycle checks allow, Helm's
// idioms: a value shared by several maps, merged into the data, set into
// a map it does not contain.
func TestSharingAndMergingStillWork(t *testing.T) {
	got, err := render(t, cm(`{{ $s := dict "x" 1 }}{{ $a := dict "p" $s "q" $s }}{{ $_ := set $a "r" (list $s $s) }}{{ $_ := merge $ (dict "extra" .Values.nested) }}{{ $_ := merge $a $a }}{{ toJson (list $a $.extra) | quote }}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if want := `v: '[{"p":{"x":1},"q":{"x":1},"r":[{"x":1},{"x":1}]},{"a":1,"b":2}]'`; !strings.Contains(got, want) {
		t.Errorf("output:\n%s\nwant it to contain %s", got, want)
	}
}

// TestDeterministic: functions whose sprig form changes between renders
// give the same bytes every time (keys and values sorted, dates in UTC)
// or are refused.
func TestDeterministic(t *testing.T) {
	var keys []string
	for i := range 40 {
		keys = append(keys, fmt.Sprintf(`"k%02d" %d`, i, i))
	}
	dict := "(dict " + strings.Join(keys, " ") + ")"
	text := `apiVersion: v1
kind: ConfigMap
metadata:
  name: c
data:
  keys: {{ keys ` + dict + ` | join "," | quote }}
  values: {{ values ` + dict + ` | toJson | quote }}
  toDate: {{ toDate "2006-01-02 15:04" "2024-05-06 07:08" | date "2006-01-02T15:04 MST" | quote }}
  htmlDate: {{ htmlDate 86400 | quote }}
  local: {{ dateInZone "15:04 MST" 0 "Local" | quote }}
  osBase: {{ osBase "a/b.txt" | quote }}
  print: {{ print (dict "b" 1 "a" (list 2 3)) | quote }}
  capabilities: {{ list .Capabilities | toString | sha256sum | quote }}
`
	first, err := render(t, text, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"keys: k00,k01,k02,k03,k04,k05", "values: '[0,1,2,3,4,5,", "toDate: 2024-05-06T07:08 UTC", "htmlDate: \"1970-01-02\"",
		"local: 00:00 UTC", "osBase: b.txt", "print: map[a:[2 3] b:1]",
	} {
		if !strings.Contains(first, want) {
			t.Errorf("output:\n%s\nwant it to contain %s", first, want)
		}
	}
	for range 20 {
		again, err := render(t, text, "")
		if err != nil || again != first {
			t.Fatalf("renders differ:\n%s\n%s\n%v", first, again, err)
		}
	}
}

// TestNondeterministicRefused: a date function given something other than
// a time (sprig would format the current time) and %p are refused unless
// the bundle allows nondeterminism.
func TestNondeterministicRefused(t *testing.T) {
	for _, text := range []string{
		`{{ date "2006" "2024" }}`, `{{ dateInZone "2006" .Values.greeting "UTC" }}`, `{{ htmlDate "x" }}`,
		`{{ htmlDateInZone (dict) "UTC" }}`, `{{ durationRound (toDate "2006" "2024") }}`, `{{ printf "%p" .Values }}`,
		`{{ printf "%v" (list .Capabilities.APIVersions.Has) }}`, `{{ now }}`, `{{ ago (toDate "2006" "2024") }}`,
	} {
		t.Run(text, func(t *testing.T) {
			_, err := render(t, cm(text), "")
			var re *templates.RenderError
			if !errors.As(err, &re) || re.File != "templates/t.yaml" || re.Line != 6 {
				t.Errorf("err = %v, want a RenderError at templates/t.yaml:6", err)
			}
		})
	}
	allow := func(s *v1alpha1.BundleSpec) { s.AllowNondeterministic = true }
	if _, err := render(t, cm(`{{ date "2006" "now" | quote }}`), "", allow); err != nil {
		t.Errorf("with allowNondeterministic: %v", err)
	}
}

// TestNoValuesInMessages: no error message quotes a value: schema
// violations name the field and the rule, functions the types and sizes.
func TestNoValuesInMessages(t *testing.T) {
	const secret = "hunter2-Sup3r-s3cret"
	schema := func(s *v1alpha1.BundleSpec) {
		s.Schema = values(`{"type":"object","properties":{
			"pattern":{"type":"string","pattern":"^[a-z]+$"},
			"enum":{"type":"string","enum":["a","b"]},
			"max":{"type":"string","maxLength":3},
			"min":{"type":"string","minLength":40},
			"date":{"type":"string","format":"date-time"},
			"int":{"type":"integer"},
			"obj":{"type":"object","properties":{"x":{"type":"string"}}},
			"list":{"type":"array","maxItems":1,"items":{"type":"string"}},
			"required":{"type":"object","required":["must"],"properties":{"must":{"type":"string"}}}}}`)
	}
	vals := fmt.Sprintf(`{"pattern":%[1]q,"enum":%[1]q,"max":%[1]q,"min":%[1]q,"date":%[1]q,"int":%[1]q,"obj":%[1]q,"list":[%[1]q,%[1]q],"required":{}}`, secret)
	_, err := render(t, cm("x"), vals, schema)
	if err == nil {
		t.Fatal("no error for invalid values")
	}
	for _, want := range []string{"values.pattern", "values.enum", "values.max", "values.min", "values.date", "values.int", "values.obj", "values.list", "values.required.must"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("schema error quotes the value: %v", err)
	}
	// Functions given the secret.
	for _, text := range []string{
		`{{ regexFind (print "(" .Values.s) "x" }}`, `{{ mustRegexFindAll (print "[" .Values.s) "x" -1 }}`,
		`{{ mustToDate "2006-01-02" .Values.s }}`, `{{ semverCompare .Values.s "1.0.0" }}`, `{{ semver .Values.s }}`,
		`{{ mustDateModify .Values.s (toDate "2006" "2024") }}`, `{{ mustFromJson .Values.s }}`, `{{ substr 0 100 .Values.s }}`,
		`{{ repeat 100000000 .Values.s }}`, `{{ date "2006" .Values.s }}`, `{{ chunk -1 .Values.s }}`, `{{ first .Values.s }}`,
		`{{ b64dec .Values.s | mustFromJson }}`, `{{ fromYaml (print "a: [" .Values.s) | toJson }}`, `{{ dict .Values.s (list .Capabilities) }}`,
		`{{ mustToJson (dict "s" .Values.s "f" .Capabilities.APIVersions.Has) }}`,
	} {
		t.Run(text, func(t *testing.T) {
			out, err := render(t, cm(text), fmt.Sprintf(`{"s":%q}`, secret))
			if err == nil {
				if strings.Contains(out, "line") && strings.Contains(out, secret) {
					t.Errorf("output quotes the value in an error: %s", out)
				}
				return
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error quotes the value: %v", err)
			}
		})
	}
}

// TestListExpanded: a List is applied as its items, each checked like any
// other object (and judged by permissions downstream), as kubectl does.
func TestListExpanded(t *testing.T) {
	got, err := render(t, `apiVersion: v1
kind: List
items:
- apiVersion: rbac.authorization.k8s.io/v1
  kind: ClusterRoleBinding
  metadata: {name: admin}
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
  subjects: [{kind: ServiceAccount, name: default, namespace: shop}]
- apiVersion: v1
  kind: ConfigMapList
  items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: inner}}
---
apiVersion: v1
kind: ConfigMapList
items: []
`, "")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "kind: List") || strings.Contains(got, "kind: ConfigMapList") ||
		!strings.Contains(got, "kind: ClusterRoleBinding") || !strings.Contains(got, "name: inner") {
		t.Errorf("output:\n%s\nwant the items, not the Lists", got)
	}
}

// TestDuplicateKeyLines: a duplicate key is an error naming its line in
// the template's output, in values.yaml and in fromYaml's text.
func TestDuplicateKeyLines(t *testing.T) {
	for _, tt := range []struct {
		files map[string]string
		file  string
		line  int
	}{
		{tmpl("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  name: d\n"), "templates/t.yaml", 5},
		{tmpl("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n# comment\napiVersion: v1\nkind: ConfigMap\nkind: Secret\n"), "templates/t.yaml", 8},
		{map[string]string{"templates/t.yaml": "", "values.yaml": "a: 1\n\n\na: 2\n"}, "values.yaml", 4},
	} {
		_, err := renderFiles(t, tt.files, "")
		var re *templates.RenderError
		if !errors.As(err, &re) || re.File != tt.file || re.Line != tt.line || !strings.Contains(re.Msg, "duplicate key") {
			t.Errorf("err = %v, want a duplicate key at %s:%d", err, tt.file, tt.line)
		}
	}
}

// TestFunctionsDocumented: every function of sprig's map and Helm's is in
// the decision table of docs/templates.md's "Functions".
func TestFunctionsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/templates.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc)
	i := strings.Index(section, "\n## Functions\n")
	j := strings.Index(section, "\n## Output and errors\n")
	if i < 0 || j < i {
		t.Fatal(`docs/templates.md has no "## Functions" section before "## Output and errors"`)
	}
	section = section[i:j]
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(section, func(r rune) bool { return r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		words[w] = true
	}
	names := []string{"include", "tpl", "required", "fail", "toYaml", "fromYaml", "fromYamlArray", "fromJsonArray", "lookup", "print", "printf", "println", "html", "js", "urlquery"}
	for name := range sprig.GenericFuncMap() {
		names = append(names, name)
	}
	for _, name := range names {
		// A gen* function the table names by its family, gen*, counts too.
		documented := words[name] || strings.HasPrefix(name, "gen") && words["gen"]
		if !documented {
			t.Errorf("%s is not in the table of docs/templates.md's Functions", name)
		}
	}
}

// TestLoopsAsSprig: until, untilStep and seq give sprig's results.
func TestLoopsAsSprig(t *testing.T) {
	f := sprig.GenericFuncMap()
	until, untilStep, seq := f["until"].(func(int) []int), f["untilStep"].(func(int, int, int) []int), f["seq"].(func(...int) string)
	var text, want strings.Builder
	text.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n")
	n := 0
	line := func(expr, result string) {
		fmt.Fprintf(&text, "  k%d: {{ %s | quote }}\n", n, expr)
		fmt.Fprintf(&want, "k%d=%s\n", n, result)
		n++
	}
	for _, a := range []int{-4, -1, 0, 1, 5} {
		line(fmt.Sprintf("until %d | toJson", a), toJSONInts(until(a)))
		line(fmt.Sprintf("seq %d", a), seq(a))
		for _, b := range []int{-3, 0, 2, 7} {
			line(fmt.Sprintf("seq %d %d", a, b), seq(a, b))
			for _, c := range []int{-2, 0, 1, 3} {
				line(fmt.Sprintf("untilStep %d %d %d | toJson", a, c, b), toJSONInts(untilStep(a, c, b)))
				line(fmt.Sprintf("seq %d %d %d", a, b, c), seq(a, b, c))
			}
		}
	}
	out, err := render(t, text.String(), "")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	var cmap struct{ Data map[string]string }
	if err := yaml.Unmarshal([]byte(out), &cmap); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		fmt.Fprintf(&got, "k%d=%s\n", i, cmap.Data[fmt.Sprintf("k%d", i)])
	}
	if diff := cmp.Diff(want.String(), got.String()); diff != "" {
		t.Errorf("loops differ from sprig's (-sprig +stencil):\n%s", diff)
	}
}

func toJSONInts(v []int) string {
	data, _ := json.Marshal(v)
	return string(data)
}
