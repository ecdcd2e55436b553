package controller

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/metrics"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/procfs"
)

// Args are the flags every run of the controller gets.
type Args struct {
	// Binary is the stencil binary; Kubeconfig the controller's; LogDir
	// where each run's log goes (controller-RUN.log).
	Binary, Kubeconfig, LogDir    string
	Concurrency, ApplyConcurrency int
	QPS                           float32
	Burst                         int
	// PProf, when set, is the address the controller serves
	// /debug/pprof on.
	PProf string
	// Webhook, when not empty, are the flags that serve the admission
	// webhooks (see WebhookArgs); empty: --webhook-port=0.
	Webhook []string
}

// Process is one run of `stencil controller`.
type Process struct {
	cmd *exec.Cmd
	// Started is when the process was started.
	Started   time.Time
	metrics   string // host:port of /metrics
	probes    string // host:port of /readyz
	exited    chan struct{}
	exitError error
	// split follows the controller's resident pages while it runs.
	split *procfs.RSSSplit
}

// Start starts the controller and waits until it answers /readyz and
// /metrics; run numbers its log.
func Start(ctx context.Context, a Args, run int) (*Process, error) {
	metricsAddr, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	probes, err := FreeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(a.LogDir, fmt.Sprintf("controller-%d.log", run))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(a.Binary, a.flags(metricsAddr, probes)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	p := &Process{cmd: cmd, metrics: metricsAddr, probes: probes, exited: make(chan struct{})}
	p.Started = time.Now()
	if err := cmd.Start(); err != nil {
		_ = logFile.Close() // nothing was written to it; the start's error is the one to report
		return nil, fmt.Errorf("start %s: %w", a.Binary, err)
	}
	go func() {
		p.exitError = cmd.Wait()
		// The controller wrote its log through its own descriptor, gone
		// with it; this one was never written to, so closing it loses
		// nothing.
		_ = logFile.Close()
		close(p.exited)
	}()
	p.split = &procfs.RSSSplit{}
	go p.split.Sample(cmd.Process.Pid, p.exited)
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case <-p.exited:
			return nil, fmt.Errorf("the controller exited (%v); its log is %s", p.exitError, logPath)
		case <-deadline:
			p.Stop()
			return nil, fmt.Errorf("the controller did not get ready in 2m; its log is %s", logPath)
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if answers("http://"+probes+"/readyz") && answers("http://"+metricsAddr+"/metrics") {
			return p, nil
		}
	}
}

// flags are the controller's command line.
func (a Args) flags(metricsAddr, probes string) []string {
	args := []string{"controller", "--kubeconfig", a.Kubeconfig,
		"--metrics-bind-address", metricsAddr, "--health-probe-bind-address", probes,
		// Plain HTTP on loopback: an authenticated scrape would add a
		// TokenReview and a SubjectAccessReview to the API requests the
		// benchmark counts (the controller's default is --metrics-secure).
		"--metrics-secure=false",
		// As the controller's own identity, as the floor's client writes:
		// the benchmark compares the writes, not the tenants' RBAC. (The
		// default, impersonating each namespace's ServiceAccount, adds one
		// access review per kind and namespace a minute.)
		"--write-as-controller",
		"--concurrency", strconv.Itoa(a.Concurrency), "--apply-concurrency", strconv.Itoa(a.ApplyConcurrency),
		"--kube-api-qps", strconv.FormatFloat(float64(a.QPS), 'g', -1, 32), "--kube-api-burst", strconv.Itoa(a.Burst),
		"--zap-devel=false", "--zap-log-level=info"}
	if len(a.Webhook) > 0 {
		args = append(args, a.Webhook...)
	} else {
		// No webhook configuration sends it requests.
		args = append(args, "--webhook-port=0")
	}
	if a.PProf != "" {
		args = append(args, "--pprof-bind-address", a.PProf)
	}
	return args
}

// PID is the controller's process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stop ends the controller with SIGTERM, then SIGKILL after 30 seconds.
// Stopping a nil Process does nothing.
func (p *Process) Stop() {
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

// Scrape reads the controller's metrics.
func (p *Process) Scrape(ctx context.Context) (metrics.Set, error) {
	return metrics.Scrape(ctx, p.metrics)
}

// Idle waits until the Composition controller has finished at least want
// reconciles in all and has nothing queued or in progress, polling its
// metrics, and returns when it saw that.
func (p *Process) Idle(ctx context.Context, want float64, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	ctrl := map[string]string{"controller": "composition"}
	for {
		m, err := p.Scrape(ctx)
		if err == nil &&
			m.Sum("controller_runtime_reconcile_total", ctrl) >= want &&
			m.Sum("workqueue_depth", map[string]string{"name": "composition"}) == 0 &&
			m.Sum("controller_runtime_active_workers", ctrl) == 0 {
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

// Settled waits until no controller of the process (the Compositions',
// the Bundles', each published kind's) has a request queued or in
// progress, on two scrapes a second apart, and returns when it saw that.
// A request waiting on its RequeueAfter is not in a queue: settled is
// "nothing to do now", which is what a count of writes waits for.
func (p *Process) Settled(ctx context.Context, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	quiet := 0
	for {
		m, err := p.Scrape(ctx)
		if err == nil && m.Sum("workqueue_depth", nil) == 0 && m.Sum("controller_runtime_active_workers", nil) == 0 {
			if quiet++; quiet == 2 {
				return time.Now(), nil
			}
		} else {
			quiet = 0
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("the controller did not settle in %s (last scrape error: %v)", timeout, err)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// FreeAddr returns a loopback address nothing listens on.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	// Closed before the address is handed on: one still listened on is
	// not free.
	if err := l.Close(); err != nil {
		return "", err
	}
	return addr, nil
}

// answers reports whether a GET of url answers 200 OK.
func answers(url string) bool {
	resp, err := http.Get(url)
	if err != nil {
		return false
	}
	_ = resp.Body.Close() // only the status is read
	return resp.StatusCode == http.StatusOK
}
