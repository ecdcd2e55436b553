package conversion

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// maxSampleDepth bounds how deep Samples descends into a schema.
const maxSampleDepth = 12

// Samples generates n specs from a spec's schema, the same ones every
// time, for round trips (`stencil bundle lint` converts each through
// every version and back): every property is set; enums take each of
// their values in turn, numbers their minimum, maximum and a value
// between, strings a value naming their field within minLength and
// maxLength (and, where one of a few simple candidates does, the
// pattern); sample 0 takes defaults where the schema has them; arrays
// hold one or two items, maps one or two entries, distinct from each
// other (as list-map keys and sets must be). A nil schema, or one of any
// object, gives specs with one field. The samples are a start, not a
// proof: what a pattern or a CEL rule of the schema refuses, the API
// server would refuse too.
func Samples(spec *apiextensionsv1.JSONSchemaProps, n int) []map[string]any {
	out := make([]map[string]any, 0, n)
	for i := 0; i < n; i++ {
		g := sampler{sample: i}
		m, ok := g.value(spec, "spec", 0, 0).(map[string]any)
		if !ok {
			m = map[string]any{}
		}
		out = append(out, m)
	}
	return out
}

// sampler generates one sample.
type sampler struct {
	sample int
}

// value generates a value of s for the field name, the item-th of its
// list (0 outside lists).
func (g sampler) value(s *apiextensionsv1.JSONSchemaProps, name string, item, depth int) any {
	if s == nil {
		return map[string]any{"field": g.str(nil, name, item)}
	}
	if len(s.Enum) > 0 {
		return decoded(s.Enum[(g.sample+item)%len(s.Enum)].Raw)
	}
	if g.sample == 0 && s.Default != nil && item == 0 {
		return decoded(s.Default.Raw)
	}
	if s.XIntOrString {
		if (g.sample+item)%2 == 0 {
			return g.integer(s, item)
		}
		return g.str(s, name, item)
	}
	switch s.Type {
	case "object":
		return g.object(s, name, item, depth)
	case "array":
		return g.array(s, name, depth)
	case "integer":
		return g.integer(s, item)
	case "number":
		v := float64(g.integer(s, item))
		if s.Maximum == nil || v+0.5 < *s.Maximum {
			v += 0.5
		}
		return v
	case "boolean":
		return (g.sample+item)%2 == 0
	}
	return g.str(s, name, item)
}

// object generates every property, and one or two entries of a map.
func (g sampler) object(s *apiextensionsv1.JSONSchemaProps, name string, item, depth int) any {
	out := map[string]any{}
	if depth >= maxSampleDepth {
		return out
	}
	keys := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := s.Properties[k]
		out[k] = g.value(&p, k, item, depth+1)
	}
	if ap := s.AdditionalProperties; ap != nil && (ap.Schema != nil || ap.Allows) && len(s.Properties) == 0 {
		for j := 0; j < 1+g.sample%2; j++ {
			key := fmt.Sprintf("%s-%d-%d", strings.ToLower(name), g.sample, item*2+j)
			out[key] = g.value(ap.Schema, name, item*2+j, depth+1)
		}
	}
	if len(out) == 0 && s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields {
		out["field"] = g.str(nil, name, item)
	}
	return out
}

// array generates one or two items, distinct from each other.
func (g sampler) array(s *apiextensionsv1.JSONSchemaProps, name string, depth int) any {
	out := []any{}
	if s.Items == nil || s.Items.Schema == nil || depth >= maxSampleDepth {
		return out
	}
	n := 1 + g.sample%2
	if s.MinItems != nil && int64(n) < *s.MinItems {
		n = int(*s.MinItems)
	}
	if s.MaxItems != nil && int64(n) > *s.MaxItems {
		n = int(*s.MaxItems)
	}
	for j := 0; j < n; j++ {
		out = append(out, g.value(s.Items.Schema, strings.TrimSuffix(name, "s"), j, depth+1))
	}
	return out
}

// integer is the minimum, the maximum or a value between, in turn.
func (g sampler) integer(s *apiextensionsv1.JSONSchemaProps, item int) int64 {
	lo, hi := int64(1), int64(1000)
	if s != nil && s.Minimum != nil {
		lo = int64(math.Ceil(*s.Minimum))
		if s.ExclusiveMinimum {
			lo++
		}
	}
	if s != nil && s.Maximum != nil {
		hi = int64(math.Floor(*s.Maximum))
		if s.ExclusiveMaximum {
			hi--
		}
	} else if lo > hi {
		hi = lo + 1000
	}
	if hi < lo {
		return lo
	}
	switch (g.sample + item) % 3 {
	case 0:
		return lo + int64(item)%(hi-lo+1)
	case 1:
		return hi - int64(item)%(hi-lo+1)
	}
	return lo + (hi-lo)/2
}

// str is a string naming the field, within the schema's lengths, format
// and (where a candidate matches) pattern.
func (g sampler) str(s *apiextensionsv1.JSONSchemaProps, name string, item int) string {
	v := fmt.Sprintf("%s-%d-%d", strings.ToLower(name), g.sample, item)
	if s == nil {
		return v
	}
	switch s.Format {
	case "date-time":
		return fmt.Sprintf("2026-01-%02dT00:00:00Z", 1+(g.sample+item)%28)
	case "date":
		return fmt.Sprintf("2026-01-%02d", 1+(g.sample+item)%28)
	}
	if s.Pattern != "" {
		if re, err := regexp.Compile(s.Pattern); err == nil && !re.MatchString(v) {
			for _, c := range []string{fmt.Sprintf("a%d%d", g.sample, item), fmt.Sprintf("%d%d", g.sample, item), "a", "A", "0"} {
				if re.MatchString(c) {
					v = c
					break
				}
			}
		}
	}
	if s.MaxLength != nil && int64(len(v)) > *s.MaxLength {
		v = v[int64(len(v))-*s.MaxLength:] // the end tells items apart
	}
	if s.MinLength != nil && int64(len(v)) < *s.MinLength {
		v += strings.Repeat("x", int(*s.MinLength)-len(v))
	}
	return v
}

// decoded is a JSON value as the API server's objects hold it.
func decoded(raw []byte) any {
	var v any
	if err := decodeJSON(raw, &v); err != nil {
		return nil
	}
	return normalize(v)
}
