package controller

import (
	"os"
	"runtime/debug"
)

// controllerGCPercent is the controller process's garbage collection
// target (GOGC): the heap may grow this many percent over what the last
// collection left live before the next one. Go's default of 100 lets the
// controller's peak resident set reach about twice its live heap (the
// cached members, mostly). Measured with `make bench-scale` (1000
// Compositions × 5 children, quiet machine, back to back), the
// controller's peak was 160 MiB at 50 (94 MiB of it anonymous), 146–150
// at 35 (81–84) and 137 at 25 (76), for 17.1, 16.0–16.7 and 20.3 ms of
// controller CPU per Composition over the cold converge (the last in a
// run 15% slower throughout), which took as long: the API server, not
// the controller, bounds it. The render workers are other processes
// (package internal/sandbox), started with an empty environment: each
// keeps Go's default under its own memory ceiling.
const controllerGCPercent = 25

// setControllerGC sets the controller's garbage collection target to
// controllerGCPercent, unless GOGC is set in its environment: an operator
// who set it chose.
func setControllerGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(controllerGCPercent)
	}
}
