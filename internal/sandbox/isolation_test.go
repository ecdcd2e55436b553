package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/templates"
)

// Arguments of this test binary run as a worker that acts as on a kernel
// without Landlock, seccomp or both.
const (
	argNoLandlock = "-sandbox.without-landlock"
	argNoSeccomp  = "-sandbox.without-seccomp"
)

// setUpWorker prepares this test binary to run as a worker: it answers
// probes, and keeps an OS thread started before the worker confines
// itself, to show that the confinement holds on threads it did not run on.
func setUpWorker() {
	if os.Getenv(sandbox.EnvWorker) != "1" {
		return
	}
	for _, a := range os.Args[1:] {
		switch a {
		case argNoLandlock:
			sandbox.WithoutLandlock()
		case argNoSeccomp:
			sandbox.WithoutSeccomp()
		}
	}
	ready := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: this thread runs only the calls below
		close(ready)
		for f := range oldThread {
			f()
		}
	}()
	<-ready
	sandbox.SetProbe(probe)
}

// oldThread runs functions on the thread setUpWorker started.
var oldThread = make(chan func())

// probe does in a worker what a confined worker must not be able to do.
func probe(what string) error {
	kind, arg, _ := strings.Cut(what, ":")
	switch kind {
	case "read":
		_, err := os.ReadFile(arg)
		return err
	case "read-on-old-thread":
		done := make(chan error)
		oldThread <- func() { _, err := os.ReadFile(arg); done <- err }
		return <-done
	case "connect":
		c, err := net.DialTimeout("tcp", arg, 5*time.Second)
		if err == nil {
			_ = c.Close() // the probe asks whether a connect is allowed
		}
		return err
	case "unix-socket":
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err == nil {
			_ = syscall.Close(fd) // the probe asks whether a socket is allowed
		}
		return err
	case "exec": // not os/exec, which would first open /dev/null
		pid, err := syscall.ForkExec(arg, []string{arg}, &syscall.ProcAttr{})
		if err != nil {
			return err
		}
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || ws.ExitStatus() != 0 {
			return fmt.Errorf("%s: %v, exit status %d", arg, err, ws.ExitStatus())
		}
		return nil
	case "signal":
		pid, _ := strconv.Atoi(arg)
		return syscall.Kill(pid, 0)
	}
	return fmt.Errorf("unknown probe %q", what)
}

// TestWorkerHoldsNothing: a confined worker cannot read a file it could
// read before (the ServiceAccount token's stand-in), on any of its
// threads, connect to a listener, make a unix socket, exec or signal the
// process that started it. The same probes in a worker that skips
// confinement succeed (the control), and each layer alone refuses what it
// covers.
func TestWorkerHoldsNothing(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }() // the test's own listener
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close() // only the connect is probed
		}
	}()
	probes := []struct {
		name, what string
		minABI     int // the Landlock ABI that refuses it
		landlock   bool
	}{
		{"read a file", "read:" + token, 1, true},
		{"read a file on another thread", "read-on-old-thread:" + token, 1, true},
		{"connect to a TCP listener", "connect:" + ln.Addr().String(), 4, true},
		{"make a unix socket", "unix-socket", 0, false}, // Landlock checks paths, not sockets
		{"exec /bin/true", "exec:/bin/true", 1, true},
		{"signal the process that started it", "signal:" + strconv.Itoa(os.Getpid()), 6, true},
	}
	workers := []struct {
		name string
		args []string
	}{
		{"unconfined (control)", []string{argNoLandlock, argNoSeccomp}},
		{"Landlock alone", []string{argNoSeccomp}},
		{"seccomp alone", []string{argNoLandlock}},
		{"Landlock and seccomp", nil},
	}
	for _, wk := range workers {
		t.Run(wk.name, func(t *testing.T) {
			p, err := sandbox.New(sandbox.Options{Command: append([]string{os.Args[0]}, wk.args...),
				Limits: sandbox.Limits{Isolation: sandbox.IsolationBestEffort}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			if refused, err := p.Probe(ctx, "read:/dev/null/none"); err != nil || refused == nil {
				t.Fatalf("probe of a missing file: %v, %v; want it refused", refused, err)
			}
			iso := p.Isolation()
			t.Logf("worker: %s", iso)
			for _, pr := range probes {
				refused, err := p.Probe(ctx, pr.what)
				if err != nil {
					t.Fatalf("%s: %v", pr.name, err)
				}
				want := iso.Seccomp || (pr.landlock && iso.Landlock >= pr.minABI)
				if got := refused != nil; got != want {
					t.Errorf("%s: refused = %v (%v), want refused %v", pr.name, got, refused, want)
				} else if got {
					t.Logf("%s: refused: %v", pr.name, refused)
				}
			}
		})
	}
}

// TestStrictRefusesWeakerWorkers: a strict pool whose worker cannot
// confine itself fails, naming what is missing and the flag; a
// best-effort pool renders and reports it.
func TestStrictRefusesWeakerWorkers(t *testing.T) {
	b := load(t, "cm", configMap)
	cmd := []string{os.Args[0], argNoSeccomp}
	strict, err := sandbox.New(sandbox.Options{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	_, err = strict.Render(context.Background(), b, input)
	var ie *sandbox.IsolationError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "no seccomp (turned off by a test)") || !strings.Contains(err.Error(), "--render-isolation=best-effort") {
		t.Fatalf("strict pool: err = %v, want an IsolationError naming seccomp and the flag", err)
	}
	lax, err := sandbox.New(sandbox.Options{Command: cmd, Limits: sandbox.Limits{Isolation: sandbox.IsolationBestEffort}})
	if err != nil {
		t.Fatal(err)
	}
	defer lax.Close()
	if _, err := lax.Render(context.Background(), b, input); err != nil {
		t.Fatalf("best-effort pool: %v", err)
	}
	if iso := lax.Isolation(); iso.Seccomp || iso.Landlock == 0 || len(iso.Missing()) != 1 {
		t.Errorf("Isolation() = %+v, want Landlock without seccomp", iso)
	}
}

// TestConfinedRendersMatch: what a render needs after the worker has
// confined itself works (dates need no zoneinfo file: templates knows UTC
// only), and the render is the in-process one.
func TestConfinedRendersMatch(t *testing.T) {
	p := newPool(t, sandbox.Limits{}, 1)
	b := load(t, "tz", map[string]string{"templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tz\ndata:\n" +
		"  utc: {{ dateInZone \"2006-01-02 15:04 MST\" 1700000000 \"UTC\" | quote }}\n" +
		"  local: {{ date \"2006-01-02 15:04 MST\" 0 | quote }}\n"})
	want, err := templates.Render(b, input)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Render(context.Background(), b, input)
	if err != nil {
		t.Fatal(err)
	}
	if iso := p.Isolation(); len(iso.Missing()) > 0 {
		t.Fatalf("worker runs %s", iso)
	}
	if d := cmp.Diff(want[0].Object, got[0].Object); d != "" {
		t.Errorf("(-in process +confined worker):\n%s", d)
	}
	if utc, _, _ := unstructured.NestedString(got[0].Object, "data", "utc"); utc != "2023-11-14 22:13 UTC" {
		t.Errorf("utc = %q, want 2023-11-14 22:13 UTC", utc)
	}
}
