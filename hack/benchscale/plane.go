package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// planeProcesses are the processes of the local cluster whose CPU time
// the harness reads: where the requests of the floor and of the
// controller are served and stored, and kube-controller-manager, whose
// controllers react to what they write (on the same cores).
var planeProcesses = []string{"kube-apiserver", "etcd", "kube-controller-manager"}

// controlPlane reads the CPU time of the local cluster's processes, found
// by the pid files hack/local-cluster.sh writes. A nil controlPlane (an
// existing cluster) knows none.
type controlPlane struct {
	pidDir string
}

// planeCPU is the CPU time each of planeProcesses used, by name.
type planeCPU map[string]time.Duration

// cpu returns the CPU time each of planeProcesses has used so far; nil
// when it cannot tell (no local cluster, a process gone).
func (c *controlPlane) cpu() planeCPU {
	if c == nil {
		return nil
	}
	out := planeCPU{}
	for _, name := range planeProcesses {
		b, err := os.ReadFile(filepath.Join(c.pidDir, name+".pid"))
		if err != nil {
			return nil
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return nil
		}
		d, err := procCPU(pid)
		if err != nil {
			return nil
		}
		out[name] = d
	}
	return out
}

// since returns what each process used from before to c; nil when either
// is unknown.
func (c planeCPU) since(before planeCPU) planeCPU {
	if c == nil || before == nil {
		return nil
	}
	out := planeCPU{}
	for name, d := range c {
		out[name] = d - before[name]
	}
	return out
}

// perEach writes each process's CPU time and its share of n units, in
// planeProcesses' order: "kube-apiserver 30.1s (30.1 ms per set), etcd …".
func (c planeCPU) perEach(n int, unit string) string {
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

// total is the CPU time of every process in c.
func (c planeCPU) total() time.Duration {
	var t time.Duration
	for _, d := range c {
		t += d
	}
	return t
}

// idleWindow and idleShare are what waitIdle waits for: the control
// plane's processes used less than idleShare of one core over idleWindow.
const (
	idleWindow = time.Second
	idleShare  = 0.1
)

// waitIdle waits until the control plane has finished what earlier
// phases left it (deletions, their garbage collection, controllers'
// reactions): a measurement that starts while it still works would be
// charged for that. It gives up after maxWait, and says so, rather than
// fail the run: a machine shared with other work may never look idle. A
// nil controlPlane (an existing cluster) returns at once.
func (c *controlPlane) waitIdle(ctx context.Context, what string, maxWait time.Duration) error {
	if c == nil {
		return nil
	}
	start := time.Now()
	for {
		before := c.cpu()
		select {
		case <-time.After(idleWindow):
		case <-ctx.Done():
			return ctx.Err()
		}
		used := c.cpu().since(before)
		if used == nil {
			return nil
		}
		if used.total() < time.Duration(idleShare*float64(idleWindow)) {
			logf("%s: the control plane is idle after %s", what, time.Since(start).Round(100*time.Millisecond))
			return nil
		}
		if time.Since(start) > maxWait {
			logf("%s: the control plane still used %s of CPU in the last %s after %s; going on", what, used.total().Round(time.Millisecond), idleWindow, maxWait)
			return nil
		}
	}
}

// apiServerProfile fetches kube-apiserver's CPU profile (its
// /debug/pprof/profile, on while --profiling is, the default) as the
// user of cfg.
func apiServerProfile(cfg *rest.Config) (profileFetcher, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	// A window takes cpuProfileWindow to answer: past client-go's
	// timeout, if one is set.
	hc.Timeout = 0
	u := strings.TrimRight(cfg.Host, "/") + fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(cpuProfileWindow/time.Second))
	return func(ctx context.Context, w io.Writer) error { return getTo(ctx, hc, u, w) }, nil
}
