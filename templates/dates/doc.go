// Package dates owns the template functions of dates and durations:
// sprig's date functions made deterministic (Funcs) and Helm v4's
// duration helpers (DurationFuncs). Package funcs binds them into the
// allow-list; docs/templates.md ("Functions") is the reference.
//
// # Invariants
//
//   - A render is the same on every machine: dates know UTC only ("Local"
//     and "" are UTC; a named zone is refused, never read from the
//     machine's time zone database), and no function reads the clock
//     unless Funcs is given allowNow (a bundle's allowNondeterministic).
//   - The functions return strings of a bounded size, numbers, times or
//     durations: nothing for the render's function budget to charge.
//   - An error is a *fault.RenderError naming the function, never quoting
//     an argument.
//
// # Example
//
//	f := dates.Funcs(false)
//	// {{ date "2006-01-02" 0 }} is "1970-01-01";
//	// {{ date "2006-01-02" "x" }} is refused: sprig would use now.
package dates
