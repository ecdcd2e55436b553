package values

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/fault"
	"github.com/stencil-dev/stencil/templates/schema"
	"github.com/stencil-dev/stencil/templates/strictyaml"
)

// Merger is what a bundle's values are merged over and checked with: its
// values.yaml, its chart tree and its two schemas.
type Merger struct {
	// Defaults are the bundle's values.yaml, never changed.
	Defaults map[string]any
	// Charts is the bundle's chart tree: the subcharts' values are
	// coalesced when it has any (nil: none).
	Charts *chart.Node
	// OpenAPI is spec.schema, which defaults and validates (nil: none).
	OpenAPI *schema.OpenAPI
	// JSONSchema is values.schema.json, which validates (nil: none).
	JSONSchema *jsonschema.Schema
}

// Merge computes a render's .Values: m.Defaults deep-merged with values
// (maps merge, lists and scalars replace, null deletes a key), the
// subcharts' values coalesced as Helm's (package chart), then defaulted
// and validated with m.OpenAPI, then validated with m.JSONSchema (as
// Helm; no defaults) and each subchart's values.schema.json. Every
// violation is reported at once, each with its field path, sorted, in one
// RenderError whose Path is the first's. It returns the charts of the
// render too (nil for a bundle without subcharts), which depend on the
// values.
func (m Merger) Merge(values *apiextensionsv1.JSON) (map[string]any, *chart.Instance, error) {

	merged := chart.DeepCopy(m.Defaults).(map[string]any)
	over := map[string]any{}
	if values != nil && len(values.Raw) > 0 {
		if err := utiljson.Unmarshal(values.Raw, &over); err != nil {
			return nil, nil, &fault.RenderError{Path: "values", Msg: "must be an object: " + strictyaml.JSONSyntax("values", err)}
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
	if m.Charts != nil && len(m.Charts.Children) > 0 {
		// Subcharts: Helm's coalescing, globals and dependencies
		// (package chart's values.go).
		var err error
		if charts, err = chart.Resolve(m.Charts, m.Defaults, over); err != nil {
			return nil, nil, err
		}
		if merged, err = chart.Coalesce(charts, chart.DeepCopy(over).(map[string]any), false); err != nil {
			return nil, nil, err
		}
	}
	chart.DropNulls(merged)
	var msgs []string
	first := ""
	if m.OpenAPI != nil {
		msgs = m.OpenAPI.DefaultAndValidate(merged)
		// The validator walks maps in random order: sorted, the message
		// is the same on every render.
		slices.Sort(msgs)
		if len(msgs) > 0 {
			first, _, _ = strings.Cut(msgs[0], ": ")
		}
	}
	if m.JSONSchema != nil {
		jsonMsgs, jsonFirst, err := schema.ValidateJSON(m.JSONSchema, merged)
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
		return nil, nil, &fault.RenderError{Path: first, Msg: strings.Join(msgs, "; ")}
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
