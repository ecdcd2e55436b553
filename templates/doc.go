// Package templates turns a bundle, values and a parent's identity into
// the exact list of objects stencil applies. It is pure: it never talks to
// a cluster, reads files outside the bundle, the environment or the
// network, so the controller, `stencil render`, `stencil diff` and
// `stencil bundle lint` share it and agree. docs/templates.md is the
// reference: every rule, bound and function with what stencil does with it.
//
// # Map
//
// The package is the engine's front door: the API above, and the render
// itself. Each subpackage owns one noun and imports only the ones listed
// below it:
//
//	templates        Load, LoadObject, MergeValues, Render; the render's
//	                 execution and its output
//	├── values       .Values: the merge over values.yaml, defaulted and
//	│                validated by the schemas
//	├── chart        Helm's chart model: Chart.yaml, subcharts, .tgz
//	│                archives, .helmignore, values.yaml, dependencies'
//	│                values
//	├── schema       the values' schemas: spec.schema (OpenAPI) and
//	│                values.schema.json (JSON Schema); schema/infer
//	│                infers one from values.yaml and the templates
//	│                (it imports templates, for Parse)
//	├── kustomize    kustomization.yaml through krusty, confined
//	├── funcs        the allow-list of sprig and Helm functions and their
//	│                guards (function budget, determinism, no cycles)
//	├── dates        the date and duration functions, in UTC, never
//	│                reading the clock unless a bundle allows it
//	├── manifest     the output read into objects: documents split as
//	│                Helm's, Lists expanded, the objects checked together
//	├── budget       the render's execution budget (Limits, Progress) and
//	│                the parse trees rewritten to charge it
//	├── observed     the function observed and stencil.dev/wait-for,
//	│                from Input.Observed; Observations
//	├── lookup       Helm's lookup, answered from Input.Lookups
//	├── generators   the generators' memo: the same call, the same value
//	├── notes        NOTES.txt: which files are notes, the render's notes,
//	│                their bounded form for a status
//	├── strictyaml   strict YAML and JSON reading, toYaml's writing
//	├── measure      the measure of a value; saturating size arithmetic
//	├── kubeapi      the built-in API list (generated) and kinds' scope
//	└── fault        RenderError and the stop reasons
//
// In this folder:
//
//   - bundle.go: Load (a folder) and LoadObject (a Bundle's spec.files)
//     give the same Bundle and Revision; links and special files are
//     refused. files.go: .Files. capabilities.go: .Capabilities.
//   - values.go: MergeValues (package values: Helm's merge, then package
//     chart's subchart values, then package schema's defaults and
//     validation, errors by field path), the last values kept.
//     migrate.go: values the schemas refuse are migrated by the
//     Bundle's spec.valuesMigrations (package publish/conversion's
//     rules, compiled at load), in order until the schemas accept them;
//     ValuesMigrations names those applied, CheckValuesMigrations lints
//     them over values.yaml.
//   - render.go, state.go, units.go, tpl.go: RenderContext executes the
//     templates, every file of templates/ but the partials (each
//     subchart's once per use; a NOTES.txt too, whose text is no object
//     but the render's notes, Input.Notes) with text/template and
//     package funcs' functions; include and tpl run in the render's state,
//     charging its budget (package budget: the parsed trees are rewritten
//     so that ranges, {{template}}, include and tpl charge one budget per
//     render, Limits, and record their file:line in Progress).
//   - testhooks.go: Helm test hooks may call nondeterministic functions;
//     their output is dropped.
//   - parsed.go: Parse, every chart's templates parsed as a render
//     parses them, not instrumented, for tools that read them.
//   - output.go, kustomize.go: the rendered documents read into objects
//     and checked as a whole (package manifest: MaxObjects,
//     MaxObjectBytes, no object twice).
//   - bounds.go, errors.go: the bounds and RenderError, re-exported from
//     the subpackages that own them.
//
// # Invariants
//
//   - The only state of a cluster a render sees is Input.Observed and
//     Input.Lookups, which its caller fills (the controller: only members
//     of the parent's own set that stencil applied; lookups the parent's
//     ServiceAccount may make); what it read of them, and held back, is
//     reported in Input.Observations.
//   - Same inputs, same objects in the same order, on every machine: date
//     functions know UTC only, now and ago are refused unless the bundle
//     opts in, and a generator answers the value Input.Generated keeps
//     for its call (a new one, reported in Input.Observations, only for a
//     call that has none).
//   - Every error is a *RenderError naming the file and line, or the values
//     field path; messages never quote a value.
//   - A parent's values are never changed: a values migration works on
//     a copy, and only the render sees what it made.
//   - A render is bounded as a whole (steps, range iterations, template
//     calls, nesting, output bytes, function bytes, objects, object size),
//     and stops at its context's deadline naming the line it was executing.
//   - Rendered output is valid UTF-8, strictly parsed YAML, and no object
//     is rendered twice (both templates are named, for built-in kinds,
//     the cluster's cluster-scoped kinds in .Capabilities and those a CRD
//     of the render declares).
//   - A Bundle is parsed and instrumented once per revision by each process
//     that renders it (once per set of enabled subcharts: a disabled
//     subchart's files are never parsed, as in Helm); a render executes a
//     set bound to its own guard.
package templates
