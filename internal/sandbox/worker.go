package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
	"github.com/stencil-dev/stencil/templates/budget"
)

// Environment of a worker process.
const (
	// EnvWorker set to "1" makes Main serve renders instead of returning.
	EnvWorker = "STENCIL_RENDER_WORKER"
	// EnvMemory is the worker's memory ceiling in bytes.
	EnvMemory = "STENCIL_RENDER_MEMORY"
)

// runtimeHeadroom is what the Go runtime and the binary's own data need
// beyond a render's memory, added to RLIMIT_DATA.
const runtimeHeadroom = 192 << 20

// maxCachedBundles bounds the parsed bundles a worker keeps.
const maxCachedBundles = 32

// exitOverrun is the exit code of a worker that stopped a render itself
// after reporting the overrun.
const exitOverrun = 3

// Main serves renders on stdin and stdout and exits when the process was
// started as a worker (EnvWorker=1); otherwise it returns at once. Call it
// first thing in main, and in TestMain of every package whose tests render
// through a Pool (the pool re-executes the running binary).
func Main() {
	if os.Getenv(EnvWorker) != "1" {
		return
	}
	os.Exit(serve(os.Stdin, os.Stdout))
}

// worker is the state of a worker process.
type worker struct {
	out     *bufio.Writer
	mu      sync.Mutex // guards out: the watchdog writes too
	memory  uint64
	bundles map[string]*templates.Bundle
	order   []string // keys of bundles, oldest first
}

func serve(in io.Reader, out io.Writer) int {
	w := &worker{out: bufio.NewWriter(out), bundles: map[string]*templates.Bundle{}}
	if err := w.limitMemory(); err != nil {
		fmt.Fprintf(os.Stderr, "render worker: %v\n", err)
		return 1
	}
	iso := confine()
	if err := w.send(response{Isolation: &iso}); err != nil {
		fmt.Fprintf(os.Stderr, "render worker: %v\n", err)
		return 1
	}
	r := bufio.NewReader(in)
	for {
		var req request
		if err := readRequest(r, &req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintf(os.Stderr, "render worker: %v\n", err)
			return 1
		}
		if err := w.handle(&req); err != nil {
			fmt.Fprintf(os.Stderr, "render worker: %v\n", err)
			return 1
		}
	}
}

// limitMemory sets the hard ceiling (RLIMIT_DATA: the kernel refuses more,
// and the runtime dies with "out of memory") and the Go memory limit, so
// the collector works hard before the ceiling is reached.
func (w *worker) limitMemory() error {
	mem, err := strconv.ParseUint(os.Getenv(EnvMemory), 10, 64)
	if err != nil || mem == 0 {
		return fmt.Errorf("%s must be a positive number of bytes", EnvMemory)
	}
	w.memory = mem
	lim := mem + runtimeHeadroom
	if err := syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: lim, Max: lim}); err != nil {
		return fmt.Errorf("set RLIMIT_DATA: %w", err)
	}
	debug.SetMemoryLimit(int64(mem))
	// A runaway recursion fails at 64 MiB of stack instead of 1 GiB.
	debug.SetMaxStack(64 << 20)
	// Should a container's memory limit be reached first, the kernel's OOM
	// killer takes a worker, never the controller (raising one's own score
	// needs no privilege; where /proc is absent this does nothing).
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	return nil
}

// testHooks are set by this package's tests only (export_test.go): a
// production binary has none, and no request can set them.
var testHooks struct {
	// probe answers a request's Probe: something a confined worker must
	// not be able to do.
	probe func(what string) error
	// noLandlock and noSeccomp make a worker act as on a kernel without them.
	noLandlock, noSeccomp bool
}

// handle answers one request.
func (w *worker) handle(req *request) error {
	if req.Probe != "" {
		if testHooks.probe == nil {
			return fmt.Errorf("unknown request")
		}
		resp := response{}
		if err := testHooks.probe(req.Probe); err != nil {
			resp.Error = toWire(err)
		}
		return w.send(resp)
	}
	b, err := w.bundle(req)
	if err != nil {
		return w.send(response{Error: toWire(err)})
	}
	if b == nil {
		return w.send(response{NeedBundle: true})
	}
	timeout := time.Duration(req.TimeoutMillis) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	in := req.Input
	in.Progress = &budget.Progress{}
	in.Observations = &templates.Observations{}
	in.Notes = &templates.Notes{}
	stop := w.watch(in.Progress, timeout)
	// The templates check ctx at every range iteration and call and stop
	// with the file and line; the watchdog is for a render stuck inside
	// one call, and names the line from in.Progress.
	objs, err := templates.RenderContext(ctx, b, in)
	stop()
	resp := response{HeapBytes: heapBytes()}
	if err != nil {
		resp.Error = toWire(err)
		resp.Observations = in.Observations // what it looked up before the error
		return w.send(resp)
	}
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		out[i] = o.Object
	}
	data, err := json.Marshal(out)
	if err != nil {
		return w.send(response{Error: toWire(fmt.Errorf("encode rendered objects: %w", err))})
	}
	resp.ObjectsFollow = true
	resp.Observations, resp.Notes = in.Observations, in.Notes
	return w.send(resp, data)
}

// bundle returns the parsed bundle of the request: from the worker's cache,
// or parsed from the request's spec. It returns nil, nil when the worker
// has no spec for it.
func (w *worker) bundle(req *request) (*templates.Bundle, error) {
	key := req.Bundle.key()
	if b, ok := w.bundles[key]; ok {
		return b, nil
	}
	if req.Spec == nil {
		return nil, nil
	}
	b, err := templates.LoadObject(&v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: req.Bundle.Name}, Spec: req.spec()})
	if err != nil {
		return nil, err
	}
	if len(w.order) >= maxCachedBundles {
		delete(w.bundles, w.order[0])
		w.order = w.order[1:]
	}
	w.bundles[key] = b
	w.order = append(w.order, key)
	return b, nil
}

// watch starts the watchdog of one render: it reports progress, and ends
// the process with an error naming the template when the render passes its
// memory or, past a short grace, its deadline without returning.
func (w *worker) watch(progress *budget.Progress, timeout time.Duration) (stop func()) {
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		deadline := time.Now().Add(timeout + timeout/50 + 50*time.Millisecond)
		var last location
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				var at location
				at.File, at.Line = progress.Where()
				switch {
				case heapBytes() > w.memory:
					w.overrun(templates.ReasonTooLarge, at, fmt.Sprintf("render stopped: it used more than %s of memory", formatBytes(w.memory)))
				case now.After(deadline):
					w.overrun(templates.ReasonTimeout, at, fmt.Sprintf("render stopped: it did not finish within %s", timeout))
				case at != last:
					last = at
					_ = w.send(response{Progress: &at})
				}
			}
		}
	}()
	return func() { close(done) }
}

// overrun reports a render the watchdog stopped, and ends the process.
func (w *worker) overrun(reason string, at location, msg string) {
	_ = w.send(response{Error: &wireError{File: at.File, Line: at.Line, Reason: reason, Msg: msg}})
	os.Exit(exitOverrun)
}

// send writes a message, and the raw messages that follow it, at once.
func (w *worker) send(resp response, raw ...[]byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := writeFrame(w.out, resp); err != nil {
		return err
	}
	for _, r := range raw {
		if err := writeRaw(w.out, r); err != nil {
			return err
		}
	}
	return w.out.Flush()
}

// heapBytes is the memory held by heap objects, live or not yet swept.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// formatBytes prints a byte count in MiB or KiB.
func formatBytes(n uint64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d KiB", n>>10)
	}
}
