package templates

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/schema"
	"github.com/stencil-dev/stencil/templates/strictyaml"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

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
		msgs = b.schema.DefaultAndValidate(merged)
		// The validator walks maps in random order: sorted, the message
		// is the same on every render.
		slices.Sort(msgs)
		if len(msgs) > 0 {
			first, _, _ = strings.Cut(msgs[0], ": ")
		}
	}
	if b.jsonSchema != nil {
		jsonMsgs, jsonFirst, err := schema.ValidateJSON(b.jsonSchema, merged)
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

// Values is the type of .Values, as Helm's (helm.sh/helm/v4
// pkg/chart/common Values): the chart's values, with the methods charts
// call on them. A method wins over a key of the same name, as in Helm;
// only the top of .Values has them (its maps are plain maps, and
// `set $ "Values" ...` puts a plain map there). Functions that take a map
// take it as one.
type Values map[string]any

// AsMap is the values as a plain map (never nil), as charts use it where
// a function asserts one: `dig "a" "b" "" .Values.AsMap`.
func (v Values) AsMap() map[string]any {
	if len(v) == 0 {
		return map[string]any{}
	}
	return v
}

// Table is the map at a dotted path ("a.b"), as Values; an error when a
// key on the path is missing or not a map.
func (v Values) Table(name string) (Values, error) {
	table := v
	for _, k := range strings.Split(name, ".") {
		m, ok := table[k].(map[string]any)
		if !ok {
			if vm, isValues := table[k].(Values); isValues {
				m, ok = vm, true
			}
		}
		if !ok {
			return Values{}, fmt.Errorf("%q is not a table", k)
		}
		table = m
	}
	return table, nil
}

// PathValue is the value at a dotted path ("a.b.c"), which must not be a
// map; an error when there is none.
func (v Values) PathValue(path string) (any, error) {
	if path == "" {
		return nil, errors.New("YAML path cannot be empty")
	}
	keys := strings.Split(path, ".")
	key, table := keys[len(keys)-1], v
	if len(keys) > 1 {
		t, err := v.Table(strings.Join(keys[:len(keys)-1], "."))
		if err != nil {
			return nil, fmt.Errorf("%q is not a value", key)
		}
		table = t
	}
	if val, ok := table[key]; ok && !isTable(val) {
		return val, nil
	}
	return nil, fmt.Errorf("%q is not a value", key)
}

func isTable(v any) bool {
	switch v.(type) {
	case map[string]any, Values:
		return true
	}
	return false
}
