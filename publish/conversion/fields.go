package conversion

import (
	"encoding/json"
	"fmt"
	"strings"
)

// get returns the value at path and whether it is there.
func get(doc map[string]any, path []string) (any, bool) {
	var cur any = doc
	for _, name := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[name]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// set sets the value at path, making the maps on the way that are
// absent (or null). A field on the way that is not a map is an error.
func set(doc map[string]any, path []string, v any) error {
	m := doc
	for i, name := range path[:len(path)-1] {
		next, ok := m[name]
		if !ok || next == nil {
			child := map[string]any{}
			m[name] = child
			m = child
			continue
		}
		child, ok := next.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is %s, not an object: cannot set a field in it", strings.Join(path[:i+1], "."), jsonType(next))
		}
		m = child
	}
	m[path[len(path)-1]] = v
	return nil
}

// remove removes the field at path, and the maps on the way that it
// leaves empty; nothing happens when it is absent.
func remove(doc map[string]any, path []string) {
	if len(path) == 1 {
		delete(doc, path[0])
		return
	}
	child, ok := doc[path[0]].(map[string]any)
	if !ok {
		return
	}
	before := len(child)
	remove(child, path[1:])
	if len(child) == 0 && before > 0 {
		delete(doc, path[0])
	}
}

// jsonType names v's JSON type.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case int, int32, int64, float32, float64:
		return "a number"
	}
	return fmt.Sprintf("a %T", v)
}

// deepCopy copies JSON-like data: maps and slices are new, scalars are
// shared; integers become int64, json.Numbers int64 or float64.
func deepCopy(v any) any {
	switch v := v.(type) {
	case int:
		return int64(v)
	case int32:
		return int64(v)
	case json.Number:
		return normalize(v)
	case map[string]any:
		if v == nil {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		if v == nil {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
