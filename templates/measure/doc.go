// Package measure owns the measure of a template value: a bound of its
// size printed by fmt or serialized as JSON or YAML, its items and how
// deeply it nests (Shape), found by one walk that remembers each shared
// map and list, and the saturating size arithmetic the bounds of a render
// are computed with (AddSat, MulSat).
//
// It stays beside the worker's memory ceiling: it refuses values that
// print a memory address (different on every render), and stops at the
// line of the call a value that prints exponentially larger than it is or
// nests deep enough to overflow the stack (a fatal error, not a
// RenderError).
//
// Values in templates are maps and lists that functions build, share and,
// with set and merge, modify. Two things could make a walk over one of
// them (fmt printing it, toYaml, deepCopy, reflect.DeepEqual, ...) run
// away:
//
//   - A cycle: `$_ := set $d "self" $d`. Every walker would recurse until
//     the stack overflows, a fatal error no recover catches. fmt and the
//     template executor's own printing are walkers we do not own, so the
//     walkers cannot all be made cycle-safe: cycles are prevented by
//     construction instead. Only set and merge (and their must and
//     Overwrite forms) insert into an existing map (every list and dict
//     function builds a new value, and sprig never appends in place), and
//     each refuses an insertion that would close a cycle (guard_cycles.go in package funcs).
//   - Sharing: `$l = list $l $l` twenty times is a small value in memory
//     that prints as 2^20 copies, and a value nested thousands deep prints
//     with an indentation that grows with the square of its depth. Sharing
//     is legitimate (dict "ctx" $ passes the whole data around), so
//     instead every function of ours that walks a value measures it first
//     (measure): a walk remembering each shared map and list, so it takes
//     time in the size of the value in memory, that stops past
//     MaxValueDepth or past the bytes left of the render's budget.
//
// # Invariants
//
//   - A measure takes time in the size of the value in memory, never in
//     its printed size, and stops past MaxValueDepth or the limit with a
//     *fault.RenderError of Reason ReasonTooLarge naming the function.
//   - Sizes never wrap around: AddSat and MulSat saturate at MaxInt64.
//
// # Example
//
//	m := measure.New("toYaml", bytesLeft)
//	s, err := m.Measure(v) // err past MaxValueDepth or bytesLeft
//	if err == nil && !m.Addr {
//		charge(s.Bytes)
//	}
package measure
