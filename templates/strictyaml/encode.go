package strictyaml

import (
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/stencil-dev/stencil/templates/measure"
	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
)

// Marshal writes v as toYaml does, as sigs.k8s.io/yaml's Marshal without
// the final line break: MarshalFast when it takes v, the library otherwise.
func Marshal(v any) (string, error) {
	if out, ok := MarshalFast(v); ok {
		return out, nil
	}
	data, err := yaml.Marshal(v)
	return strings.TrimSuffix(string(data), "\n"), err
}

// MarshalFast writes v as sigs.k8s.io/yaml's Marshal does (Helm's toYaml)
// without its detour: Marshal writes v as JSON, parses that JSON again
// with go.yaml.in/yaml/v2 to pick number types, then writes YAML. For the
// values templates hold (maps, lists, strings, booleans, integers, nil)
// that detour is the identity but for number types, so v is converted
// directly to what the parse would give and written. ok is false for
// anything else (a struct, a pointer, a string that is not printable
// ASCII, a NaN), which the caller writes the slow way. It pays for itself:
// without it a warm render of the benchmark bundles (BenchmarkRender*)
// takes 40-80% longer, toYaml being most of what Helm-style templates do.
// TestToYAMLFastMatchesMarshal (package templates, on its YAML corpus)
// and TestToYAMLFastRandom hold it to Marshal.
func MarshalFast(v any) (out string, ok bool) {
	w := yamlWriter{b: make([]byte, 0, 256)}
	if !w.value(v, 0, 0) {
		return "", false
	}
	return strings.TrimSuffix(string(w.b), "\n"), true
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

// yamlWriter writes a value as go.yaml.in/yaml/v2's encoder writes what
// it reads from the value's JSON (block style, indent 2, keys in its
// order), without building that copy or running the emitter. It handles
// the scalars whose text does not depend on where they stand: a string
// with a line break or that is not plain ASCII, a type other than the
// JSON ones, or a string with spaces long enough for the emitter to fold
// (past column 80) makes it decline.
type yamlWriter struct {
	b []byte
}

// bestWidth is go.yaml.in/yaml/v2's line width: a scalar with a space
// that would reach past it may be folded.
const bestWidth = 80

// value writes v, which starts at column col, then a line break. A
// collection is written as a block at indent (the column of its keys or
// dashes) when v is not empty, its first line continuing the current one
// (after "- ") or starting a new one (after "key:") as the caller chose.
func (w *yamlWriter) value(v any, indent, depth int) bool {
	if depth > measure.MaxValueDepth {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		return writeMap(w, x, indent, depth)
	case map[string]string:
		return writeMap(w, x, indent, depth)
	case []any:
		return writeList(w, x, indent, depth)
	case []string:
		return writeList(w, x, indent, depth)
	}
	if m, ok := namedMap(v); ok {
		return writeMap(w, m, indent, depth)
	}
	if !w.scalar(v, indent) {
		return false
	}
	w.b = append(w.b, '\n')
	return true
}

// writeMap writes a mapping's entries in sorted key order ({} when empty,
// null when nil).
func writeMap[V any](w *yamlWriter, x map[string]V, indent, depth int) bool {
	if x == nil {
		w.b = append(w.b, "null\n"...)
		return true
	}
	if len(x) == 0 {
		w.b = append(w.b, "{}\n"...)
		return true
	}
	keys := w.sortedKeys(len(x), func(add func(string)) {
		for k := range x {
			add(k)
		}
	})
	if keys == nil {
		return false
	}
	for i, k := range keys {
		if !w.entry(i, k, x[k], indent, depth) {
			return false
		}
	}
	return true
}

// writeList writes a sequence's items ([] when empty, null when nil).
func writeList[E any](w *yamlWriter, x []E, indent, depth int) bool {
	if x == nil {
		w.b = append(w.b, "null\n"...)
		return true
	}
	if len(x) == 0 {
		w.b = append(w.b, "[]\n"...)
		return true
	}
	for i, e := range x {
		if !w.item(i, e, indent, depth) {
			return false
		}
	}
	return true
}

// entry writes one key and value of a mapping at indent; the first
// entry continues the current line.
func (w *yamlWriter) entry(i int, k string, v any, indent, depth int) bool {
	if i > 0 {
		w.indent(indent)
	}
	if len(k) > 100 {
		return false // not a simple key for the emitter: "? key"
	}
	start := len(w.b)
	if !w.str(k, indent) {
		return false
	}
	col := indent + len(w.b) - start
	w.b = append(w.b, ':')
	switch {
	case nonEmptyMap(v):
		w.b = append(w.b, '\n')
		w.indent(indent + 2)
		return w.value(v, indent+2, depth+1)
	case nonEmptyList(v):
		w.b = append(w.b, '\n')
		w.indent(indent)
		return w.value(v, indent, depth+1)
	}
	w.b = append(w.b, ' ')
	return w.value(v, col+2, depth+1)
}

// item writes one element of a sequence at indent; the first continues
// the current line.
func (w *yamlWriter) item(i int, v any, indent, depth int) bool {
	if i > 0 {
		w.indent(indent)
	}
	w.b = append(w.b, "- "...)
	return w.value(v, indent+2, depth+1)
}

func (w *yamlWriter) indent(n int) {
	for range n {
		w.b = append(w.b, ' ')
	}
}

func nonEmptyMap(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) > 0
	case map[string]string:
		return len(x) > 0
	}
	m, ok := namedMap(v)
	return ok && len(m) > 0
}

