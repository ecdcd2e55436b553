package templates

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/stencil-dev/stencil/templates/measure"
	"github.com/stencil-dev/stencil/templates/strictyaml"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// valuesRoot is the root of every values field path in errors.
var valuesRoot = field.NewPath("values")

// valuesSchema is a bundle's values schema: the API server's own structural
// schema defaulting and validation, as for a CRD's openAPIV3Schema.
type valuesSchema struct {
	structural *structuralschema.Structural
	validator  validation.SchemaValidator
}

// schemaCache holds the schemas compiled last (newValuesSchema), by
// their JSON text: a new revision of a bundle usually keeps its schema,
// and compiling one (structural schema, validator) costs more than
// parsing the bundle's templates. A compiled schema is read only, shared
// as the API server shares a CRD's between requests.
var schemaCache struct {
	sync.Mutex
	m map[string]*valuesSchema
}

// schemaCacheSize bounds schemaCache; past it, one entry is dropped.
const schemaCacheSize = 64

func newValuesSchema(raw *apiextensionsv1.JSON) (*valuesSchema, error) {
	if raw == nil || len(raw.Raw) == 0 {
		return nil, nil
	}
	schemaCache.Lock()
	cached := schemaCache.m[string(raw.Raw)]
	schemaCache.Unlock()
	if cached != nil {
		return cached, nil
	}
	vs, err := compileValuesSchema(raw)
	if err != nil {
		return nil, err
	}
	schemaCache.Lock()
	defer schemaCache.Unlock()
	if schemaCache.m == nil {
		schemaCache.m = map[string]*valuesSchema{}
	}
	if len(schemaCache.m) >= schemaCacheSize {
		for k := range schemaCache.m {
			delete(schemaCache.m, k)
			break
		}
	}
	schemaCache.m[string(raw.Raw)] = vs
	return vs, nil
}

func compileValuesSchema(raw *apiextensionsv1.JSON) (*valuesSchema, error) {
	var v1 apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal(raw.Raw, &v1); err != nil {
		return nil, &RenderError{Path: "spec.schema", Msg: "schema: " + err.Error(), Err: err}
	}
	var internal apiextensions.JSONSchemaProps
	if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(&v1, &internal, nil); err != nil {
		return nil, &RenderError{Path: "spec.schema", Msg: "schema: " + err.Error(), Err: err}
	}
	s, err := structuralschema.NewStructural(&internal)
	if err != nil {
		return nil, &RenderError{Path: "spec.schema", Msg: "schema is not structural: " + err.Error(), Err: err}
	}
	if errs := structuralschema.ValidateStructural(field.NewPath("schema"), s); len(errs) > 0 {
		return nil, &RenderError{Path: "spec.schema", Msg: "schema is not structural: " + errs.ToAggregate().Error()}
	}
	validator, _, err := validation.NewSchemaValidator(&internal)
	if err != nil {
		return nil, &RenderError{Path: "spec.schema", Msg: "schema: " + err.Error(), Err: err}
	}
	return &valuesSchema{structural: s, validator: validator}, nil
}

