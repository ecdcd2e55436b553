package flags

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestApplySet(t *testing.T) {
	tests := []struct {
		name  string
		exprs []string
		typed bool
		want  map[string]any
	}{
		// Keys and nesting.
		{"one key", []string{"a=b"}, true, map[string]any{"a": "b"}},
		{"dotted keys and commas", []string{"a.b=1,c=true"}, true, map[string]any{"a": map[string]any{"b": int64(1)}, "c": true}},
		{"later wins, siblings kept", []string{"a.b=1,a.c=2", "a.b=3"}, true, map[string]any{"a": map[string]any{"b": int64(3), "c": int64(2)}}},
		{"an escaped dot is part of the key", []string{`a\.b=c`}, true, map[string]any{"a.b": "c"}},
		// Lists.
		{"list indexes", []string{"a[0]=x,a[1]=y"}, true, map[string]any{"a": []any{"x", "y"}}},
		{"a map inside a list", []string{"a[1].b=x"}, true, map[string]any{"a": []any{nil, map[string]any{"b": "x"}}}},
		{"a list literal", []string{"l={a,b,1}"}, true, map[string]any{"l": []any{"a", "b", int64(1)}}},
		{"a list literal beside a key", []string{"l={a,b},c=d"}, true, map[string]any{"l": []any{"a", "b"}, "c": "d"}},
		// Values, typed as Helm types them.
		{"an escaped comma is part of the value", []string{`x=a\,b`}, true, map[string]any{"x": "a,b"}},
		{"a leading zero keeps a string", []string{"n=0123"}, true, map[string]any{"n": "0123"}},
		{"a float stays a string", []string{"x=1.5"}, true, map[string]any{"x": "1.5"}},
		{"null", []string{"x=null"}, true, map[string]any{"x": nil}},
		{"an equals sign in the value", []string{"x=a=b"}, true, map[string]any{"x": "a=b"}},
		{"negative numbers", []string{"x=-3"}, true, map[string]any{"x": int64(-3)}},
		{"--set-string keeps strings", []string{"a=1,b=true"}, false, map[string]any{"a": "1", "b": "true"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]any{}
			for _, e := range tt.exprs {
				if err := applySet(got, e, tt.typed); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestApplySetErrors(t *testing.T) {
	tests := []struct{ expr, want string }{
		{"a", `"a" is not key=value`},
		{"=b", `"=b" is not key=value`},
		{"a..b=1", "empty part"},
		{"a[x]=1", `list index "x" is not a number`},
		{"a[100000]=1", "list index 100000 is over 10000"},
		{"a=1,a.b=2", "a.b: b is not a map"},
		{"a=1,a[0]=2", "indexes a value that is not a list"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			err := applySet(map[string]any{}, tt.expr, true)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one saying %q", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.expr) {
				t.Errorf("err = %v, want it to quote the expression", err)
			}
		})
	}
}

func TestValuesFlagsMerge(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	if err := os.WriteFile(a, []byte("image: {repo: nginx, tag: \"1\"}\nreplicas: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("image: {tag: \"2\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v := &Values{files: []string{a, b}, sets: []setFlag{{"replicas=3", true}, {"image.tag=007", false}}}
	got, err := v.Merged()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"image": map[string]any{"repo": "nginx", "tag": "007"}, "replicas": int64(3)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
