package strictyaml

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	yamlv2 "go.yaml.in/yaml/v2"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"

	"github.com/stencil-dev/stencil/templates/measure"
)

// ToJSON converts one YAML document to JSON as the API machinery does
// (sigs.k8s.io/yaml), but strictly, and refusing aliases that expand to
// more than limit bytes or nest deeper than MaxValueDepth: go.yaml.in/yaml
// bounds the alias expansions it decodes by their ratio to the other
// nodes, not their size, so a few thousand aliases of a long string would
// still expand to gigabytes of JSON.
func ToJSON(doc []byte, limit int64) ([]byte, error) {
	if strings.Contains(string(doc), "*") { // an alias is *name
		var v any
		if err := yamlv2.Unmarshal(doc, &v); err != nil {
			return nil, NewError(err)
		}
		if err := checkAliases(v, limit); err != nil {
			return nil, err
		}
	}
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, NewError(err)
	}
	return js, nil
}

// CheckDepth refuses a parsed value nested deeper than MaxValueDepth,
// naming the path to the first place too deep, from root.
func CheckDepth(v any, path string, depth int) (string, bool) {
	if depth > measure.MaxValueDepth {
		return path, false
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if p, ok := CheckDepth(e, path+"."+k, depth+1); !ok {
				return p, false
			}
		}
	case []any:
		for i, e := range x {
			if p, ok := CheckDepth(e, path+"["+strconv.Itoa(i)+"]", depth+1); !ok {
				return p, false
			}
		}
	}
	return "", true
}

// Decode parses one YAML document straight to the unstructured form:
// what sigs.k8s.io/yaml's YAMLToJSONStrict followed by the API machinery's
// JSON decoding (k8s.io/apimachinery/pkg/util/json) gives, without writing
// and reading the JSON between them. That is go.yaml.in/yaml/v2's reading
// (YAML 1.1 booleans such as yes and off, 0x1F and 017 as integers,
// timestamps as strings, !!binary decoded, merge keys), maps with string
// keys (an integer, float or boolean key written as sigs.k8s.io/yaml
// writes it), integers as int64 and any other number as float64, an
// integral float (1e3, 2.0) or a too large integer as JSON's round trip
// makes it (int64 1000 and 2, float64 1.2345678901234567e19), and strings
// as valid UTF-8 (each invalid byte U+FFFD). The errors are ToJSON's,
// but two keys that become the same string (1 and "1") are a duplicate
// key, where sigs.k8s.io/yaml keeps one of them at random. Like
// ToJSON, a document holding an alias is measured expanded, and
// refused past limit bytes or MaxValueDepth.
func Decode(doc []byte, limit int64) (any, error) {
	v, _, err := DecodeSized(string(doc), limit)
	return v, err
}

// DecodeSized is Decode that also returns a bound of the value's
// size as JSON (at least its size, and at most a few times it).
func DecodeSized(doc string, limit int64) (any, int64, error) {
	var c unstructuredConverter
	if out, ok := decodeFast(doc, &c); ok {
		return c.finish(out)
	}
	c = unstructuredConverter{}
	var v any
	err := yamlv2.UnmarshalStrict([]byte(doc), &v)
	var te *yamlv2.TypeError
	if err != nil && !errors.As(err, &te) {
		return nil, 0, NewError(err)
	}
	// An alias is *name. A duplicate key (a TypeError, decoded all the
	// same) comes after the size of the aliases, as in ToJSON.
	if strings.IndexByte(doc, '*') >= 0 {
		if aerr := checkAliases(v, limit); aerr != nil {
			return nil, 0, aerr
		}
	}
	if err != nil {
		return nil, 0, NewError(err)
	}
	out, err := c.value(v)
	if err != nil {
		return nil, 0, err
	}
	return c.finish(out)
}

// checkAliases refuses a decoded document holding aliases that expand it
// to more than limit bytes as JSON or nest it deeper than MaxValueDepth.
func checkAliases(v any, limit int64) error {
	m := measure.New("YAML", limit)
	if _, err := m.Measure(v); err != nil {
		if m.Deep {
			return &Error{Msg: fmt.Sprintf("nested more than %d deep (MaxValueDepth)", measure.MaxValueDepth)}
		}
		return &Error{Msg: fmt.Sprintf("aliases expand it to more than %d bytes", limit)}
	}
	return nil
}