var mapStringAnyType = reflect.TypeFor[map[string]any]()

// namedMap is v as a map[string]any when its type is a named one of that
// kind, such as .Values (Helm's Values type), which is written as a map.
func namedMap(v any) (map[string]any, bool) {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type() == mapStringAnyType || !rv.Type().ConvertibleTo(mapStringAnyType) {
		return nil, false
	}
	return rv.Convert(mapStringAnyType).Interface().(map[string]any), true
}

func nonEmptyList(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) > 0
	case []string:
		return len(x) > 0
	}
	return false
}

// sortedKeys returns the n keys each() adds in go.yaml.in/yaml/v2's
// order, or nil when one is not plain ASCII.
func (w *yamlWriter) sortedKeys(n int, each func(add func(string))) []string {
	keys := make([]string, 0, n)
	ok := true
	each(func(k string) {
		ok = ok && plainASCII(k)
		keys = append(keys, k)
	})
	if !ok {
		return nil
	}
	slices.SortFunc(keys, func(a, b string) int {
		if yamlKeyLess(a, b) {
			return -1
		}
		if yamlKeyLess(b, a) {
			return 1
		}
		return 0
	})
	return keys
}

// scalar writes a scalar that starts at column col.
func (w *yamlWriter) scalar(v any, col int) bool {
	switch x := v.(type) {
	case nil:
		w.b = append(w.b, "null"...)
	case bool:
		w.b = strconv.AppendBool(w.b, x)
	case int:
		w.b = strconv.AppendInt(w.b, int64(x), 10)
	case int64:
		w.b = strconv.AppendInt(w.b, x, 10)
	case string:
		return w.str(x, col)
	case float64:
		f, ok := jsonFloat(x)
		if !ok {
			return false
		}
		switch n := f.(type) {
		case int:
			w.b = strconv.AppendInt(w.b, int64(n), 10)
		case int64:
			w.b = strconv.AppendInt(w.b, n, 10)
		case uint64:
			w.b = strconv.AppendUint(w.b, n, 10)
		case float64:
			w.b = append(w.b, yamlFloat(n, 64)...)
		default:
			return false
		}
	default:
		return false
	}
	return true
}

