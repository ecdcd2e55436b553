package table

import (
	"time"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/cluster"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/controller"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
)

// Results are what a run measured.
type Results struct {
	// Version is what the controller's binary says of itself; CountedBy
	// how the controller's requests were counted.
	Version   string
	CountedBy string
	// Floor is the bare server-side apply client's.
	Floor Floor
	// Parents is the floor with parents, and ParentsWebhooks the
	// controller's CPU over it: its webhooks'.
	Parents                         Floor
	ParentsWebhooks                 Pass
	Cold, Noop, NoopAfter, Restart  Pass
	MemBefore, MemAfter, MemRestart controller.Memory
	// Latencies are the samples of the status latency.
	Latencies []time.Duration
	// Outputs are the samples of the outputs latency; OutputsPass what
	// the controller spent over them (requests, CPU).
	Outputs     []time.Duration
	OutputsPass Pass
	// Costs are the parent-cost rows.
	Costs []Cost
	// Unselected counts the controller's lists and watches of ConfigMaps
	// and Secrets without a label selector, nil when not counted.
	Unselected *int
	// Rollout is what the rollout benchmark measured (-rollout), which
	// runs instead of the others.
	Rollout *Rollout
	// Versions is what the versions benchmark measured (-versions),
	// which runs instead of the others.
	Versions *Versions
}

// Pass is one measured stretch of the controller's work.
type Pass struct {
	Elapsed  time.Duration
	Requests requests.Counts
	// CPU and WorkersCPU are the CPU time the controller and its render
	// workers used over the stretch (measured for the cold converge).
	CPU, WorkersCPU time.Duration
	// Plane is the CPU time the control plane used over the stretch
	// (measured for the cold converge, on the local cluster).
	Plane cluster.CPU
	// Passes and Applies count the controller's passes by outcome and its
	// applies by result over the stretch (stencil_reconcile_passes_total,
	// stencil_applies_total; measured for the cold converge).
	Passes, Applies map[string]float64
}

// Floor is what the bare server-side apply client did.
type Floor struct {
	Elapsed  time.Duration
	Objects  int
	Requests requests.Counts
	// Plane is the CPU time the control plane used meanwhile.
	Plane cluster.CPU
}

// Cost is what one kind of write cost the control plane.
type Cost struct {
	What  string
	Bytes int
	Plane cluster.CPU
}

// Rollout is what the rollout benchmark measured.
type Rollout struct {
	N, Namespaces int
	Soak          time.Duration
	AllAtOnce     RolloutRun
	Waves         RolloutRun
	Failing       FailingRun
}

// RolloutRun is one rollout of a new revision to every parent.
type RolloutRun struct {
	Elapsed  time.Duration
	Requests requests.Counts
	PerWave  []Wave
}

// Wave is one wave of a rollout in waves.
type Wave struct {
	Number, Parents int
	// Ready is the time from the wave's start until its parents were
	// Ready on the new revision; Elapsed until the next wave started.
	Ready, Elapsed time.Duration
	Requests       requests.Counts
}

// FailingRun is the rollout of a revision whose members never become
// Ready.
type FailingRun struct {
	Elapsed time.Duration
	Phase   v1alpha1.RolloutPhase
	Wave    int32
	Waves   int32
	// Moved counts the parents that ever rendered the failing revision.
	Moved    int
	Requests requests.Counts
	Message  string
	// Afterward counts the parents on the revision before, once the
	// rollout stopped.
	Afterward int
}
