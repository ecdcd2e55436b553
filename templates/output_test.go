package templates

import (
	"errors"
	"sort"
	"strings"
	"testing"
)

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
				var re *RenderError
				if !errors.As(err, &re) {
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
