// Package values owns a render's .Values: the merge of a parent's values
// over a bundle's values.yaml, its subcharts' coalesced as Helm's, then
// defaulted and validated with the bundle's schemas (Merger.Merge), and
// the type templates see (Values, with Helm's methods AsMap, Table and
// PathValue). docs/templates.md ("Values") is the reference.
//
// # Invariants
//
//   - Merge never changes Merger.Defaults: each call returns a map of
//     its own.
//   - Helm's semantics: maps merge key by key, anything else replaces,
//     and a null deletes the key.
//   - Every violation of the schemas is reported at once, each with its
//     field path, sorted, in one *fault.RenderError whose Path is the
//     first's; messages never quote a value.
//
// # Example
//
//	m := values.Merger{Defaults: defaults, OpenAPI: openapi}
//	merged, charts, err := m.Merge(&apiextensionsv1.JSON{Raw: []byte(`{"replicas": 3}`)})
package values
