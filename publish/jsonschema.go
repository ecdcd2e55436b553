package publish

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file converts a Helm-style values.schema.json (JSON Schema, drafts 4
// to 2020-12) into the structural OpenAPI v3 schema a CRD needs, for the
// subset of JSON Schema both can say. A keyword it cannot say (a
// combinator with types inside, a remote $ref, patternProperties,
// if/then/else, dependencies, ...) is an error naming values.schema.json
// and the JSON pointer of the keyword, never a silent loss: the API server
// would otherwise accept what the Bundle's schema refuses, or refuse what
// it accepts.
//
// Semantics kept: an object whose properties are listed and whose
// additionalProperties is not false keeps unknown fields
// (x-kubernetes-preserve-unknown-fields), as JSON Schema allows them; a
// node with no type holds any value; ["T", "null"] is nullable T;
// ["integer", "string"] is x-kubernetes-int-or-string, and so is anyOf or
// oneOf of such bare types; uniqueItems on a
// list of scalars is x-kubernetes-list-type: set. x-kubernetes-* keywords
// pass through. default is carried (the API server applies it at
// admission; Helm treats it as an annotation).

// converter converts one document.
type converter struct {
	doc  any
	errs field.ErrorList
	refs []string // $ref targets being inlined, outermost first
	ids  int      // nested $ids (other documents) around the node converted
}

// convertJSONSchema converts the text of values.schema.json.
func convertJSONSchema(text string) (*apiextensionsv1.JSONSchemaProps, field.ErrorList) {
	var doc any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		return nil, field.ErrorList{field.Invalid(field.NewPath(sourceJSONSchema), nil, "not JSON: "+jsonErrorRule(err))}
	}
	c := &converter{doc: doc}
	out := c.node(doc, "", false)
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	data, err := json.Marshal(out)
	if err == nil {
		var s apiextensionsv1.JSONSchemaProps
		if err = json.Unmarshal(data, &s); err == nil {
			return &s, nil
		}
	}
	return nil, field.ErrorList{field.Invalid(field.NewPath(sourceJSONSchema), nil, "converted to an invalid OpenAPI schema: "+jsonErrorRule(err))}
}

// fail records a problem at a JSON pointer of the document.
func (c *converter) fail(ptr, rule string) {
	c.errs = append(c.errs, field.Forbidden(field.NewPath(sourceJSONSchema+"#"+ptr), rule))
}

// node converts the schema at ptr. valueOnly is set under allOf, anyOf,
// oneOf and not, where a structural schema allows value validations only.
func (c *converter) node(v any, ptr string, valueOnly bool) map[string]any {
	switch s := v.(type) {
	case bool:
		if s {
			return map[string]any{"x-kubernetes-preserve-unknown-fields": true}
		}
		c.fail(ptr, "the schema false (nothing is valid) cannot be said in a CRD schema")
		return nil
	case map[string]any:
		if ref, ok := s["$ref"].(string); ok {
			return c.ref(s, ref, ptr, valueOnly)
		}
		return c.object(s, ptr, valueOnly)
	default:
		c.fail(ptr, "a schema must be an object or a boolean")
		return nil
	}
}

// object converts a schema object, keyword by keyword in sorted order, so
// errors come in a stable order.
func (c *converter) object(s map[string]any, ptr string, valueOnly bool) map[string]any {
	if id, _ := s["$id"].(string); ptr != "" && id != "" && !strings.HasPrefix(id, "#") {
		c.ids++
		defer func() { c.ids-- }()
	}
	out := map[string]any{}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		at := ptr + "/" + escapePointer(k)
		if why, bad := unsupportedKeywords[k]; bad {
			c.fail(at, k+" cannot be expressed in a CRD schema: "+why)
			continue
		}
		if valueOnly && !valueKeywords[k] && !isCombinator(k) && k != "properties" && k != "items" && !annotationKeywords[k] {
			c.fail(at, k+" under allOf, anyOf, oneOf or not cannot be expressed in a structural CRD schema, which allows only value validations there (required, enum, bounds, pattern, format)")
			continue
		}
		c.keyword(out, s, k, at, valueOnly)
	}
	if valueOnly {
		delete(out, "description")
		return out
	}
	c.shape(out, s, ptr)
	return out
}

