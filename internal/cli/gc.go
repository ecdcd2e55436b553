package cli

import (
	"os"
	"runtime/debug"
)

// controllerGCPercent is the controller process's garbage collection
// target (GOGC): the heap may grow this many percent over what the last
// collection left live before the next one. Go's default of 100 lets the
// controller's peak resident set reach about twice its live heap (the
// cached members, mostly). Measured with `make bench-scale` (1000
// Compositions × 5 children, quiet machine, back to back), the anonymous
// part of its peak was 94 MiB at 50 and 81 MiB at 35, for 17.1 and 16.0
// ms of controller CPU per Composition over the cold converge: no
// measurable cost, since the API server, not the controller, bounds the
// converge (at 200 Compositions, 100 → 50 cost 13% more CPU). The render
// workers are other processes (package internal/sandbox), started with an
// empty environment: each keeps Go's default under its own memory
// ceiling.
const controllerGCPercent = 35

// setControllerGC sets the controller's garbage collection target to
// controllerGCPercent, unless GOGC is set in its environment: an operator
// who set it chose.
func setControllerGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(controllerGCPercent)
	}
}
