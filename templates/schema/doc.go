// Package schema owns the schemas of a bundle's values: spec.schema, an
// OpenAPI v3 structural schema that defaults and validates them as the
// API server does a custom resource's (OpenAPI), and values.schema.json,
// a JSON Schema that validates them as Helm does, never defaulting
// (NewJSON, ValidateJSON).
//
// # Invariants
//
//   - Offline: a JSON Schema's $ref reaches only inside the schema, never
//     a file or the network.
//   - A violation is reported by its values field path and the rule,
//     never quoting the value (values hold secrets); every violation at
//     once, in a stable order.
//   - A compiled schema is read only and shared: NewOpenAPI keeps the
//     last 64 by their text.
//
// # Example
//
//	s, err := schema.NewOpenAPI(bundle.Spec.Schema)
//	msgs := s.DefaultAndValidate(values) // ["values.replicas: Invalid value: ..."]
//	js, err := schema.NewJSON(files[schema.JSONFile])
//	msgs, first, err := schema.ValidateJSON(js, values)
package schema
