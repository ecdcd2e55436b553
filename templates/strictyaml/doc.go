// Package strictyaml owns how the engine reads and writes YAML and JSON:
// the templates' output, values.yaml, and what fromYaml, fromJson and
// toYaml handle.
//
//   - Decode reads one document straight to the unstructured form
//     (sigs.k8s.io/yaml's strict YAMLToJSON then the API machinery's JSON
//     decoding, without the JSON between them); ToJSON gives that JSON.
//     decode_fast.go reads the YAML templates usually render without
//     yaml/v2's general parser and declines whatever it is not sure of.
//   - Marshal writes toYaml's YAML as sigs.k8s.io/yaml does, by a direct
//     writer for the values templates hold (encode.go).
//   - Error is a YAML error reduced to its line and a message that quotes
//     no value.
//
// It stays beside the render worker's deadline and memory ceiling:
// strictness and scrubbed messages are no process bound's, and an alias
// bomb is an error at its line rather than a kill. The fast paths pay for
// themselves (docs/performance.md) and defer to the libraries when unsure.
//
// # Invariants
//
//   - Strict: a duplicate key is an error with its line, as kubectl.
//   - Bounded: aliases are measured expanded and refused past the limit
//     given; nesting past MaxValueDepth is refused.
//   - The fast reader and writer give exactly what yaml/v2 and
//     sigs.k8s.io/yaml give, or decline (differential tests in package
//     templates hold them to it on every YAML file of the repository and
//     everything its bundles render).
//
// # Example
//
//	v, err := strictyaml.Decode([]byte("replicas: 3\n"), 1<<20)
//	// v is map[string]any{"replicas": int64(3)}
//	out, _ := strictyaml.Marshal(v) // "replicas: 3"
package strictyaml
