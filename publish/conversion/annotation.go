package conversion

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"reflect"
	"sort"
	"strings"
)

// record is the value of the annotation AnnotationPrefix+<version>: what
// converting an instance written in <version> lost, to restore when it
// converts back.
type record struct {
	// To is the version the instance was converted to when the record
	// was written.
	To string `json:"to"`
	// Fields are the fields to restore.
	Fields []lostField `json:"fields"`
}

// lostField is one field the conversion lost: its value in the source
// version (or that it was absent there), and a hash of what the
// conversion back gave at its path when the record was written. A field
// is restored only while the conversion back still gives that: a change
// made in another version since wins over the record.
type lostField struct {
	Path   []string `json:"path"`
	Value  any      `json:"value,omitempty"`
	Absent bool     `json:"absent,omitempty"`
	Base   string   `json:"base,omitempty"`
}

// restore writes the record's fields over spec.
func (r *record) restore(spec map[string]any) {
	for _, f := range r.Fields {
		if len(f.Path) == 0 {
			continue
		}
		cur, ok := get(spec, f.Path)
		if hashOf(cur, ok) != f.Base {
			continue
		}
		if f.Absent {
			removeField(spec, f.Path)
			continue
		}
		_ = set(spec, f.Path, deepCopy(f.Value)) // a non-map on the way changed since: the hash differs
	}
}

// removeField removes the field at path, leaving its parents.
func removeField(doc map[string]any, path []string) {
	parent, _ := get(doc, path[:len(path)-1])
	if m, ok := parent.(map[string]any); ok {
		delete(m, path[len(path)-1])
	}
}

// hashOf is a short hash of a value's JSON ("" for an absent one).
func hashOf(v any, present bool) string {
	if !present {
		return ""
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	h := fnv.New64a()
	_, _ = h.Write(raw)
	return fmt.Sprintf("%016x", h.Sum64())
}

// equal reports whether two JSON-like values are the same, numbers
// compared by value (an int64 3 is a float64 3).
func equal(a, b any) bool {
	if an, ok := number(a); ok {
		bn, ok := number(b)
		return ok && an == bn
	}
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equal(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// number returns a numeric value as a float64.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// records decodes obj's conversion annotations, by version. One that
// does not decode is left out: it restores nothing.
func records(obj map[string]any) map[string]*record {
	out := map[string]*record{}
	for k, v := range annotations(obj) {
		version, ok := strings.CutPrefix(k, AnnotationPrefix)
		if !ok {
			continue
		}
		s, _ := v.(string)
		var r record
		if err := decodeJSON([]byte(s), &r); err != nil {
			continue
		}
		for i := range r.Fields {
			r.Fields[i].Value = normalize(r.Fields[i].Value)
		}
		out[version] = &r
	}
	return out
}

// annotations is obj's metadata.annotations (nil when it has none).
func annotations(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	return ann
}

// annotate writes out's conversion annotations: the target version's
// and the other consumed records (restored) are removed, the source
// version's is lost (or removed when nothing is lost).
func annotate(out map[string]any, from, to string, lost *record, consumed []string) error {
	ann := annotations(out)
	if ann == nil && lost == nil {
		return nil
	}
	if ann == nil {
		md, ok := out["metadata"].(map[string]any)
		if !ok {
			md = map[string]any{}
			out["metadata"] = md
		}
		ann = map[string]any{}
		md["annotations"] = ann
	}
	for _, v := range consumed {
		delete(ann, AnnotationPrefix+v)
	}
	delete(ann, AnnotationPrefix+to) // restored, or one that does not decode
	delete(ann, AnnotationPrefix+from)
	if lost != nil {
		raw, err := json.Marshal(lost)
		if err != nil {
			return fmt.Errorf("record what %s cannot hold: %w", to, err)
		}
		ann[AnnotationPrefix+from] = string(raw)
	}
	total := 0
	for k, v := range ann {
		s, _ := v.(string)
		total += len(k) + len(s)
	}
	if total > MaxAnnotationBytes {
		return fmt.Errorf("what %s cannot hold of the spec does not fit in the annotation %s%s: the annotations would be %d bytes, more than %d",
			to, AnnotationPrefix, from, total, MaxAnnotationBytes)
	}
	if len(ann) == 0 {
		md := out["metadata"].(map[string]any)
		delete(md, "annotations")
	}
	return nil
}

// decodeJSON decodes JSON keeping integers as int64.
func decodeJSON(raw []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// normalize turns json.Numbers into int64 (integers) or float64.
func normalize(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		f, _ := v.Float64()
		return f
	case map[string]any:
		for k, e := range v {
			v[k] = normalize(e)
		}
	case []any:
		for i, e := range v {
			v[i] = normalize(e)
		}
	}
	return v
}

// paths lists the dot-separated paths under root where a and b differ.
func paths(root string, a, b any) []string {
	var out []string
	diff(a, b, nil, func(path []string, _, _ any, _, _ bool) {
		out = append(out, strings.Join(append([]string{root}, path...), "."))
	})
	sort.Strings(out)
	return out
}
