// Package budget owns the execution budget of one render: the bounds
// (Limits), the counters that charge them (Budget), the rewriting of
// parsed templates that makes them charge it (Set, instrument.go) and
// where a render is for another goroutine (Progress). docs/templates.md
// ("Bounds") and docs/performance.md ("Budgets in the parse trees") say
// why and what it costs.
//
// text/template cannot be given a budget, but its parse trees are public
// and executed as they are: a Set's trees are rewritten (InstrumentFiles,
// InstrumentTpl) so that every range body, {{template}}, include, tpl
// and generator call goes through a point, a function named
// PointName(i). The caller binds each point to Budget.Point, or, for
// include, tpl and the generators (which take arguments), to its own
// functions, which run what they execute with Budget.Run.
//
// # Invariants
//
//   - One Budget per render, charged by every template, {{template}},
//     include and tpl it executes: nesting cannot multiply the Limits.
//   - A Budget is used by the render's goroutine only; Progress is the
//     one thing another goroutine reads.
//   - Once a Budget has stopped, every later charge returns the same
//     error, and StopError names the bound and the innermost file and
//     line executing (for tpl's text, the tpl call).
//   - Names starting with _stencil are refused in a bundle's templates
//     and in tpl's text, so a template cannot charge or refund the
//     budget itself.
//   - A Set's tables are appended to only while it is instrumented: a
//     bundle's parsed set never changes once parsed, so its clones may
//     share them (CloneShared); tpl's texts go to a Clone.
//
// # Example
//
//	set := budget.NewSet(t) // t parsed from the files in sources
//	if err := set.InstrumentFiles(sources); err != nil { ... }
//	b := budget.New(ctx, limits.WithDefaults(), progress)
//	f := template.FuncMap{}
//	for i, p := range set.Points() {
//		f[budget.PointName(i)] = func() *struct{} { return b.Point(set, p) }
//	}
//	t.Funcs(f)
//	err := b.Run(w, nil, set, t.Lookup("templates/x.yaml"), data)
package budget
