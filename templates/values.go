package templates

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/stencil-dev/stencil/templates/chart"
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
func (b *Bundle) mergeValues(values *apiextensionsv1.JSON) (map[string]any, *chart.Instance, error) {
	var raw []byte
	if values != nil {
		raw = values.Raw
	}
	if last := b.lastValues.Load(); last != nil && bytes.Equal(last.raw, raw) {
		return chart.DeepCopy(last.merged).(map[string]any), last.charts, nil
	}
	merged, charts, err := mergeValues(b, values)
	if err != nil {
		return nil, nil, err
	}
	b.lastValues.Store(&mergedValues{raw: bytes.Clone(raw), merged: chart.DeepCopy(merged).(map[string]any), charts: charts})
	return merged, charts, nil
}

// mergedValues is what MergeValues gave for the values raw; merged is
// never handed out, only copies of it.
type mergedValues struct {
	raw    []byte
	merged map[string]any
	charts *chart.Instance // read only
}

func mergeValues(b *Bundle, values *apiextensionsv1.JSON) (map[string]any, *chart.Instance, error) {
	merged := chart.DeepCopy(b.defaults).(map[string]any)
	over := map[string]any{}
	if values != nil && len(values.Raw) > 0 {
		if err := utiljson.Unmarshal(values.Raw, &over); err != nil {
			return nil, nil, &RenderError{Path: "values", Msg: "must be an object: " + strictyaml.JSONSyntax("values", err)}
		}
		if err := chart.CheckValuesDepth(over); err != nil {
			return nil, nil, err
		}
		if over == nil { // "null"
			over = map[string]any{}
		}
		merge(merged, over)
	}
	var charts *chart.Instance
	if b.root != nil && len(b.root.Children) > 0 {
		// Subcharts: Helm's coalescing, globals and dependencies
		// (chart_values.go).
		var err error
		if charts, err = chart.Resolve(b.root, b.defaults, over); err != nil {
			return nil, nil, err
		}
		if merged, err = chart.Coalesce(charts, chart.DeepCopy(over).(map[string]any), false); err != nil {
			return nil, nil, err
		}
	}
	chart.DropNulls(merged)
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
		jsonMsgs, jsonFirst, err := chart.ValidateJSONSchema(b.jsonSchema, merged)
		if err != nil {
			return nil, nil, err
		}
		if first == "" {
			first = jsonFirst
		}
		msgs = append(msgs, jsonMsgs...)
	}
	subMsgs, subFirst, err := chart.ValidateSubcharts(charts, merged)
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
		dst[k] = chart.DeepCopy(v)
	}
}
