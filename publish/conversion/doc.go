// Package conversion converts the instances of a published kind between
// its versions, as data: the rules a Bundle's spec.api.versions give
// (move, default, set with a CEL expression, delete), and the values
// migrations of a Bundle, which use the same rules. It is pure: no
// client, no cluster; the conversion webhook, the controller, the
// storage migration and the CLI (stencil migrate, render, bundle lint)
// all convert with it, so they agree.
//
// # Responsibilities
//
//   - Rules (program.go): Compile checks a list of rules (exactly one
//     operation each, dot-separated paths, CEL that compiles over self
//     within the cost bounds) and names every problem by its field path
//     (path[i].set.expression); Program.Apply applies them in order to a
//     copy of a document.
//   - Versions (versions.go): Versions, StorageVersion, RenderVersion and
//     Validate read a BundleAPI, the single-version form included.
//   - Objects (converter.go): New builds a Converter for a kind; Convert
//     converts a whole instance through the storage version (the hub);
//     RoundTrip reports what a round trip through a version loses;
//     AnnotatedFields what a conversion keeps only in the annotation.
//   - Samples (samples.go): Samples generates specs from a schema for
//     `stencil bundle lint`'s round trips.
//
// # Invariants
//
//   - The document given is never changed: Apply and Convert return new
//     maps. Convert changes only spec, apiVersion and the
//     conversion.stencil.dev/ annotations; metadata and status are kept.
//   - A set rule's expression sees self, the document before the first
//     rule, whatever the rules before it did; a null result removes the
//     field. A map iterated by an expression yields its keys in sorted
//     order, so a conversion gives the same result every time.
//   - Round trips are lossless: what the target version cannot hold of
//     the source's spec (what its schema prunes, what the rules drop,
//     what the way back would add) is kept in the annotation
//     conversion.stencil.dev/<source version>, restored (and removed)
//     when the object converts back, through a chain of versions too. A
//     field is restored only while the way back still gives what it gave
//     when the annotation was written: an edit made in another version
//     wins. The annotations of an object stay within MaxAnnotationBytes.
//   - Cost is bounded as the API server bounds a CRD's validation rules:
//     an expression whose estimated cost exceeds EstimatedCostLimit does
//     not compile, one evaluation stops at CostLimit, and the
//     expressions of one Convert together stop at TotalCostLimit.
//   - Errors name the rule (field path and index), its operation, the
//     field and the expression, never a value of the document.
package conversion