// parseValuesFile parses values.yaml: strictly (a duplicate key is an
// error with its line), with aliases and nesting bounded, straight to the
// unstructured form (strictyaml.Decode: what YAML → JSON → map gave).
func parseValuesFile(s string) (map[string]any, error) {
	out := map[string]any{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	v, err := strictyaml.Decode([]byte(s), MaxFunctionBytes)
	if err != nil {
		var ye *strictyaml.Error
		if !errors.As(err, &ye) {
			return nil, &RenderError{File: ValuesFile, Msg: err.Error()}
		}
		return nil, &RenderError{File: ValuesFile, Line: ye.Line, Msg: ye.Msg}
	}
	switch x := v.(type) {
	case nil:
	case map[string]any:
		out = x
	default:
		return nil, &RenderError{File: ValuesFile, Msg: "values.yaml must hold an object"}
	}
	if err := checkValuesDepth(out); err != nil {
		err.File, err.Path = ValuesFile, ""
		return nil, err
	}
	return out, nil
}

// checkValuesDepth refuses values nested deeper than MaxValueDepth: every
// function walking them would take time and memory in the square of
// their depth (toYaml indents each level), and recursion in the rest.
func checkValuesDepth(v map[string]any) *RenderError {
	if path, ok := strictyaml.CheckDepth(v, "values", 0); !ok {
		return &RenderError{Path: path, Reason: ReasonTooLarge, Msg: fmt.Sprintf("%s: nested more than %d deep (MaxValueDepth)", path, measure.MaxValueDepth)}
	}
	return nil
}

// MergeValues computes a render's .Values: the bundle's values.yaml deep-
// merged with values (maps merge, lists and scalars replace, null deletes a
// key), then defaulted and validated with the bundle's spec.schema (OpenAPI
// v3), then validated with its values.schema.json (JSON Schema, as Helm;
// no defaults). Every violation of either is reported at once, each with
// its field path, sorted.
//
// A bundle remembers the last values it merged without a violation, so
// merging the same values again (a controller renders a Composition with
// the same values on every reconcile) copies the result instead of
// validating again. Each call returns a map of its own.
func MergeValues(b *Bundle, values *apiextensionsv1.JSON) (map[string]any, error) {
	merged, _, err := b.mergeValues(values)
	return merged, err
}

// mergeValues is MergeValues, and the charts of the render (nil for a
// bundle without subcharts), which depend on the values.
func (b *Bundle) mergeValues(values *apiextensionsv1.JSON) (map[string]any, *instance, error) {
	var raw []byte
	if values != nil {
		raw = values.Raw
	}
	if last := b.lastValues.Load(); last != nil && bytes.Equal(last.raw, raw) {
		return deepCopy(last.merged).(map[string]any), last.charts, nil
	}
	merged, charts, err := mergeValues(b, values)
	if err != nil {
		return nil, nil, err
	}
	b.lastValues.Store(&mergedValues{raw: bytes.Clone(raw), merged: deepCopy(merged).(map[string]any), charts: charts})
	return merged, charts, nil
}

// mergedValues is what MergeValues gave for the values raw; merged is
// never handed out, only copies of it.
type mergedValues struct {
	raw    []byte
	merged map[string]any
	charts *instance // read only
}

func mergeValues(b *Bundle, values *apiextensionsv1.JSON) (map[string]any, *instance, error) {
	merged := deepCopy(b.defaults).(map[string]any)
	over := map[string]any{}
	if values != nil && len(values.Raw) > 0 {
		if err := utiljson.Unmarshal(values.Raw, &over); err != nil {
			return nil, nil, &RenderError{Path: "values", Msg: "must be an object: " + strictyaml.JSONSyntax("values", err)}
		}
		if err := checkValuesDepth(over); err != nil {
			return nil, nil, err
		}
		if over == nil { // "null"
			over = map[string]any{}
		}
		merge(merged, over)
	}
	var charts *instance
	if b.root != nil && len(b.root.children) > 0 {
		// Subcharts: Helm's coalescing, globals and dependencies
		// (chart_values.go).
		var err error
		if charts, err = resolveCharts(b.root, b.defaults, over); err != nil {
			return nil, nil, err
		}
		if merged, err = coalesceTree(charts, deepCopy(over).(map[string]any), false); err != nil {
			return nil, nil, err
		}
	}
	dropNulls(merged)
	var msgs []string
	first := ""
	if b.schema != nil {
		defaulting.Default(merged, b.schema.structural)
		for _, e := range validation.ValidateCustomResource(valuesRoot, merged, b.schema.validator) {
			msgs = append(msgs, violation(e))
		}
		// The validator walks maps in random order: sorted, the message
		// is the same on every render.
		slices.Sort(msgs)
		if len(msgs) > 0 {
			first, _, _ = strings.Cut(msgs[0], ": ")
		}
	}
	if b.jsonSchema != nil {
		jsonMsgs, jsonFirst, err := validateJSONSchema(b.jsonSchema, merged)
		if err != nil {
			return nil, nil, err
		}
		if first == "" {
			first = jsonFirst
		}
		msgs = append(msgs, jsonMsgs...)
	}
	subMsgs, subFirst, err := validateSubcharts(charts, merged)
	if err != nil {
		return nil, nil, err
	}
	if first == "" {
		first = subFirst
	}
	msgs = append(msgs, subMsgs...)
	if len(msgs) > 0 {
		return nil, nil, &RenderError{Path: first, Msg: strings.Join(msgs, "; ")}
	}
	return merged, charts, nil
}

// validateSubcharts validates each subchart's values with its
// values.schema.json, as Helm: a violation's path is from the root's
// values (values.sub.key).
func validateSubcharts(in *instance, merged map[string]any) (msgs []string, first string, err error) {
	if in == nil {
		return nil, "", nil
	}
	for _, ch := range in.children {
		if section, ok := lookupPath(merged, strings.Join(ch.path, ".")).(map[string]any); ok && ch.chart.jsonSchema != nil {
			sub, subFirst, err := validateJSONSchema(ch.chart.jsonSchema, section)
			if err != nil {
				return nil, "", err
			}
			prefix := valuesPath2(ch.path)
			for i, m := range sub {
				sub[i] = prefix + strings.TrimPrefix(m, "values")
			}
			if first == "" && subFirst != "" {
				first = prefix + strings.TrimPrefix(subFirst, "values")
			}
			msgs = append(msgs, sub...)
		}
		more, moreFirst, err := validateSubcharts(ch, merged)
		if err != nil {
			return nil, "", err
		}
		if first == "" {
			first = moreFirst
		}
		msgs = append(msgs, more...)
	}
	return msgs, first, nil
}

// violation writes a schema violation from its field path, its type and
// the rule, never its value (field.Error's own message quotes BadValue,
// and values hold secrets). The structural validator's details are the
// rule ("should be greater than or equal to 1", "supported values: ...",
// "should match '^[a-z]+$'"), except that a failed format adds the value
// (`must be of type date-time: "..."`) and a failed format parser its
// error: those parts are cut.
func violation(e *field.Error) string {
	detail := e.Detail
	if i := strings.Index(detail, ": \""); i >= 0 && strings.Contains(detail, " must be of type ") {
		detail = detail[:i]
	}
	if i := strings.Index(detail, ", because: "); i >= 0 {
		detail = detail[:i]
	}
	// "replicas in body should be ..." repeats the path.
	if i := strings.Index(detail, " in body "); i >= 0 {
		detail = detail[i+len(" in body "):]
	}
	msg := e.Field + ": " + e.Type.String()
	if detail != "" {
		msg += ": " + detail
	}
	return msg
}

// merge merges src into dst with Helm's semantics: maps merge key by key,
// anything else replaces, and a null in src deletes the key.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if v == nil {
			delete(dst, k)
			continue
		}
		sm, sok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if sok && dok {
			merge(dm, sm)
			continue
		}
		dst[k] = deepCopy(v)
	}
}

// dropNulls removes null map entries left in defaults (values.yaml's "key:").
func dropNulls(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropNulls(x)
		}
	}
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}
