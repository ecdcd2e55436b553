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
// controller are served and stored.
var planeProcesses = []string{"kube-apiserver", "etcd"}

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
		d := c[name]
		parts = append(parts, fmt.Sprintf("%s %s (%.1f ms per %s)", name, d.Round(10*time.Millisecond), float64(d.Microseconds())/1000/float64(n), unit))
	}
	return strings.Join(parts, ", ")
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
