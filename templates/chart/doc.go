// Package chart owns a bundle as Helm sees a chart: its files with a
// meaning (Chart.yaml, values.yaml, values.schema.json, .helmignore), its
// tree of subcharts (charts/ folders and bounded in-memory .tgz archives,
// Chart.yaml's or requirements.yaml's dependencies, aliases, library
// charts), and the values of a render for that tree as Helm computes
// them (coalescing, globals, tags, conditions, import-values) and
// validates them (each chart's values.schema.json).
//
//   - chart.go: Node, LoadTree, Templates (the enabled charts' files, in Helm's parse order) and
//     HelmNames (.Template.Name to bundle paths); IsTemplate, IsHelper:
//     every file of templates/ is a template, as Helm's, and those whose
//     name starts with "_" are partials.
//   - archive.go: ExpandArchives (MaxArchiveBytes, MaxArchiveFiles).
//   - helmignore.go: IgnoreRules, Helm's .helmignore rules.
//   - files.go: HelmFiles, what Helm's loader puts in .Files.
//   - values.go: ParseValues (values.yaml, strictly), Resolve and
//     Coalesce (the enabled tree and its values), ValidateSubcharts (each
//     chart's values.schema.json, through package schema).
//
// # Invariants
//
//   - Pure: nothing is read but the bundle's files; no archive reaches
//     outside them.
//   - Bounded: subcharts nest at most 16 deep, a tree uses at most
//     MaxCharts charts, archives unpack to at most MaxArchiveBytes in
//     MaxArchiveFiles files.
//   - Every error is a *fault.RenderError naming the bundle file, or the
//     values field path, and quotes no value.
//
// # Example
//
//	sources, err := chart.ExpandArchives(files)
//	root := &chart.Node{Meta: meta, Name: "shop", Defaults: defaults}
//	err = chart.LoadTree(root, sources)
//	enabled, err := chart.Resolve(root, defaults, userValues)
//	values, err := chart.Coalesce(enabled, userValues, false)
package chart
