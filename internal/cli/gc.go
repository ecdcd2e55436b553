package cli

import (
	"os"
	"runtime/debug"
)

// controllerGCPercent is the controller process's garbage collection
// target (GOGC): the heap may grow this many percent over what the last
// collection left live before the next one. Go's default of 100 lets the
// controller's peak resident set reach about twice its live heap (the
// cached members, mostly); at 50, measured with `make bench-scale` (200
// Compositions × 5 children, one run each, back to back), the anonymous
// part of its peak fell by a third (56 to 37 MiB) for 13% more controller
// CPU over the cold converge (3.5 to 3.95 s), which the API server, not
// the controller, bounds. The render workers are other
// processes (package internal/sandbox): each keeps Go's default under its
// own memory ceiling.
const controllerGCPercent = 50

// setControllerGC sets the controller's garbage collection target to
// controllerGCPercent, unless GOGC is set in its environment: an operator
// who set it chose.
func setControllerGC() {
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(controllerGCPercent)
	}
}
