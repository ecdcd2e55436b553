// Package templates turns a bundle, values and a parent's identity into
// the exact list of objects stencil applies. It is pure: it never talks to
// a cluster, reads files outside the bundle, the environment or the
// network, so the controller, `stencil render`, `stencil diff` and
// `stencil bundle lint` share it and agree. docs/templates.md is the
// reference: every rule, bound and function with what stencil does with it.
//
// # Map
//
//   - bundle.go, helmignore.go: Load (a folder) and LoadObject (a Bundle's
//     spec.files) give the same Bundle and Revision; links and special
//     files are refused.
//   - chart.go, chart_archive.go, chart_values.go, chart_render.go: Helm
//     dependencies (charts/ folders and bounded in-memory .tgz archives,
//     condition, tags, alias, import-values, global, library charts) and
//     what each subchart's templates see.
//   - values.go, schema_json.go: MergeValues (Helm's merge, spec.schema's
//     defaults and validation, values.schema.json), errors by field path.
//   - render.go, budget.go, instrument.go, funcs.go, tpl.go: RenderContext
//     executes the templates with text/template; parsed trees are rewritten
//     so that ranges, {{template}}, include and tpl charge one budget per
//     render (Limits) and record their file:line in Progress.
//   - guard*.go, testhooks.go: the allow-list of functions (refused ones,
//     nondeterministic ones only where a bundle opts in or in Helm test
//     hooks), functions bounded before they allocate, no cyclic values,
//     strict YAML, scrubbed messages. Each file says why it stays beside
//     the render worker's deadline and memory ceiling.
//   - output.go, strictyaml/: the rendered documents read into
//     objects and toYaml written as yaml/v2 writes them (fast paths that
//     defer to the library when unsure; docs/performance.md has the figures).
//   - kustomize.go: krusty over an in-memory filesystem of the rendered
//     files and the bundle's, no remote, no plugin, no file outside.
//   - kubeapi.go, builtins.go, zz_generated.builtinapis.go: offline
//     .Capabilities and the built-in kinds' scope.
//   - errors.go: RenderError (file, line or field path, Reason).
//
// # Invariants
//
//   - Same inputs, same objects in the same order, on every machine: date
//     functions know UTC only, nondeterministic functions are refused
//     unless the bundle opts in.
//   - Every error is a *RenderError naming the file and line, or the values
//     field path; messages never quote a value.
//   - A render is bounded as a whole (steps, range iterations, template
//     calls, nesting, output bytes, function bytes, objects, object size),
//     and stops at its context's deadline naming the line it was executing.
//   - Rendered output is valid UTF-8, strictly parsed YAML, and no object
//     is rendered twice (both templates are named when one is).
//   - A Bundle is parsed and instrumented once per revision by each process
//     that renders it; a render executes a set bound to its own guard.
package templates