// keyword converts one keyword of s into out.
func (c *converter) keyword(out, s map[string]any, k, at string, valueOnly bool) {
	v := s[k]
	switch k {
	case "type":
		c.typ(out, v, at)
	case "properties":
		c.properties(out, v, at, valueOnly)
	case "items":
		if _, tuple := v.([]any); tuple {
			c.fail(at, "items as a list (a tuple) cannot be expressed in a CRD schema: a CRD list has one schema for every item")
			return
		}
		out["items"] = c.node(v, at, valueOnly)
	case "additionalProperties":
		c.additionalProperties(out, s, at)
	case "allOf", "anyOf", "oneOf":
		c.combination(out, s, k, at)
	case "not":
		out[k] = c.node(v, at, true)
	case "const":
		out["enum"] = []any{v}
	case "exclusiveMinimum", "exclusiveMaximum":
		c.exclusive(out, s, k, at)
	case "uniqueItems":
		if b, _ := v.(bool); b {
			c.uniqueItems(out, s, at)
		}
	case "minimum", "maximum":
		if _, numeric := s["exclusive"+strings.ToUpper(k[:1])+k[1:]].(float64); !numeric {
			out[k] = v // else exclusive() keeps the stricter of the two
		}
	case "description", "enum", "default", "multipleOf", "pattern", "format",
		"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "required":
		out[k] = v
	case "title":
		if _, ok := s["description"]; !ok && !valueOnly {
			out["description"] = v
		}
	default:
		if strings.HasPrefix(k, "x-kubernetes-") {
			if !kubernetesKeywords[k] {
				c.fail(at, k+" is not a keyword of a CRD schema")
				return
			}
			out[k] = v
		}
		// Other keywords are annotations, or unknown to JSON Schema,
		// which ignores them: so does the CRD.
	}
}

// properties converts the properties keyword v, each one's schema in turn.
func (c *converter) properties(out map[string]any, v any, at string, valueOnly bool) {
	props, ok := v.(map[string]any)
	if !ok {
		c.fail(at, "properties must be an object")
		return
	}
	conv := map[string]any{}
	for name, p := range props {
		conv[name] = c.node(p, at+"/"+escapePointer(name), valueOnly)
	}
	out["properties"] = conv
}

// additionalProperties converts s's additionalProperties: true keeps
// unknown fields, false is the CRD's default, a schema is every value's
// (and cannot stand beside properties).
func (c *converter) additionalProperties(out, s map[string]any, at string) {
	v := s["additionalProperties"]
	if b, ok := v.(bool); ok {
		if b {
			out["x-kubernetes-preserve-unknown-fields"] = true
		}
		return
	}
	if _, ok := s["properties"]; ok {
		c.fail(at, "a CRD schema cannot have both properties and an additionalProperties schema")
		return
	}
	out["additionalProperties"] = c.node(v, at, false)
}

// combination converts allOf, anyOf or oneOf (k) of s: alternatives of
// bare types become a list of types, other lists are converted schema by
// schema.
func (c *converter) combination(out, s map[string]any, k, at string) {
	list, ok := s[k].([]any)
	if !ok {
		c.fail(at, k+" must be a list of schemas")
		return
	}
	if types := typeAlternatives(s, k, list); types != nil {
		c.typ(out, types, at)
		return
	}
	conv := make([]any, len(list))
	for i, sub := range list {
		conv[i] = c.node(sub, at+"/"+strconv.Itoa(i), true)
	}
	out[k] = conv
}

// typeAlternatives reads anyOf or oneOf of bare types, the way Helm
// charts often spell a nullable or int-or-string value
// ({"anyOf": [{"type": "string"}, {"type": "null"}]}), as the list of
// those types, when the node says no type itself; nil otherwise.
func typeAlternatives(s map[string]any, k string, list []any) []any {
	if k == "allOf" || s["type"] != nil || len(list) < 2 {
		return nil
	}
	var types []any
	for _, alt := range list {
		m, ok := alt.(map[string]any)
		if !ok {
			return nil
		}
		t, ok := m["type"].(string)
		if !ok {
			return nil
		}
		for key := range m {
			if key != "type" && !annotationKeywords[key] && key != "description" {
				return nil
			}
		}
		types = append(types, t)
	}
	return types
}

