// Package flags holds the flags several stencil commands share, parsed
// the same way in each:
//
//   - values.go: Values, the values a command takes on its command line,
//     as `helm template` takes them (--values files merged in order, then
//     --set and --set-string assignments in order). A malformed --set is
//     refused when the flag is parsed, quoting the expression (the user's
//     own command line), and a list index is bounded (maxSetIndex).
//   - render.go: Render, the limits of every render a command makes
//     (--render-timeout, --render-memory, --render-isolation): the same
//     flags and defaults in the controller, render, diff and lint, strict
//     isolation unless a command that renders a user's own files leaves
//     the flag unset.
//   - plan.go: Plan, the flags of render and diff, which plan parents as
//     the controller would: -f, --bundle, --offline (render's), the
//     render limits and --controller-namespace (engine.DefaultNamespace
//     unless given), the same help in both.
package flags
