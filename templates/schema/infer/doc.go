// Package infer infers a bundle's values schema from what it says of its
// values: its values.yaml files and every .Values path its templates
// read. `stencil bundle schema` writes the schema (Bundle, Result.JSON)
// for the author to edit; `stencil bundle lint` warns of the paths read
// that neither values.yaml nor the bundle's schema declares
// (Undeclared). docs/bundles.md ("Inferring a schema") is the guide.
//
// # What it infers
//
// The schema is JSON Schema draft-07, as Helm's values.schema.json, in
// the subset package publish converts to a structural CRD schema, so a
// Bundle publishing a kind can use it as it is:
//
//   - From values.yaml (the root's, then each subchart's under its
//     alias; a subchart's global is the root's, a $ref to it): a type
//     per value (integer and number are number, integer and string
//     int-or-string, other mixes no type), scalars' and lists' defaults
//     (none inside a list's items: an item is an example), nested
//     objects, and one items schema of a list, merged from its items.
//   - From the templates, walked as text/template would execute them
//     (templates.Bundle.Parse: every chart, helpers and subcharts as a
//     render reads them; every branch taken, every range body once):
//     field chains (.Values.a.b, $v.a, (pipeline).a), with (dot
//     rebinds), range (dot and the last variable are an element: a
//     list's items, or any entry of a map), include and template into
//     the define with the value given as dot ($ too), once per distinct
//     value, their names folded when known before the render (printf
//     "%s.labels" .Chart.Name, print $.Template.BasePath "/x.yaml"),
//     variables and assignments (a variable assigned in a branch may
//     hold either value), dict, list, pick, set, merge, index and get
//     with known keys, dig, hasKey, pluck, default, coalesce, ternary,
//     required, .Values.AsMap, Table and PathValue, and the text of a
//     tpl when values.yaml gives it (loki's tpl .Values.loki.config .).
//     Each path read is a property; a literal default of a path no
//     values.yaml sets (.Values.port | default 8080) is its default.
//
// # Closed and open
//
// An object values.yaml gives keys of its own is closed
// (additionalProperties: false, which a CRD keeps by pruning, or
// refuses under field validation Strict). Everything else is open
// (additionalProperties: true; x-kubernetes-preserve-unknown-fields in
// the CRD):
//
//   - what values.yaml sets to {} or null, and objects only templates
//     read (their other keys are unknown, not absent);
//   - a value written out whole (toYaml, toJson, toPrettyJson, toToml,
//     tpl), and all below it: only what templates read there is listed,
//     and a scalar so written, or whose type a template tests (kindIs,
//     typeOf) or gives to tpl, may be of any type;
//   - an object ranged over, or indexed by a key computed at render
//     time (index m $k, keys, values): it keeps the keys values.yaml
//     sets and takes others, or, when values.yaml sets none, is a map
//     of what a range over it reads;
//   - a value a define gets again, deeper, while it walks it (traefik's
//     yaml2CommandLineArgsRec): a tree of the user's;
//   - a chart's global, Helm's values shared with every chart;
//   - everything, when the walk stopped at a bound (Result.Incomplete:
//     20 million nodes walked, calls nested 64 deep).
//
// # Limits
//
// A value read only by a text the walker does not see (a tpl of a value
// the user gives, such as a CI file's url: http://{{ .Values.myDomain }})
// is not in the schema, nor is one read only by an include whose name is
// computed at render time (Result.Notes names it), nor the keys
// import-values copies. A key computed at render time on a chart's
// .Values itself leaves it closed: helpers index it by paths the chart
// names (Bitnami's common.utils.getValueFromKey), which its values.yaml
// sets. Nothing is required (a required or a fail runs only on some
// paths), and no description, enum, bound or format is inferred: those
// are the author's to add.
//
// # Example
//
//	b, _ := templates.Load(os.DirFS("web"), templates.LoadOptions{Name: "web"})
//	r, _ := infer.Bundle(b)
//	js, _ := r.JSON() // values.schema.json
//	warnings, _ := infer.Undeclared(b)
//	// templates/deploy.yaml:12: .Values.replicaCount is read but neither
//	// values.yaml nor values.schema.json declares it (did you mean .Values.replicas?)
package infer
