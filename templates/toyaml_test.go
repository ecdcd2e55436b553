package templates

import (
	"math"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// slowToYAML is toYaml as Helm (and stencil before toYAMLFast) writes it.
func slowToYAML(v any) (string, error) {
	data, err := yaml.Marshal(v)
	return strings.TrimSuffix(string(data), "\n"), err
}

// TestToYAMLFastMatchesMarshal is the differential test of toYAMLFast:
// on every value of the YAML corpus of TestDecodeYAMLMatchesOracle (each
// document and every map and list in it) and on typed values, what it
// writes is byte for byte what sigs.k8s.io/yaml's Marshal writes, or it
// declines.
func TestToYAMLFastMatchesMarshal(t *testing.T) {
	var values []any
	var walk func(v any)
	walk = func(v any) {
		values = append(values, v)
		switch x := v.(type) {
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, d := range corpus(t) {
		if v, err := decodeYAML([]byte(d.text), MaxOutputBytes); err == nil {
			walk(v)
		}
	}
	values = append(values,
		map[string]string{"b": "2", "a": "1", "yes": "no", "1": "x"}, []string{"on", "off", "1e3", "", " x", "a: b", "#c"},
		map[string]string(nil), []string(nil), map[string]any(nil), []any(nil), []any{},
		[]any{1.0, 3.0, -0.0, 1.5, 1e21, 1e20, 9.3e18, 1e-7, 12345678901234567890.0, math.MaxFloat64, int64(math.MinInt64), 7},
		[]any{math.NaN()}, map[string]any{"x": math.Inf(1)},
		map[string]any{"é": "日本", "nel": "a\u0085b", "ctl": "a\x01b", "tab": "a\tb", "nl": "a\nb\n", "bad": "\xff"},
		struct{ A int }{1}, &struct{ B string }{"x"}, []any{map[string]any{"<<": map[string]any{"a": 1}}},
	)
	var fast int
	for _, v := range values {
		want, wantErr := slowToYAML(v)
		got, ok := toYAMLFast(v)
		if !ok {
			continue
		}
		fast++
		if wantErr != nil {
			t.Errorf("%#v: toYAMLFast wrote %q, Marshal fails: %v", v, got, wantErr)
		} else if got != want {
			t.Errorf("%#v: toYAMLFast wrote\n%s\nMarshal writes\n%s", v, got, want)
		}
	}
	if fast < len(values)/2 {
		t.Errorf("toYAMLFast wrote only %d of %d values", fast, len(values))
	}
	t.Logf("%d of %d values written the fast way, all as Marshal", fast, len(values))
}
