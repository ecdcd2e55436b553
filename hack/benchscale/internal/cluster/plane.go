package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/procfs"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/progress"
)

// planeProcesses are the processes of the local cluster whose CPU time
// the harness reads: where the requests of the floor and of the
// controller are served and stored, and kube-controller-manager, whose
// controllers react to what they write (on the same cores).
var planeProcesses = []string{"kube-apiserver", "etcd", "kube-controller-manager"}

// ControlPlane reads the CPU time of the local cluster's processes, found
// by the pid files hack/local-cluster.sh writes. A nil ControlPlane (an
// existing cluster) knows none.
type ControlPlane struct {
	// PIDDir holds NAME.pid for each process.
	PIDDir string
}

// CPU is the CPU time each of the control plane's processes used, by name.
type CPU map[string]time.Duration

// CPU returns the CPU time each process has used so far; nil when it
// cannot tell (no local cluster, a process gone).
func (c *ControlPlane) CPU() CPU {
	if c == nil {
		return nil
	}
	out := CPU{}
	for _, name := range planeProcesses {
		b, err := os.ReadFile(filepath.Join(c.PIDDir, name+".pid"))
		if err != nil {
			return nil
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil
		}
		d, err := procfs.CPU(pid)
		if err != nil {
			return nil
		}
		out[name] = d
	}
	return out
}

// Since returns what each process used from before to c; nil when either
// is unknown.
func (c CPU) Since(before CPU) CPU {
	if c == nil || before == nil {
		return nil
	}
	out := CPU{}
	for name, d := range c {
		out[name] = d - before[name]
	}
	return out
}

// PerEach writes each process's CPU time and its share of n units, in
// the processes' order: "kube-apiserver 30.1s (30.1 ms per set), etcd …".
func (c CPU) PerEach(n int, unit string) string {
	parts := make([]string, 0, len(planeProcesses))
	for _, name := range planeProcesses {
		d, ok := c[name]
		if !ok {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s (%.1f ms per %s)", name, d.Round(10*time.Millisecond), float64(d.Microseconds())/1000/float64(n), unit))
	}
	return strings.Join(parts, ", ")
}

// Total is the CPU time of every process in c.
func (c CPU) Total() time.Duration {
	var t time.Duration
	for _, d := range c {
		t += d
	}
	return t
}

// idleWindow and idleShare are what WaitIdle waits for: the control
// plane's processes used less than idleShare of one core over idleWindow.
const (
	idleWindow = time.Second
	idleShare  = 0.1
)

// WaitIdle waits until the control plane has finished what earlier
// phases left it (deletions, their garbage collection, controllers'
// reactions): a measurement that starts while it still works would be
// charged for that. It gives up after maxWait, and says so, rather than
// fail the run: a machine shared with other work may never look idle. A
// nil ControlPlane (an existing cluster) returns at once.
func (c *ControlPlane) WaitIdle(ctx context.Context, what string, maxWait time.Duration) error {
	if c == nil {
		return nil
	}
	start := time.Now()
	for {
		before := c.CPU()
		select {
		case <-time.After(idleWindow):
		case <-ctx.Done():
			return ctx.Err()
		}
		used := c.CPU().Since(before)
		if used == nil {
			return nil
		}
		if used.Total() < time.Duration(idleShare*float64(idleWindow)) {
			progress.Logf("%s: the control plane is idle after %s", what, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		if time.Since(start) > maxWait {
			progress.Logf("%s: the control plane still used %s of CPU in the last %s after %s; going on", what, used.Total().Round(time.Millisecond), idleWindow, maxWait)
			return nil
		}
	}
}
