// Package manifest owns the reading of a render's output into objects:
// each template's output split into YAML documents as Helm splits them
// (Split), parsed strictly with package strictyaml and Lists expanded,
// as kubectl expands them (Parse), and the objects of the whole render
// checked together (Check). docs/templates.md ("Output and errors") is
// the reference.
//
// # Invariants
//
//   - The output is valid UTF-8, or a RenderError names the line and
//     column of the first invalid byte (CheckUTF8).
//   - A document is strictly parsed YAML: a duplicate key, an alias
//     bomb or a value past the bounds of package measure is an error
//     with the line of the output, never a crash.
//   - Every object has apiVersion, kind and metadata.name, is at most
//     MaxObjectBytes as JSON, and a render has at most MaxObjects.
//   - No object is rendered twice once placed in the parent's namespace:
//     built-in kinds' scope is package kubeapi's, the cluster's other
//     cluster-scoped kinds come from the caller, and a CRD of the render
//     declares its own; both places are named.
//
// # Example
//
//	objs, lines, err := manifest.Parse("templates/cm.yaml", out)
//	// one object per document (a List's items each), lines[i] the
//	// line of out where objs[i]'s document starts.
package manifest
