// Package templates turns a bundle, values and a Composition's identity into
// the exact list of objects stencil applies. It is pure: it never talks to
// a cluster, reads files outside the bundle, the environment or the network,
// so the controller, `stencil render`, `stencil diff` and `stencil bundle
// lint` share it and agree.
//
// # Bundles
//
// A bundle is a folder (Load) or a Bundle object's spec.files (LoadObject);
// both give the same Bundle and the same Revision, a hash of the files, the
// schema and the options. Layout, as a Helm chart's:
//
//	values.yaml               default values
//	values.schema.json|yaml   OpenAPI v3 schema of the values (spec.schema)
//	stencil.yaml              permissions and allowNondeterministic (spec.*)
//	Chart.yaml                optional, read into .Chart
//	templates/**/*.yaml       rendered and emitted, in path order
//	templates/**/_*.tpl       helpers: parsed and shared, never emitted
//	kustomization.yaml        optional: kustomize runs over the rendered files
//
// # Values
//
// MergeValues deep-merges the Composition's values over values.yaml with
// Helm's rules (maps merge, lists and scalars replace, null deletes a key),
// applies the schema's defaults and validates with the API server's own
// structural schema code, reporting every violation with its field path.
//
// # Templates
//
// Templates are text/template with sprig's text functions, except env,
// expandenv and getHostByName (refused), and except the functions whose
// result changes on every render (now, rand*, uuidv4, gen*, bcrypt,
// htpasswd, ...), refused unless the bundle sets allowNondeterministic.
// Helm's include, tpl, required, fail, toYaml, fromYaml, fromYamlArray,
// toJson, fromJson and fromJsonArray are there; lookup is refused. Data:
// .Values, .Composition (Name, Namespace, UID, Labels, Annotations),
// .Bundle (Name, Revision), and Helm's .Release, .Chart, .Capabilities,
// .Template and .Files (the bundle's own files outside templates/).
//
// # Output and errors
//
// Each template's output is split into YAML documents; empty ones are
// dropped; each must have apiVersion, kind and metadata.name; duplicates are
// errors. Every error is a *RenderError naming the file and line (or the
// values field path).
//
// # Bounds
//
// MaxObjects objects, MaxOutputBytes bytes of output, MaxLoop items for
// until, untilStep, seq and repeat, MaxIncludeDepth nested include and tpl.
// Exceeding one is a RenderError.
//
// # Speed
//
// A Bundle is parsed once (the controller keeps it per Bundle generation);
// a render clones the parsed set and executes it. On the 2-core machines of
// this project (go test -bench . -benchmem ./templates):
//
//	BenchmarkRender            ~0.75 ms/op   ~290 KB/op    ~3,600 allocs/op
//	BenchmarkRenderKustomize   ~4.4 ms/op    ~2.2 MB/op   ~21,600 allocs/op
//
// for testdata/webapp: a Deployment, Service, ConfigMap (with a checksum
// annotation), HPA and Ingress built with helpers, with and without a
// kustomization adding labels and patches.
package templates