// finish returns what was converted, its size bound, or the error of a
// NaN or infinity in it.
func (c *unstructuredConverter) finish(out any) (any, int64, error) {
	if c.nonFinite {
		// JSON has no NaN or infinity: fail as json.Marshal does, on the
		// first one in its order.
		if _, err := json.Marshal(out); err != nil {
			return nil, 0, NewError(err)
		}
	}
	return out, c.bytes, nil
}

// unstructuredConverter turns what go.yaml.in/yaml/v2 decodes into an
// interface{} into the unstructured form (Decode).
type unstructuredConverter struct {
	nonFinite bool  // a NaN or infinity was seen
	bytes     int64 // a bound of the JSON size of what was converted
}

func (c *unstructuredConverter) value(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool:
		c.bytes += 6
		return x, nil
	case string:
		c.bytes += measure.StringBytes(x) + 1
		return validUTF8(x), nil
	case int:
		c.bytes += 25
		return int64(x), nil
	case int64:
		c.bytes += 25
		return x, nil
	case uint64:
		c.bytes += 25
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
		return float64(x), nil
	case float64:
		c.bytes += 25
		return c.float(x), nil
	case []any:
		c.bytes += 3
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = c.value(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case map[any]any:
		return c.mapping(x)
	}
	// go.yaml.in/yaml/v2 decodes nothing else into an interface{}; should
	// it, the JSON round trip is the reference.
	js, err := json.Marshal(v)
	if err != nil {
		return nil, NewError(err)
	}
	var out any
	if err := utiljson.Unmarshal(js, &out); err != nil {
		return nil, NewError(err)
	}
	c.bytes += int64(len(js)) + 1
	return out, nil
}

// float is a float64 after JSON's round trip: encoding/json writes an
// integral float below 1e21 without a fraction or exponent, which the API
// machinery reads back as an int64 when it fits.
func (c *unstructuredConverter) float(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		c.nonFinite = true
		return f
	}
	if f != math.Trunc(f) || math.Abs(f) >= 1e21 {
		return f // written with a fraction or an exponent
	}
	if math.Abs(f) <= 1<<53 { // every digit of the shortest form is exact
		return int64(f)
	}
	// The shortest form pads with zeros: 9.3e18 is 9300000000000000000,
	// an int64, and -2^63 is -9223372036854776000, not one.
	if i, err := strconv.ParseInt(strconv.FormatFloat(f, 'f', -1, 64), 10, 64); err == nil {
		return i
	}
	return f
}

func (c *unstructuredConverter) mapping(m map[any]any) (map[string]any, error) {
	c.bytes += 3
	out := make(map[string]any, len(m))
	for k, e := range m {
		key, err := mapKey(k)
		if err != nil {
			return nil, err
		}
		c.bytes += measure.StringBytes(key) + 1
		if _, dup := out[key]; dup {
			return nil, &Error{Msg: "duplicate key " + quoteKey(key)}
		}
		if out[key], err = c.value(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// yamlFloat spells a float as YAML does: Go's shortest form at bitSize,
// with .inf, -.inf and .nan for the special values.
func yamlFloat(f float64, bitSize int) string {
	s := strconv.FormatFloat(f, 'g', -1, bitSize)
	switch s {
	case "+Inf":
		return ".inf"
	case "-Inf":
		return "-.inf"
	case "NaN":
		return ".nan"
	}
	return s
}

// mapKey writes a key as sigs.k8s.io/yaml does (convertToJSONableObject).
func mapKey(k any) (string, error) {
	switch x := k.(type) {
	case string:
		return validUTF8(x), nil
	case int:
		return strconv.Itoa(x), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case float64:
		return yamlFloat(x, 32), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", &Error{Msg: fmt.Sprintf("unsupported map key of type: %s", reflect.TypeOf(k))}
}

// quoteKey is a key as go.yaml.in/yaml/v2's duplicate key error quotes a
// string key, cut to 64 bytes as NewError cuts it.
func quoteKey(k string) string {
	q := strconv.Quote(k)
	if len(q) > 64 {
		q = q[:64] + "…"
	}
	return q
}

// validUTF8 is s as JSON's round trip leaves it: each byte that is not
// part of valid UTF-8 becomes U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
