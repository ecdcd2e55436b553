// Package funcs owns the functions templates may call: sprig's and Helm's,
// through an allow-list (Map), each bound to the function budget of one
// render (Guard). docs/templates.md ("Functions") is the reference.
//
// The guards stay beside the render worker's deadline and memory ceiling,
// for what a process bound cannot give; each file says why it stays:
//
//   - guard_bind.go: the allow-list. env and expandenv are refused;
//     getHostByName answers "" (Helm's default, no DNS query); now and
//     ago only where a bundle opts in
//     (nondeterministic.go; a Helm test hook may call them); lookup and
//     the generators are bound by package templates to what its caller
//     gives (templates/lookup, templates/generators).
//   - guard.go, guard_adapt.go: the budget (MaxFunctionBytes,
//     MaxCostlyCalls), charged by every function that builds a string, a
//     list or a map; sprig's panics and messages scrubbed of values.
//   - guard_strings.go, guard_lists.go, guard_loops.go: functions bounded
//     before they allocate (repeat, indent, printf, seq, ...).
//   - guard_cycles.go: set and merge never make a value contain itself.
//   - guard_yaml.go: fromYaml, toYaml, fromJson, toJson, ... over package
//     strictyaml, measured (package measure) and charged.
//   - guard_toml.go: toToml, mustToToml, fromToml over BurntSushi/toml,
//     as Helm's; TOML nesting past MaxValueDepth is refused before the
//     parser recurses, and what is written stops at the bytes left
//     (also toYamlPretty's, over go.yaml.in/yaml/v3 as Helm's).
//   - the date and duration functions are package dates': dates know
//     UTC only, so a render is the same on every machine, and Helm v4's
//     duration helpers never read the clock.
//
// # Invariants
//
//   - A bound passed is a *fault.RenderError of Reason ReasonTooLarge,
//     the same error at the same call on every run, never a crash.
//   - A function's error never quotes an argument.
//   - One Guard per render; the render's templates run on one goroutine
//     at a time, so a Guard needs no lock.
//
// # Example
//
//	g := funcs.NewGuard(0) // MaxFunctionBytes
//	t := template.New("t").Funcs(funcs.Map(g, false))
//	// {{ repeat 100000000 "x" }} in t is a RenderError, not 100 MB.
package funcs