func isCombinator(k string) bool {
	return k == "allOf" || k == "anyOf" || k == "oneOf" || k == "not"
}

// typ converts type: a name, or a list of names of which "null" makes the
// node nullable and integer with string is int-or-string.
func (c *converter) typ(out map[string]any, v any, at string) {
	var names []string
	switch t := v.(type) {
	case string:
		names = []string{t}
	case []any:
		for _, x := range t {
			if n, ok := x.(string); ok {
				names = append(names, n)
			}
		}
	}
	if i := slices.Index(names, "null"); i >= 0 {
		names = slices.Delete(names, i, i+1)
		out["nullable"] = true
	}
	slices.Sort(names)
	names = slices.Compact(names)
	switch {
	case len(names) == 1 && names[0] != "":
		out["type"] = names[0]
	case slices.Equal(names, []string{"integer", "string"}):
		out["x-kubernetes-int-or-string"] = true
	case len(names) == 0:
		c.fail(at, `a type of "null" alone cannot be expressed in a CRD schema`)
	default:
		c.fail(at, fmt.Sprintf("a value of one of the types %s cannot be expressed in a CRD schema (only one type, [T, \"null\"] or [integer, string])", strings.Join(names, ", ")))
	}
}

// shape gives a node with no type the one its keywords or enum imply, and
// a node of no type at all any value, as a structural schema requires;
// objects keep unknown fields unless additionalProperties is false or a
// schema.
func (c *converter) shape(out, s map[string]any, ptr string) {
	if _, ok := out["type"]; !ok && out["x-kubernetes-int-or-string"] == nil {
		switch {
		case s["properties"] != nil || s["additionalProperties"] != nil || s["required"] != nil:
			out["type"] = "object"
		case s["items"] != nil:
			out["type"] = "array"
		case enumType(out["enum"]) != "":
			out["type"] = enumType(out["enum"])
		default:
			out["x-kubernetes-preserve-unknown-fields"] = true
			return
		}
	}
	if out["type"] == "object" && out["additionalProperties"] == nil {
		if ap, ok := s["additionalProperties"].(bool); !ok || ap {
			out["x-kubernetes-preserve-unknown-fields"] = true
		}
	}
}

// enumType is the JSON type every value of an enum has, "" if they differ.
func enumType(v any) string {
	list, _ := v.([]any)
	t := ""
	for _, x := range list {
		var xt string
		switch n := x.(type) {
		case string:
			xt = "string"
		case bool:
			xt = "boolean"
		case float64:
			xt = "number"
			if n == float64(int64(n)) {
				xt = "integer"
			}
		default:
			return ""
		}
		if t == "integer" && xt == "number" || t == "number" && xt == "integer" {
			xt = "number"
		} else if t != "" && t != xt {
			return ""
		}
		t = xt
	}
	return t
}

// exclusive converts exclusiveMinimum/exclusiveMaximum: a boolean (draft
// 4, beside minimum/maximum) as is; a number (draft 6 on) as the bound,
// exclusive, unless minimum/maximum is stricter.
func (c *converter) exclusive(out, s map[string]any, k, at string) {
	bound := "minimum"
	if k == "exclusiveMaximum" {
		bound = "maximum"
	}
	switch v := s[k].(type) {
	case bool:
		out[k] = v
	case float64:
		if b, ok := s[bound].(float64); ok && (bound == "minimum" && b > v || bound == "maximum" && b < v) {
			out[bound] = b // the inclusive bound is stricter
			return
		}
		out[bound] = v
		out[k] = true
	default:
		c.fail(at, k+" must be a boolean or a number")
	}
}

// uniqueItems on a list of scalars is x-kubernetes-list-type: set; the
// API server refuses uniqueItems itself (its check is quadratic).
func (c *converter) uniqueItems(out, s map[string]any, at string) {
	items, _ := s["items"].(map[string]any)
	switch t, _ := items["type"].(string); t {
	case "string", "integer", "number", "boolean":
		if _, set := s["x-kubernetes-list-type"]; !set {
			out["x-kubernetes-list-type"] = "set"
		}
	default:
		c.fail(at, "uniqueItems is a CRD list of type set, which needs items of a scalar type (string, integer, number or boolean)")
	}
}
