package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// controllerProc is one run of `stencil controller`.
type controllerProc struct {
	cmd       *exec.Cmd
	started   time.Time
	metrics   string // host:port of /metrics
	probes    string // host:port of /readyz
	exited    chan struct{}
	exitError error
	// split follows the controller's resident pages while it runs (see
	// sampleSplit).
	split *rssSplit
}

// controllerArgs are the flags every run of the controller gets.
type controllerArgs struct {
	binary, kubeconfig, logDir    string
	concurrency, applyConcurrency int
	qps                           float32
	burst                         int
	// pprof, when set, is the address the controller serves
	// /debug/pprof on.
	pprof string
	// webhook, when not empty, are the flags that serve the admission
	// webhooks (see harness.webhookArgs); empty: --webhook-port=0.
	webhook []string
}

// startController starts the controller and waits until it answers
// /readyz and /metrics.
func startController(ctx context.Context, a controllerArgs, run int) (*controllerProc, error) {
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	probes, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(a.logDir, fmt.Sprintf("controller-%d.log", run))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(a.binary, "controller", "--kubeconfig", a.kubeconfig,
		"--metrics-bind-address", metrics, "--health-probe-bind-address", probes,
		// Plain HTTP on loopback: an authenticated scrape would add a
		// TokenReview and a SubjectAccessReview to the API requests the
		// benchmark counts (the controller's default is --metrics-secure).
		"--metrics-secure=false",
		// As the controller's own identity, as the floor's client writes:
		// the benchmark compares the writes, not the tenants' RBAC. (The
		// default, impersonating each namespace's ServiceAccount, adds one
		// access review per kind and namespace a minute.)
		"--write-as-controller",
		"--concurrency", strconv.Itoa(a.concurrency), "--apply-concurrency", strconv.Itoa(a.applyConcurrency),
		"--kube-api-qps", strconv.FormatFloat(float64(a.qps), 'g', -1, 32), "--kube-api-burst", strconv.Itoa(a.burst),
		"--zap-devel=false", "--zap-log-level=info")
	if len(a.webhook) > 0 {
		cmd.Args = append(cmd.Args, a.webhook...)
	} else {
		// No webhook configuration sends it requests.
		cmd.Args = append(cmd.Args, "--webhook-port=0")
	}
	if a.pprof != "" {
		cmd.Args = append(cmd.Args, "--pprof-bind-address", a.pprof)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p := &controllerProc{cmd: cmd, metrics: metrics, probes: probes, exited: make(chan struct{})}
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", a.binary, err)
	}
	go func() {
		p.exitError = cmd.Wait()
		logFile.Close()
		close(p.exited)
	}()
	p.split = &rssSplit{}
	go p.split.sample(cmd.Process.Pid, p.exited)
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case <-p.exited:
			return nil, fmt.Errorf("the controller exited (%v); its log is %s", p.exitError, logPath)
		case <-deadline:
			p.stop()
			return nil, fmt.Errorf("the controller did not get ready in 2m; its log is %s", logPath)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if answers("http://"+probes+"/readyz") && answers("http://"+metrics+"/metrics") {
			return p, nil
		}
	}
}

// stop ends the controller with SIGTERM, then SIGKILL after 30 seconds.
func (p *controllerProc) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// memory is what the kernel reports of a process's resident memory.
type memory struct {
	// peak is VmHWM, current VmRSS, in KiB.
	peak, current int
	// workersPeak sums the VmHWM of the controller's child processes
	// (the render sandbox's workers), in KiB; workers counts them.
	workersPeak, workers int
	// pss is the proportional set size of the controller and its workers
	// now, in KiB: shared pages divided among the processes sharing them.
	pss int
	// peakAnon and peakFile split the controller's largest sampled
	// resident set (see rssSplit) into anonymous pages (the Go heap,
	// stacks, the runtime's own) and file-backed pages (the binary's text
	// and data, mapped files), in KiB.
	peakAnon, peakFile int
}

// memory reads /proc for the controller and its child processes.
func (p *controllerProc) memory() (memory, error) {
	pid := p.cmd.Process.Pid
	var m memory
	var err error
	if m.peak, m.current, err = procMemory(pid); err != nil {
		return m, err
	}
	m.pss = procPss(pid)
	if p.split != nil {
		m.peakAnon, m.peakFile = p.split.peak()
	}
	for _, child := range childPIDs(pid) {
		if peak, _, err := procMemory(child); err == nil {
			m.workersPeak += peak
			m.workers++
			m.pss += procPss(child)
		}
	}
	return m, nil
}

// procMemory returns VmHWM and VmRSS of pid, in KiB.
func procMemory(pid int) (peak, current int, err error) {
	st, err := procStatus(pid)
	return st["VmHWM"], st["VmRSS"], err
}

// procStatus returns the sizes /proc/PID/status gives in kB, by name.
func procStatus(pid int) (map[string]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	return parseStatus(string(b)), nil
}

// parseStatus reads the "Name:  123 kB" lines of /proc/PID/status.
func parseStatus(text string) map[string]int {
	out := map[string]int{}
	for line := range strings.Lines(text) {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) != 2 || fields[1] != "kB" {
			continue
		}
		if n, err := strconv.Atoi(fields[0]); err == nil {
			out[key] = n
		}
	}
	return out
}

// rssSplit keeps the sample of a process's RssAnon and RssFile (+
// RssShmem) whose sum was the largest: VmHWM says how high the resident
// set went, not of what; sampled every 50 ms, the largest sum is within a
// sample of VmHWM and says which kind of page made it.
type rssSplit struct {
	mu         sync.Mutex
	anon, file int
}

