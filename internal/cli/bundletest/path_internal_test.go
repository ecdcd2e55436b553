package bundletest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePath(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"stencil.dev/id": "web", "a]b": "odd"}},
		"spec": map[string]any{
			"replicas": int64(2),
			"containers": []any{
				map[string]any{"name": "app", "image": "nginx", "ports": []any{map[string]any{"containerPort": int64(80)}}},
				map[string]any{"name": "sidecar", "image": "busybox"},
			},
		},
		"list": []any{[]any{"x"}},
	}
	tests := []struct {
		path  string
		want  any
		found bool
		why   string
	}{
		// Names and indices.
		{"spec.replicas", int64(2), true, ""},
		{"spec.containers[1].image", "busybox", true, ""},
		{"spec.containers[0].ports[0].containerPort", int64(80), true, ""},
		{"list[0][0]", "x", true, ""},
		// A list item by a field's value, a number's as JSON prints it.
		{"spec.containers[name=sidecar].image", "busybox", true, ""},
		{"spec.containers[name=app].ports[containerPort=80].containerPort", int64(80), true, ""},
		// Keys holding dots or brackets, quoted.
		{`metadata.annotations["stencil.dev/id"]`, "web", true, ""},
		{`metadata.annotations['a]b']`, "odd", true, ""},
		// Absent, and why when the path cannot go on.
		{"spec.paused", nil, false, ""},
		{"spec.containers[2]", nil, false, "spec.containers has 2 items"},
		{"spec.containers[name=db]", nil, false, "spec.containers has no item with name=db"},
		{"spec.replicas.x", nil, false, "spec.replicas is a number, not an object"},
		{"spec.containers.name", nil, false, "spec.containers is a list, not an object"},
		{"spec[0]", nil, false, "spec is an object, not a list"},
		{`metadata.annotations["stencil.dev/id"][0]`, nil, false, `metadata.annotations["stencil.dev/id"] is a string, not a list`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			p, err := parsePath(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			got, found, why := p.get(obj)
			if diff := cmp.Diff(tt.want, got); diff != "" || found != tt.found || why != tt.why {
				t.Errorf("get = %v, %v, %q; want %v, %v, %q", got, found, why, tt.want, tt.found, tt.why)
			}
		})
	}
}

func TestParsePathErrors(t *testing.T) {
	for path, want := range map[string]string{
		"":                         "empty",
		"a..b":                     "a name is empty (two dots, or a dot at an end)",
		"a.":                       "a name is empty (two dots, or a dot at an end)",
		".a":                       "a name is empty (two dots, or a dot at an end)",
		"a[":                       `at "[": [ without ]`,
		"a[x]":                     `at "[x]": want [N], [key=value] or ["key"]`,
		"a[-1]":                    `at "[-1]": want [N], [key=value] or ["key"]`,
		"a[=v]":                    `at "[=v]": want [key=value]`,
		`a["b]`:                    `at "[\"b]": want ["key"]`,
		`a["b"]c`:                  `at "c": want . or [ after a bracket`,
		"a[0]b":                    `at "b": want . or [ after a bracket`,
		string(make([]byte, 1025)): "longer than 1024 bytes",
	} {
		if _, err := parsePath(path); err == nil || err.Error() != want {
			t.Errorf("parsePath(%.20q) = %v, want %s", path, err, want)
		}
	}
}
