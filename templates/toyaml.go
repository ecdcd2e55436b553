package templates

import (
	"encoding/json"
	"math"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
)

// toYAMLFast writes v as sigs.k8s.io/yaml's Marshal does (Helm's toYaml)
// without its detour: Marshal writes v as JSON, parses that JSON again
// with go.yaml.in/yaml/v2 to pick number types, then writes YAML. For the
// values templates hold (maps, lists, strings, booleans, integers, nil)
// that detour is the identity but for number types, so v is converted
// directly to what the parse would give and written. ok is false for
// anything else (a struct, a pointer, a string that is not printable
// ASCII, a NaN), which the caller writes the slow way.
func toYAMLFast(v any) (out string, ok bool) {
	c, ok := yamlReady(v, 0)
	if !ok {
		return "", false
	}
	data, err := yamlv2.Marshal(c)
	if err != nil {
		return "", false
	}
	return strings.TrimSuffix(string(data), "\n"), true
}

// yamlReady is v as go.yaml.in/yaml/v2 reads v's JSON: integers as int64
// (the same YAML), floats as the JSON text of them reads, typed maps and
// lists as generic ones, nil maps and lists as nil.
func yamlReady(v any, depth int) (any, bool) {
	if depth > MaxValueDepth {
		return nil, false
	}
	switch x := v.(type) {
	case nil, bool, int, int64:
		return x, true
	case string:
		return x, plainASCII(x)
	case float64:
		return jsonFloat(x)
	case map[string]any:
		if x == nil {
			return nil, true
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !plainASCII(k) {
				return nil, false
			}
			var ok bool
			if out[k], ok = yamlReady(e, depth+1); !ok {
				return nil, false
			}
		}
		return out, true
	case []any:
		if x == nil {
			return nil, true
		}
		out := make([]any, len(x))
		for i, e := range x {
			var ok bool
			if out[i], ok = yamlReady(e, depth+1); !ok {
				return nil, false
			}
		}
		return out, true
	case map[string]string:
		if x == nil {
			return nil, true
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			if !plainASCII(k) || !plainASCII(e) {
				return nil, false
			}
			out[k] = e
		}
		return out, true
	case []string:
		if x == nil {
			return nil, true
		}
		out := make([]any, len(x))
		for i, e := range x {
			if !plainASCII(e) {
				return nil, false
			}
			out[i] = e
		}
		return out, true
	}
	return nil, false
}

// jsonFloat is f as go.yaml.in/yaml/v2 reads encoding/json's text of it
// (3.0 is the integer 3, 1e21 stays a float).
func jsonFloat(f float64) (any, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false // json.Marshal fails: toYaml writes ""
	}
	js, err := json.Marshal(f)
	if err != nil {
		return nil, false
	}
	var out any
	if err := yamlv2.Unmarshal(js, &out); err != nil {
		return nil, false
	}
	return out, true
}

// plainASCII reports a string JSON and YAML both pass through unchanged:
// printable ASCII, tabs and newlines. (JSON escapes the other control
// characters, and YAML reads some bytes above ASCII, such as U+0085,
// as line breaks or refuses them.)
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\n' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}
