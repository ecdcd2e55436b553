package strictyaml

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeYAMLKeyCollision: keys that become the same string are a
// duplicate key (sigs.k8s.io/yaml kept one of them at random).
func TestDecodeYAMLKeyCollision(t *testing.T) {
	for _, doc := range []string{"1: a\n\"1\": b\n", "true: a\n\"true\": b\n", "1.0: a\n1: b\n"} {
		_, err := Decode([]byte(doc), 16<<20)
		if err == nil || !strings.HasPrefix(err.Error(), "duplicate key ") {
			t.Errorf("%q: error %v, want a duplicate key", doc, err)
		}
	}
}

// TestDecodeYAMLTypes pins the unstructured form: the types the rest of
// stencil (and the API machinery) expects.
func TestDecodeYAMLTypes(t *testing.T) {
	got, err := Decode([]byte("i: 3\nbig: 12345678901234567890\nf: 1.5\nintegral: 1e3\nb: yes\ns: \"3\"\nnil: ~\nl: [0x1F]\nm: {k: v}\nt: 2001-12-14\n"), 16<<20)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"i": int64(3), "big": float64(12345678901234567890), "f": 1.5, "integral": int64(1000), "b": true,
		"s": "3", "nil": nil, "l": []any{int64(31)}, "m": map[string]any{"k": "v"}, "t": "2001-12-14"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
