// Package gotmpl is Go's text/template (from Go 1.26.8, with its parse
// subpackage and internal/fmtsort) with an execution budget. The template
// language, the API and the error messages are text/template's: read its
// documentation for them. The files keep Go's BSD license (LICENSE).
//
// # Why a fork
//
// stencil executes templates written by tenants over values written by
// tenants. A text/template execution cannot be stopped from outside: there
// is no context, and a goroutine abandoned after a timer keeps its CPU and
// memory until it ends, which a `range` over three billion never does. The
// bounds must hold for a whole render, which runs many templates and, by
// way of Helm's include and tpl, nested executions started from functions,
// so a per-call bound would multiply with each level of nesting.
//
// # What changed
//
//   - budget.go (new): Budget (NewBudget, Where, Err, Executing), Limits,
//     BudgetError, Kind, Location.
//   - exec.go: the executor charges its state's Budget: one step per node
//     walked, one step and one range iteration per iteration of every
//     range, one template call and one level of depth per execution and
//     per {{template}}; it counts the bytes it writes; every 256 steps it
//     stops if the budget's context is done and records Where. New
//     ExecuteBudget runs a template charging a given Budget; an error of a
//     nested execution that is a *BudgetError stops the calling one as is
//     (not wrapped in "error calling f"), and errRecover returns it.
//     Execute and ExecuteTemplate use a budget with no bounds.
//   - template.go: Clone shares the function maps with the original and
//     Funcs copies them before changing them (copy on write): Helm's tpl
//     clones the set on every call, and copying some 200 sprig functions
//     twice made a tpl call cost about 80µs.
//   - parse/parse.go: new Tree.Location, a node's file and line.
//   - The package is named gotmpl; the _test.go files, examples and
//     testdata are dropped (stencil tests its changes in templates/), and
//     Go's doc.go (the language manual) is replaced by this file.
//
// The per-node cost is an increment and a compare (state.step); the rest
// runs at the periodic check.
package gotmpl
