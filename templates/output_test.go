package templates

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInvalidUTF8 checks that rendered output that is not valid UTF-8 is
// an error naming the file and the line of the first invalid byte, where
// YAML would read it and the API server store U+FFFD in its place.
func TestInvalidUTF8(t *testing.T) {
	for _, tt := range []struct {
		name, out string
		want      string // the error, "" for none
	}{
		{"valid", "a: é日本\n", ""},
		{"first line", "a: \xff\n", "templates/t.yaml:1: rendered output is not valid UTF-8: byte 0xff at column 4"},
		{"later line", "a: 1\nb: 2\nc: x\xc3\n", "templates/t.yaml:3: rendered output is not valid UTF-8: byte 0xc3 at column 5"},
		{"second document", "a: 1\n---\nb: \"\x80\"\n", "templates/t.yaml:3: rendered output is not valid UTF-8: byte 0x80 at column 5"},
		{"in a key", "k\xfe: v\n", "templates/t.yaml:1: rendered output is not valid UTF-8: byte 0xfe at column 2"},
		{"surrogate", "a: \xed\xa0\x80\n", "templates/t.yaml:1: rendered output is not valid UTF-8: byte 0xed at column 4"},
		{"in a comment", "# \xff\na: 1\n", "templates/t.yaml:1: rendered output is not valid UTF-8: byte 0xff at column 3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseDocuments("templates/t.yaml", tt.out)
			if tt.want == "" {
				if err != nil && strings.Contains(err.Error(), "UTF-8") {
					t.Fatalf("error %v, want none about UTF-8", err)
				}
				return
			}
			re, ok := err.(*RenderError)
			if !ok {
				t.Fatalf("error %T %v, want a *RenderError", err, err)
			}
			if re.Error() != tt.want {
				t.Errorf("error %q\nwant      %q", re, tt.want)
			}
		})
	}
}

// TestDuplicateObjectsNameBothTemplates checks that two documents that are
// one object once placed in the Composition's namespace are refused, with
// the file and line of each.
func TestDuplicateObjectsNameBothTemplates(t *testing.T) {
	cm := func(ns string) string {
		s := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n"
		if ns != "" {
			s += "  namespace: " + ns + "\n"
		}
		return s
	}
	for _, tt := range []struct {
		name    string
		outputs map[string]string // by template, rendered in name order
		want    string            // the error, "" for none
	}{
		{"one template twice", map[string]string{"templates/a.yaml": cm("") + "---\n" + cm("")},
			`templates/a.yaml:6: ConfigMap "x" is rendered twice: by templates/a.yaml:1 and by templates/a.yaml:6`},
		{"with and without its namespace", map[string]string{"templates/a.yaml": "# a\n" + cm(""), "templates/b.yaml": "---\n" + cm("shop")},
			`templates/b.yaml:2: ConfigMap "x" is rendered twice (once with a namespace, once without): by templates/a.yaml:1 and by templates/b.yaml:2`},
		{"in a List", map[string]string{"templates/a.yaml": cm("shop"), "templates/b.yaml": "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n"},
			`templates/b.yaml:1: ConfigMap "x" is rendered twice (once with a namespace, once without): by templates/a.yaml:1 and by templates/b.yaml:1`},
		{"a cluster-scoped kind in two namespaces", map[string]string{"templates/a.yaml": strings.Replace(cm("a"), "ConfigMap", "Namespace", 1), "templates/b.yaml": strings.Replace(cm("b"), "ConfigMap", "Namespace", 1)},
			`templates/b.yaml:1: Namespace "x" is rendered twice (in namespaces "a" and "b" of a cluster-scoped kind): by templates/a.yaml:1 and by templates/b.yaml:1`},
		{"another namespace", map[string]string{"templates/a.yaml": cm(""), "templates/b.yaml": cm("other")}, ""},
		{"another kind", map[string]string{"templates/a.yaml": cm(""), "templates/b.yaml": strings.Replace(cm(""), "ConfigMap", "Secret", 1)}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			names := make([]string, 0, len(tt.outputs))
			for n := range tt.outputs {
				names = append(names, n)
			}
			sort.Strings(names)
			units := make([]unit, len(names))
			for i, n := range names {
				units[i] = unit{file: n, key: n}
			}
			_, err := parseOutputs(units, tt.outputs, "shop", nil)
			got := ""
			if err != nil {
				if _, ok := err.(*RenderError); !ok {
					t.Fatalf("error %T %v, want a *RenderError", err, err)
				}
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("error %q\nwant      %q", got, tt.want)
			}
		})
	}
}

// TestDocumentsEndAsHelms: a template's documents are read as Helm reads
// them (split at lines starting with "---", each followed by a newline),
// so a block scalar keeps the line breaks `helm template` gives it. The
// wants are what Helm v4.3.1 rendered from these outputs.
func TestDocumentsEndAsHelms(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n"
	doc := func(name, data string) string { return strings.Replace(cm, "%s", name, 1) + data }
	for _, tt := range []struct {
		name, out string
		want      []string // data.k of each object
		lines     []int
	}{
		{"a block scalar ends the output", doc("a", "  k: |\n    {}"), []string{"{}\n"}, []int{1}},
		{"keep chomping at the end", doc("b", "  k: |+\n    x\n\n\n\n"), []string{"x\n\n\n\n\n"}, []int{1}},
		{"clip chomping before a separator", doc("e", "  k: |\n    y\n  \n  \n") + "---\n" + doc("f", "  k: |-\n    z"), []string{"y\n", "z"}, []int{1, 11}},
		{"what follows the dashes begins the next document", "\n\n" + doc("g", "  k: v\n") + "--- # a comment\n" + doc("h", "  k: w\n") + "---\n\n", []string{"v", "w"}, []int{3, 9}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			objs, lines, err := parseDocuments("templates/t.yaml", tt.out)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				got = append(got, o.Object["data"].(map[string]any)["k"].(string))
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("data.k (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.lines, lines); d != "" {
				t.Errorf("lines (-want +got):\n%s", d)
			}
		})
	}
}
