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

// TestDecodeFastQuotedKeys: the fast reader takes quoted keys without
// escapes, as charts quote annotation keys ("helm.sh/hook": x; argo-cd's
// CRDs went to yaml/v2 for "helm.sh/resource-policy"), as strings, never
// resolved; it declines the forms it does not read, which Decode reads
// the general way (TestDecodeYAMLMatchesOracle compares both).
func TestDecodeFastQuotedKeys(t *testing.T) {
	takes := map[string]any{
		"\"helm.sh/hook\": pre-install\n": map[string]any{"helm.sh/hook": "pre-install"},
		"'a/b': c\n":                      map[string]any{"a/b": "c"},
		"\"true\": 1\n":                   map[string]any{"true": int64(1)},
		"\"a: b #c\": d\n":                map[string]any{"a: b #c": "d"},
		"\"a\": # c\n  b: 1\n":            map[string]any{"a": map[string]any{"b": int64(1)}},
		"- \"a\":\n  - x\n  'b': 2\n":     []any{map[string]any{"a": []any{"x"}, "b": int64(2)}},
	}
	for doc, want := range takes {
		got, ok := DecodeFast(doc)
		if !ok {
			t.Errorf("%q: declined", doc)
		} else if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q: (-want +got):\n%s", doc, diff)
		}
	}
	for _, doc := range []string{
		"\"a\\\"b\": c\n", "'it''s': v\n", "\"\": v\n", "\"a\":b\n", "\"a\" : b\n", "\"a\"b: c\n", "\"a\": 1\na: 2\n", "\"a\n",
	} {
		if _, ok := DecodeFast(doc); ok {
			t.Errorf("%q: read, want declined", doc)
		}
	}
}

// TestDecodeFastSingleQuotedLines: a single-quoted scalar of several
// lines, as controller-gen writes a description holding ": " (argo-cd's
// and kube-prometheus-stack's CRDs went to yaml/v2 for them), is folded
// as YAML folds it, a doubled quote read as one; what it cannot be sure
// of is declined.
func TestDecodeFastSingleQuotedLines(t *testing.T) {
	takes := map[string]string{
		"d: 'Refresh (default: false)\n  be used'\n": "Refresh (default: false) be used",
		"d: 'it''s  \n    a \\ \"x\" ''q'''\n":       `it's a \ "x" 'q'`,
		"d: 'x\n  y\n  z '\n":                        "x y z ",
	}
	for doc, want := range takes {
		got, ok := DecodeFast(doc)
		if !ok {
			t.Errorf("%q: declined", doc)
		} else if diff := cmp.Diff(map[string]any{"d": want}, got); diff != "" {
			t.Errorf("%q: (-want +got):\n%s", doc, diff)
		}
	}
	for _, doc := range []string{"d: 'x\n  y''\n", "d: 'x' y\n  z'\n", "d: 'x\n\n  y'\n", "d: 'x\n  y'\n  z\n", "d: 'x\n  y\n"} {
		if _, ok := DecodeFast(doc); ok {
			t.Errorf("%q: read, want declined", doc)
		}
	}
}

// TestDecodeFastBeyondASCII: the fast reader takes text beyond ASCII that
// yaml/v2 prints (controller-gen's descriptions hold “quotes”, which sent
// prometheus-operator's two largest CRDs to yaml/v2), and declines what
// yaml/v2 refuses or reads as a line break, and keys beyond ASCII.
func TestDecodeFastBeyondASCII(t *testing.T) {
	for doc, want := range map[string]any{
		"d: use “quotes” — ok\n": "use “quotes” — ok",
		"d: 'é\n  日本'\n":         "é 日本",
		"d: \"\u00a0x\u00a0\"\n": "\u00a0x\u00a0",
		"d: |\n  x\ufffd\n":      "x\ufffd\n",
		"d: x\u00a0\n":           "x\u00a0",
	} {
		got, ok := DecodeFast(doc)
		if !ok {
			t.Errorf("%q: declined", doc)
		} else if diff := cmp.Diff(map[string]any{"d": want}, got); diff != "" {
			t.Errorf("%q: (-want +got):\n%s", doc, diff)
		}
	}
	for _, doc := range []string{
		"d: a\u2028b\n", "d: a\u2029b\n", "d: a\u0085b\n", "d: \ufeffx\n", "d: 😀\n", "d: a\xffb\n", "d: a\u0080b\n", "é: x\n", "d: a\x7fb\n",
	} {
		if _, ok := DecodeFast(doc); ok {
			t.Errorf("%q: read, want declined", doc)
		}
	}
}
