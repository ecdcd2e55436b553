package templates

import (
	"bytes"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/stencil-dev/stencil/templates/chart"
	"github.com/stencil-dev/stencil/templates/values"
)

// MergeValues computes a render's .Values: the bundle's values.yaml deep-
// merged with values (maps merge, lists and scalars replace, null deletes a
// key), then defaulted and validated with the bundle's spec.schema (OpenAPI
// v3), then validated with its values.schema.json (JSON Schema, as Helm;
// no defaults). Every violation of either is reported at once, each with
// its field path, sorted (package values). Values the schemas refuse are
// migrated by the bundle's values migrations (spec.valuesMigrations, in
// order, until the schemas accept the result; see ValuesMigrations), and
// refused only when none makes them valid, with the migrations tried.
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
func (b *Bundle) mergeValues(v *apiextensionsv1.JSON) (map[string]any, *chart.Instance, error) {
	mv, err := b.merge(v)
	if err != nil {
		return nil, nil, err
	}
	return chart.DeepCopy(mv.merged).(map[string]any), mv.charts, nil
}

// merge is the merge of values v, remembered: values the schemas refuse
// are migrated by the bundle's values migrations (migrate.go).
func (b *Bundle) merge(v *apiextensionsv1.JSON) (*mergedValues, error) {
	var raw []byte
	if v != nil {
		raw = v.Raw
	}
	if last := b.lastValues.Load(); last != nil && bytes.Equal(last.raw, raw) {
		return last, nil
	}
	m := values.Merger{Defaults: b.defaults, Charts: b.root, OpenAPI: b.schema, JSONSchema: b.jsonSchema}
	merged, charts, err := m.Merge(v)
	var migrated []string
	if err != nil {
		if merged, charts, migrated, err = b.migrate(m, v, err); err != nil {
			return nil, err
		}
	}
	mv := &mergedValues{raw: bytes.Clone(raw), merged: merged, charts: charts, migrated: migrated}
	b.lastValues.Store(mv)
	return mv, nil
}

// mergedValues is what MergeValues gave for the values raw; merged is
// never handed out, only copies of it. migrated names the values
// migrations applied (nil: none).
type mergedValues struct {
	raw      []byte
	merged   map[string]any
	charts   *chart.Instance // read only
	migrated []string
}