// str writes a string scalar starting at column col: plain when
// go.yaml.in/yaml/v2 writes it plain, else as its encoder writes it alone
// (quoted), which is the same text anywhere on one line.
func (w *yamlWriter) str(s string, col int) bool {
	if !plainASCII(s) || strings.ContainsAny(s, "\n\t") {
		return false
	}
	text := s
	switch style := stringStyle(s); style {
	case '\'':
		text = "'" + strings.ReplaceAll(s, "'", "''") + "'"
	case '"':
		text = strconv.Quote(s) // printable ASCII: only " and \ escaped, as yaml/v2 does
	case 0:
		data, err := yamlv2.Marshal(s)
		if err != nil {
			return false
		}
		text = strings.TrimSuffix(string(data), "\n")
		if strings.IndexByte(text, '\n') >= 0 {
			return false
		}
	}
	if strings.IndexByte(s, ' ') >= 0 && col+len(text) > bestWidth {
		return false // the emitter may fold it
	}
	w.b = append(w.b, text...)
	return true
}

// stringStyle is how go.yaml.in/yaml/v2 writes a string of printable
// ASCII (no line break or tab): a space for plain, a single quote for
// single-quoted (it reads as a string but the emitter does not allow it
// plain in block context), a double quote for double-quoted (it would
// read as another type: true, null, ...), or 0 when only yaml/v2 itself
// can tell (strings that may read as numbers or timestamps).
func stringStyle(s string) byte {
	if s == "" {
		return '"'
	}
	if _, word := plainWords[s]; word {
		return '"'
	}
	switch c := s[0]; {
	case c == '.' || c == '+' || c == '-' || c >= '0' && c <= '9':
		if !surelyNotNumber(s) {
			return 0
		}
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' || strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return '\''
	}
	end := func(i int) bool { return i+1 == len(s) || s[i+1] == ' ' }
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return '\''
	case '?', ':', '-':
		if end(0) {
			return '\''
		}
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case ':':
			if end(i) {
				return '\''
			}
		case '#':
			if s[i-1] == ' ' {
				return '\''
			}
		}
	}
	return ' '
}

// surelyNotNumber reports a string starting with a digit that neither
// an integer, a float nor a timestamp can be: it holds a byte none of
// them has (a letter such as the m of 100m or the M of 128Mi).
func surelyNotNumber(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		case strings.IndexByte("xXoO_+-.: tTzZiInN", c) >= 0: // and .inf, .nan
		default:
			return true
		}
	}
	return false
}

// yamlKeyLess is go.yaml.in/yaml/v2's order of two ASCII string keys
// (its keyList.Less): letters before other bytes, runs of digits by
// their value.
func yamlKeyLess(a, b string) bool {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] == b[i] {
			continue
		}
		al, bl := isLetter(a[i]), isLetter(b[i])
		if al && bl {
			return a[i] < b[i]
		}
		if al || bl {
			return bl
		}
		return digitsLess(a, b, i)
	}
	return len(a) < len(b)
}

// digitsLess orders a and b, equal before i and differing at i, by the
// values of the runs of digits that start at i (a run after non-zero
// digits counts from 1, so leading zeros do not shorten it); equal runs
// by their length, then by the bytes at i.
func digitsLess(a, b string, i int) bool {
	var ai, bi int
	var an, bn int64
	if a[i] == '0' || b[i] == '0' {
		for j := i - 1; j >= 0 && isDigit(a[j]); j-- {
			if a[j] != '0' {
				an, bn = 1, 1
				break
			}
		}
	}
	for ai = i; ai < len(a) && isDigit(a[ai]); ai++ {
		an = an*10 + int64(a[ai]-'0')
	}
	for bi = i; bi < len(b) && isDigit(b[bi]); bi++ {
		bn = bn*10 + int64(b[bi]-'0')
	}
	if an != bn {
		return an < bn
	}
	if ai != bi {
		return ai < bi
	}
	return a[i] < b[i]
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