// sample reads /proc/PID/status until done is closed.
func (s *rssSplit) sample(pid int, done <-chan struct{}) {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		st, err := procStatus(pid)
		if err != nil {
			continue
		}
		s.record(st["RssAnon"], st["RssFile"]+st["RssShmem"])
	}
}

// record keeps a sample if its sum is the largest yet.
func (s *rssSplit) record(anon, file int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if anon+file > s.anon+s.file {
		s.anon, s.file = anon, file
	}
}

// peak returns the anonymous and file-backed KiB of the largest sample.
func (s *rssSplit) peak() (anon, file int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.anon, s.file
}

// cpu returns the CPU time (user and system) the controller and, summed,
// its render workers have used so far.
func (p *controllerProc) cpu() (controller, workers time.Duration) {
	pid := p.cmd.Process.Pid
	controller, _ = procCPU(pid)
	for _, child := range childPIDs(pid) {
		if d, err := procCPU(child); err == nil {
			workers += d
		}
	}
	return controller, workers
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// procCPU returns the user and system CPU time pid has used.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(string(b))
}

// parseStatCPU reads utime and stime, fields 14 and 15 of /proc/PID/stat,
// counted after the command name, which may hold spaces and parentheses.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("no command name in %q", stat)
	}
	fields := strings.Fields(stat[i+1:]) // from field 3, the state
	if len(fields) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// procPss returns the Pss of pid in KiB, 0 when the kernel does not say.
func procPss(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			if fields := strings.Fields(rest); len(fields) > 0 {
				n, _ := strconv.Atoi(fields[0])
				return n
			}
		}
	}
	return 0
}

// childPIDs lists the processes whose parent is pid: the children of
// each of its threads (/proc/PID/task/TID/children).
func childPIDs(pid int) []int {
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", pid, t.Name()))
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// scrape reads the controller's metrics.
func (p *controllerProc) scrape(ctx context.Context) (metricSet, error) {
	return scrape(ctx, p.metrics)
}

// idle waits until the Composition controller has finished at least want
// reconciles in all and has nothing queued or in progress, polling its
// metrics, and returns when it saw that.
func (p *controllerProc) idle(ctx context.Context, want float64, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	ctrl := map[string]string{"controller": "composition"}
	for {
		m, err := p.scrape(ctx)
		if err == nil &&
			m.sum("controller_runtime_reconcile_total", ctrl) >= want &&
			m.sum("workqueue_depth", map[string]string{"name": "composition"}) == 0 &&
			m.sum("controller_runtime_active_workers", ctrl) == 0 {
			return time.Now(), nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("the controller was not idle after %s (last scrape error: %v)", timeout, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// freeAddr returns a loopback address nothing listens on.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// answers reports whether a GET of url answers 200 OK.
func answers(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// saveHeapProfile writes the heap profile the controller serves on addr
// (--pprof-bind-address) to path.
func saveHeapProfile(ctx context.Context, addr, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := getTo(ctx, http.DefaultClient, "http://"+addr+"/debug/pprof/heap", f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// getTo GETs url with hc and copies the answer's body to w; an answer
// other than 200 OK is an error naming the URL's path.
func getTo(ctx context.Context, hc *http.Client, url string, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", req.URL.Path, resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// cpuProfiler records a process's CPU profile (its /debug/pprof/profile)
// over a phase of unknown length: back-to-back windows of a few seconds,
// merged into one profile by `go tool pprof -proto` when the phase ends.
type cpuProfiler struct {
	dir    string
	cancel context.CancelFunc
	done   chan error
}

// cpuProfileWindow is one window's length; the last window ends at most this
// long after the phase.
const cpuProfileWindow = 2 * time.Second

// profileFetcher GETs one window of a CPU profile into w.
type profileFetcher func(ctx context.Context, w io.Writer) error

// startCPUProfile starts recording the CPU profile fetch reads.
func startCPUProfile(ctx context.Context, fetch profileFetcher) (*cpuProfiler, error) {
	dir, err := os.MkdirTemp("", "benchscale-cpu-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	c := &cpuProfiler{dir: dir, cancel: cancel, done: make(chan error, 1)}
	go func() {
		// At least one window, however short the phase. A window runs to
		// its end even once the phase is over, so that it is a whole
		// profile: the request has its own context.
		var err error
		for i := 0; ; i++ {
			if err = saveWindow(context.WithoutCancel(ctx), fetch, filepath.Join(dir, fmt.Sprintf("%04d.pprof", i))); err != nil || ctx.Err() != nil {
				break
			}
		}
		c.done <- err
	}()
	return c, nil
}

// saveWindow writes one window of a CPU profile to path.
func saveWindow(ctx context.Context, fetch profileFetcher, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fetch(ctx, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// stop ends the recording after the current window and writes the merged
// profile to path.
func (c *cpuProfiler) stop(ctx context.Context, path string) error {
	defer os.RemoveAll(c.dir)
	c.cancel()
	if err := <-c.done; err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(c.dir, "*.pprof"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return errors.New("no CPU profile recorded")
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", append([]string{"tool", "pprof", "-proto"}, files...)...)
	cmd.Stdout, cmd.Stderr = out, os.Stderr
	if err := cmd.Run(); err != nil {
		out.Close()
		return fmt.Errorf("merge %d CPU profiles: %w", len(files), err)
	}
	return out.Close()
}

// controllerProfile fetches the CPU profile the controller serves on addr
// (--pprof-bind-address).
func controllerProfile(addr string) profileFetcher {
	u := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, int(cpuProfileWindow/time.Second))
	return func(ctx context.Context, w io.Writer) error { return getTo(ctx, http.DefaultClient, u, w) }
}
