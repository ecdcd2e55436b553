package cluster

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/internal/testenv"
)

func TestControlPlaneCPU(t *testing.T) {
	before := CPU{"kube-apiserver": 2 * time.Second, "etcd": time.Second}
	after := CPU{"kube-apiserver": 6 * time.Second, "etcd": 1500 * time.Millisecond}
	used := after.Since(before)
	if used["kube-apiserver"] != 4*time.Second || used["etcd"] != 500*time.Millisecond {
		t.Errorf("Since = %v", used)
	}
	if after.Since(nil) != nil || CPU(nil).Since(before) != nil {
		t.Error("Since with an unknown side is not nil")
	}
	if got, want := used.PerEach(1000, "Composition"), "kube-apiserver 4s (4.0 ms per Composition), etcd 500ms (0.5 ms per Composition)"; got != want {
		t.Errorf("PerEach = %q, want %q", got, want)
	}
	// The harness's own process stands in for a cluster's.
	if got := ownPlane(t).CPU(); len(got) != len(planeProcesses) {
		t.Errorf("CPU of live pids = %v", got)
	}
	if got := (&ControlPlane{PIDDir: t.TempDir()}).CPU(); got != nil {
		t.Errorf("CPU without pid files = %v, want nil", got)
	}
	if got := (*ControlPlane)(nil).CPU(); got != nil {
		t.Errorf("CPU of no cluster = %v, want nil", got)
	}
}

// ownPlane is a control plane whose every process is the test's own.
func ownPlane(t *testing.T) *ControlPlane {
	t.Helper()
	dir := t.TempDir()
	for _, name := range planeProcesses {
		if err := os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &ControlPlane{PIDDir: dir}
}

// TestWaitIdle: WaitIdle returns once the processes it reads are idle,
// and gives up after its limit, without failing, while one keeps busy.
// What it decided is read from what it says (its log), never from how
// long it took: the harness's own process stands in for the cluster's,
// and its CPU time, not this machine's load, is what WaitIdle reads.
func TestWaitIdle(t *testing.T) {
	c := ownPlane(t)
	// An idle process: WaitIdle, given an hour, can only return by
	// finding it idle (or at the test's bound, failing).
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	start := time.Now()
	var err error
	said := logOf(t, func() { err = c.WaitIdle(ctx, "idle", time.Hour) })
	if err != nil {
		t.Fatalf("an idle process never looked idle: %v (%s)", err, said)
	}
	if !strings.Contains(said, "idle: the control plane is idle after") {
		t.Errorf("WaitIdle of an idle process said %q, want that it is idle", said)
	}
	t.Logf("WaitIdle of an idle process took %s", time.Since(start).Round(100*time.Millisecond))

	// A busy process: the goroutine spins, keeping a core busy, until
	// the test returns.
	var stop atomic.Bool
	defer stop.Store(true)
	go func() {
		for !stop.Load() {
		}
	}()
	said = logOf(t, func() { err = c.WaitIdle(ctx, "busy", 2*time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(said, "busy: the control plane still used") || strings.Contains(said, "is idle") {
		t.Errorf("WaitIdle while the process kept a core busy said %q, want that it gave up after its limit", said)
	}
	if err := (*ControlPlane)(nil).WaitIdle(ctx, "none", time.Minute); err != nil {
		t.Errorf("no cluster: %v", err)
	}
}

// logOf is what f logs (progress.Logf writes to standard error).
func logOf(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		read <- string(b)
	}()
	stderr := os.Stderr
	os.Stderr = w
	defer func() { os.Stderr = stderr }()
	f()
	os.Stderr = stderr
	// The reader gets its EOF only once w is closed.
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	said := <-read
	if err := r.Close(); err != nil {
		t.Error(err)
	}
	return said
}
