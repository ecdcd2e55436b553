package manifest

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/stencil-dev/stencil/templates/fault"
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
			_, _, err := Parse("templates/t.yaml", tt.out)
			if tt.want == "" {
				if err != nil && strings.Contains(err.Error(), "UTF-8") {
					t.Fatalf("error %v, want none about UTF-8", err)
				}
				return
			}
			var re *fault.RenderError
			if !errors.As(err, &re) {
				t.Fatalf("error %T %v, want a *RenderError", err, err)
			}
			if re.Error() != tt.want {
				t.Errorf("error %q\nwant      %q", re, tt.want)
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
			objs, lines, err := Parse("templates/t.yaml", tt.out)
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
