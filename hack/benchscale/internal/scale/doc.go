// Package scale is the scale benchmark's run (make bench-scale): Run
// measures, in this order, the floor (package floor), the controller
// started once the API server admits Compositions, the floor with
// parents, the cold converge, a no-op pass, the controller's memory, the
// status and outputs latencies (package latency), unrelated objects with
// another no-op pass and memory read again, a restart, and what a
// parent's writes cost the control plane.
//
// The phases of the controller's own live here: the cold converge (N
// Compositions created at once, until every one is seen Ready for its
// generation, then until the controller is idle), a no-op pass (the
// Bundle annotated, which changes no generation but brings every
// Composition a pass), unrelated ConfigMaps and Secrets it must not cache,
// and a restart (until it has reported every Composition Ready again).
// Each phase starts once the control plane is idle and writes what it
// measured into the table.Results it is given as it goes, so a run that
// fails prints what it reached.
package scale
