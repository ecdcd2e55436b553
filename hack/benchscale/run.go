package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/applyset"
)

// Namespaces of the run.
const (
	nsBench     = "bench"           // the controller's Compositions
	nsFloor     = "bench-floor"     // the floor's objects
	nsRoll      = "bench-roll"      // the Deployment of the latency samples
	nsUnrelated = "bench-unrelated" // objects stencil must not cache
)

// Bundles of the run.
const (
	benchBundleName = "bench"
	// outputsBundleName is the Bundle of the outputs latency.
	outputsBundleName = "bench-outputs"
	rollBundleName    = "bench-roll"
	rollName          = "roll"
	outputsName       = "outputs" // the Composition of the outputs latency, in nsRoll
)

// harness holds what the phases share.
type harness struct {
	o       options
	root    string
	admin   client.Client
	adminRC *rest.Config
	watch   *watcher
	ctrl    controllerArgs
	// audit and auditUser count the controller's requests on the server
	// side; with no audit log, its stencil_api_requests_total does.
	audit     *auditLog
	auditUser string
	// plane reads the local cluster's CPU time; nil on an existing cluster.
	plane *controlPlane
	res   *results
}

// run runs every phase and returns what it measured, so far as it got.
func run(ctx context.Context, o options) (*results, error) {
	root, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(root, "hack", "local-cluster.sh")); err != nil {
		return nil, fmt.Errorf("run from the root of the stencil repository: %w", err)
	}
	h := &harness{o: o, root: root, res: &results{}}
	h.ctrl = controllerArgs{binary: o.stencil, kubeconfig: o.kubeconfig, concurrency: o.concurrency,
		applyConcurrency: o.applyConcurrency, qps: float32(o.qps), burst: o.burst}
	if o.heapProfile != "" || o.cpuProfile != "" {
		addr, err := freeAddr()
		if err != nil {
			return nil, err
		}
		h.ctrl.pprof = addr
	}
	adminKubeconfig := o.kubeconfig
	if o.kubeconfig == "" {
		cl := localCluster{root: root, dir: filepath.Join(root, ".local", "bench-cluster")}
		if err := cl.up(); err != nil {
			return nil, err
		}
		if !o.keep {
			defer func() { _ = cl.down() }()
		}
		adminKubeconfig = cl.kubeconfig()
		if h.ctrl.kubeconfig, err = cl.controllerKubeconfig(); err != nil {
			return nil, err
		}
		a := cl.audit()
		h.audit, h.auditUser = &a, controllerUser
		h.ctrl.logDir = filepath.Join(cl.dir, "logs")
		h.plane = &controlPlane{pidDir: filepath.Join(cl.dir, "pids")}
		if o.webhook {
			if h.ctrl.webhook, err = webhookArgs(cl); err != nil {
				return nil, err
			}
		}
	} else {
		if o.controllerKubeconfig != "" {
			h.ctrl.kubeconfig = o.controllerKubeconfig
		}
		if o.auditLog != "" {
			h.audit, h.auditUser = &auditLog{path: o.auditLog}, o.auditUser
		}
		if h.ctrl.logDir, err = os.MkdirTemp("", "benchscale-"); err != nil {
			return nil, err
		}
	}
	h.res.countedBy = "the controller's stencil_api_requests_total (client side)"
	if h.audit != nil {
		h.res.countedBy = fmt.Sprintf("the API server's audit log, user %s", h.auditUser)
	}
	if out, err := exec.CommandContext(ctx, o.stencil, "version").Output(); err == nil {
		h.res.version = strings.TrimSpace(string(out))
	}
	if h.adminRC, err = restConfig(adminKubeconfig, -1, 0); err != nil {
		return nil, err
	}
	if err := h.setup(ctx, adminKubeconfig); err != nil {
		return nil, err
	}
	start := time.Now()
	if o.rollout {
		err = h.rolloutPhases(ctx)
	} else {
		err = h.phases(ctx)
	}
	if h.audit != nil {
		time.Sleep(time.Second)
		n, cerr := h.audit.unselected(h.auditUser, start, time.Now())
		if cerr != nil {
			return h.res, errors.Join(err, cerr)
		}
		h.res.unselected = &n
	}
	return h.res, err
}

// phases runs the measurements in order.
func (h *harness) phases(ctx context.Context) error {
	if err := h.floor(ctx); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	p, err := startController(ctx, h.ctrl, 1)
	if err != nil {
		return err
	}
	defer func() { p.stop() }()
	logf("controller started (pid %d); its log is in %s", p.cmd.Process.Pid, h.ctrl.logDir)
	if err := h.waitAdmission(ctx); err != nil {
		return err
	}
	if err := h.parentFloor(ctx, p); err != nil {
		return fmt.Errorf("floor with parents: %w", err)
	}
	if err := h.plane.waitIdle(ctx, "cold converge", time.Minute); err != nil {
		return err
	}
	if err := h.coldConverge(ctx, p); err != nil {
		return fmt.Errorf("cold converge: %w", err)
	}
	if h.res.noop, err = h.noopPass(ctx, p, "1"); err != nil {
		return fmt.Errorf("no-op pass: %w", err)
	}
	if h.res.memBefore, err = p.memory(); err != nil {
		return err
	}
	if h.o.heapProfile != "" {
		if err := saveHeapProfile(ctx, h.ctrl.pprof, h.o.heapProfile); err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
		logf("heap profile with the members written to %s", h.o.heapProfile)
	}
	if err := h.latency(ctx); err != nil {
		return fmt.Errorf("status latency: %w", err)
	}
	if err := h.outputLatency(ctx, p); err != nil {
		return fmt.Errorf("outputs latency: %w", err)
	}
	if err := h.unrelated(ctx, p); err != nil {
		return fmt.Errorf("unrelated objects: %w", err)
	}
	p.stop()
	p, err = h.restart(ctx)
	if err != nil {
		return err
	}
	return h.parentCost(ctx)
}

// setup installs the CRDs, the namespaces and the Bundles, and starts the
// harness's watches.
func (h *harness) setup(ctx context.Context, kubeconfig string) error {
	cmd := exec.CommandContext(ctx, "kubectl", "--kubeconfig", kubeconfig, "apply", "--server-side", "-k", filepath.Join(h.root, "config", "crd"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("install the CRDs: %w", err)
	}
	scheme, err := reconcile.NewScheme()
	if err != nil {
		return err
	}
	if h.admin, err = client.New(h.adminRC, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	if err := h.waitEstablished(ctx, "bundles.stencil.dev", "compositions.stencil.dev"); err != nil {
		return err
	}
	if len(h.ctrl.webhook) > 0 {
		// As `make run`: config/webhook, which the controller points at
		// itself and gives its CA.
		cmd := exec.CommandContext(ctx, filepath.Join(h.root, "hack", "webhook-loopback.sh"))
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("install the webhook configurations: %w", err)
		}
	}
	for _, ns := range []string{nsBench, nsFloor, nsParents, nsRoll, nsUnrelated} {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := h.admin.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for _, b := range []*v1alpha1.Bundle{benchBundle(benchBundleName, h.o.children), rollBundle(rollBundleName), outputsBundle(outputsBundleName)} {
		if err := h.admin.Create(ctx, b); apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("Bundle %s exists: the cluster holds an earlier run; delete the Bundles %s and %s and the namespaces %s, %s, %s, %s and %s",
				b.Name, benchBundleName, rollBundleName, nsBench, nsFloor, nsParents, nsRoll, nsUnrelated)
		} else if err != nil {
			return fmt.Errorf("create Bundle %s: %w", b.Name, err)
		}
	}
	c, err := cache.New(h.adminRC, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{nsBench: {}, nsRoll: {}}})
	if err != nil {
		return err
	}
	h.watch, err = startWatcher(ctx, c)
	return err
}

func (h *harness) waitEstablished(ctx context.Context, names ...string) error {
	for _, name := range names {
		err := poll(ctx, time.Minute, func() (bool, error) {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := h.admin.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return false, client.IgnoreNotFound(err)
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s: %w", name, err)
		}
	}
	return nil
}

// floor applies the rendered objects with the bare client, then deletes
// them, so that the cold converge starts from the cluster the floor
// started from: a Service's ClusterIP costs kube-apiserver 1.36 time
// linear in the Services that exist (its allocator counts the IPAddress
// objects on each allocation), and the converge's Services would
// otherwise each pay for the floor's thousand.
func (h *harness) floor(ctx context.Context) error {
	sets, err := renderSets(ctx, benchBundle(benchBundleName, h.o.children), nsFloor, h.o.n)
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(h.adminRC)
	cfg.QPS, cfg.Burst = float32(h.o.qps), h.o.burst
	ips, ipsKnown := h.ipAddresses(ctx)
	if err := h.plane.waitIdle(ctx, "floor", time.Minute); err != nil {
		return err
	}
	prof, err := h.startAPIServerProfile(ctx)
	if err != nil {
		return err
	}
	logf("floor: applying %d objects of %d sets", len(sets)*len(sets[0]), len(sets))
	plane := h.plane.cpu()
	h.res.floor, err = applyFloor(ctx, cfg, sets, h.o.concurrency, h.o.applyConcurrency, nil)
	h.res.floor.plane = h.plane.cpu().since(plane)
	if err != nil {
		return err
	}
	if prof != nil {
		if err := prof.stop(ctx, h.o.apiServerProfile+".floor"); err != nil {
			return fmt.Errorf("kube-apiserver CPU profile: %w", err)
		}
		logf("kube-apiserver's CPU profile of the floor written to %s.floor", h.o.apiServerProfile)
	}
	logf("floor: deleting its objects")
	return h.deleteSets(ctx, sets, ips, ipsKnown)
}

// startAPIServerProfile starts recording kube-apiserver's CPU profile when
// -apiserver-cpu-profile asks for it (nil otherwise).
func (h *harness) startAPIServerProfile(ctx context.Context) (*cpuProfiler, error) {
	if h.o.apiServerProfile == "" {
		return nil, nil
	}
	fetch, err := apiServerProfile(h.adminRC)
	if err != nil {
		return nil, err
	}
	return startCPUProfile(ctx, fetch)
}

// phaseProfiles are the CPU profiles recorded over one phase with the
// controller running: its own (-cpu-profile) and kube-apiserver's
// (-apiserver-cpu-profile), each nil when not asked for.
type phaseProfiles struct{ controller, apiServer *cpuProfiler }

// startProfiles starts the CPU profiles the flags ask for.
func (h *harness) startProfiles(ctx context.Context) (phaseProfiles, error) {
	var pp phaseProfiles
	var err error
	if h.o.cpuProfile != "" {
		if pp.controller, err = startCPUProfile(ctx, controllerProfile(h.ctrl.pprof)); err != nil {
			return pp, err
		}
	}
	pp.apiServer, err = h.startAPIServerProfile(ctx)
	return pp, err
}

// stopProfiles writes pp to the flags' files with suffix, for the phase
// what.
func (h *harness) stopProfiles(ctx context.Context, pp phaseProfiles, what, suffix string) error {
	for _, p := range []struct {
		prof       *cpuProfiler
		file, name string
	}{{pp.controller, h.o.cpuProfile + suffix, "the controller's"}, {pp.apiServer, h.o.apiServerProfile + suffix, "kube-apiserver's"}} {
		if p.prof == nil {
			continue
		}
		if err := p.prof.stop(ctx, p.file); err != nil {
			return fmt.Errorf("%s CPU profile: %w", p.name, err)
		}
		logf("%s CPU profile of %s written to %s", p.name, what, p.file)
	}
	return nil
}

// ipAddresses counts the cluster's IPAddress objects (networking.k8s.io/v1:
// the allocated Service IPs); false when the API server does not serve them.
func (h *harness) ipAddresses(ctx context.Context) (int, bool) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "IPAddressList"})
	if err := h.admin.List(ctx, list); err != nil {
		return 0, false
	}
	return len(list.Items), true
}

// window is the start of a measured stretch of the controller's requests.
type window struct {
	from time.Time
	base requestCounts
}

// begin opens a window on p's requests (p nil: a process not started yet).
func (h *harness) begin(ctx context.Context, p *controllerProc) (window, error) {
	w := window{from: time.Now(), base: requestCounts{}}
	if h.audit == nil && p != nil {
		m, err := p.scrape(ctx)
		if err != nil {
			return w, err
		}
		w.base = m.requests()
	}
	return w, nil
}

// end counts p's requests from w's start to now.
func (h *harness) end(ctx context.Context, p *controllerProc, w window) (requestCounts, error) {
	to := time.Now()
	if h.audit != nil {
		// The last events of requests answered just now may still be on
		// their way into the file.
		time.Sleep(time.Second)
		return h.audit.count(h.auditUser, w.from, to)
	}
	m, err := p.scrape(ctx)
	if err != nil {
		return nil, err
	}
	return m.requests().minus(w.base), nil
}

// coldConverge creates N Compositions at once and waits until all are Ready.
func (h *harness) coldConverge(ctx context.Context, p *controllerProc) error {
	before, err := p.scrape(ctx)
	if err != nil {
		return err
	}
	w, err := h.begin(ctx, p)
	if err != nil {
		return err
	}
	profs, err := h.startProfiles(ctx)
	if err != nil {
		return err
	}
	cpu, workersCPU := p.cpu()
	plane := h.plane.cpu()
	logf("cold converge: creating %d Compositions", h.o.n)
	err = forEach(ctx, 16, h.o.n, func(ctx context.Context, i int) error {
		return h.admin.Create(ctx, &v1alpha1.Composition{
			ObjectMeta: metav1.ObjectMeta{Name: compositionName(i), Namespace: nsBench},
			Spec:       v1alpha1.CompositionSpec{Bundle: benchBundleName},
		})
	})
	if err != nil {
		return err
	}
	timeout := 5*time.Minute + time.Duration(h.o.n)*300*time.Millisecond
	if err := h.watch.waitFor(ctx, timeout, "every Composition Ready", func() bool { return h.watch.readyCount(nsBench) == h.o.n }); err != nil {
		return err
	}
	h.res.cold.elapsed = time.Since(w.from)
	cpuEnd, workersEnd := p.cpu()
	h.res.cold.cpu, h.res.cold.workersCPU = cpuEnd-cpu, workersEnd-workersCPU
	h.res.cold.plane = h.plane.cpu().since(plane)
	logf("cold converge: %d Compositions Ready in %s", h.o.n, h.res.cold.elapsed.Round(time.Millisecond))
	reconciles := before.sum("controller_runtime_reconcile_total", map[string]string{"controller": "composition"})
	if _, err := p.idle(ctx, reconciles+float64(h.o.n), 5*time.Minute); err != nil {
		return err
	}
	after, err := p.scrape(ctx)
	if err != nil {
		return err
	}
	h.res.cold.passes = after.countsSince(before, "stencil_reconcile_passes_total", "outcome")
	h.res.cold.applies = after.countsSince(before, "stencil_applies_total", "result")
	if err := h.stopProfiles(ctx, profs, "the cold converge", ""); err != nil {
		return err
	}
	h.res.cold.requests, err = h.end(ctx, p, w)
	return err
}

// noopPass annotates the Bundle, which changes no generation but brings
// every Composition of the Bundle a pass, and counts what those passes cost.
func (h *harness) noopPass(ctx context.Context, p *controllerProc, mark string) (pass, error) {
	before, err := p.scrape(ctx)
	if err != nil {
		return pass{}, err
	}
	reconciles := before.sum("controller_runtime_reconcile_total", map[string]string{"controller": "composition"})
	w, err := h.begin(ctx, p)
	if err != nil {
		return pass{}, err
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{"bench.stencil.dev/pass": mark}}})
	b := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: benchBundleName}}
	if err := h.admin.Patch(ctx, b, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		return pass{}, err
	}
	done, err := p.idle(ctx, reconciles+float64(h.o.n), 10*time.Minute+time.Duration(h.o.n)*100*time.Millisecond)
	if err != nil {
		return pass{}, err
	}
	res := pass{elapsed: done.Sub(w.from)}
	res.requests, err = h.end(ctx, p, w)
	logf("no-op pass %s: %s", mark, res.elapsed.Round(time.Millisecond))
	return res, err
}

// restart starts a new controller with every Composition Ready and waits
// until it has reported each Ready again and is idle.
func (h *harness) restart(ctx context.Context) (*controllerProc, error) {
	w, err := h.begin(ctx, nil)
	if err != nil {
		return nil, err
	}
	p, err := startController(ctx, h.ctrl, 2)
	if err != nil {
		return nil, err
	}
	total := float64(h.o.n)
	err = poll(ctx, 10*time.Minute+time.Duration(h.o.n)*100*time.Millisecond, func() (bool, error) {
		m, err := p.scrape(ctx)
		return err == nil && m.sum("stencil_compositions", map[string]string{"ready": "True"}) >= total, nil
	})
	if err != nil {
		return p, fmt.Errorf("restart: %w", err)
	}
	h.res.restart.elapsed = time.Since(p.started)
	logf("restart: every Composition reported Ready %s after the controller started", h.res.restart.elapsed.Round(time.Millisecond))
	if _, err := p.idle(ctx, total, 5*time.Minute); err != nil {
		return p, err
	}
	h.res.restart.requests, err = h.end(ctx, p, w)
	if err != nil {
		return p, err
	}
	h.res.memRestart, err = p.memory()
	return p, err
}

// poll calls cond every 100ms until it is true, fails, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench] "+format+"\n", args...)
}

// webhookArgs are the controller's flags that serve its admission webhooks
// on loopback, as `make run` does (hack/run.sh): a certificate for
// localhost, the local cluster's webhook client CA verified.
func webhookArgs(cl localCluster) ([]string, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	certs := filepath.Join(cl.dir, "webhook-certs")
	if err := os.MkdirAll(certs, 0o700); err != nil {
		return nil, err
	}
	return []string{"--webhook-host", "localhost", "--webhook-port", port, "--webhook-cert-dir", certs,
		"--webhook-namespace", "stencil-system", "--webhook-client-ca", filepath.Join(cl.dir, "pki", "webhook-client-ca.crt"), "--webhook-client-name", "kube-apiserver-webhook-client"}, nil
}

// waitAdmission waits until the API server admits a Composition naming no
// ServiceAccount (stencil's admission policy refuses it until the
// controller has published its default one) and, when the controller
// serves its webhooks, until the mutating one answers: a dry-run create
// gets the ApplySet id label.
func (h *harness) waitAdmission(ctx context.Context) error {
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		probe := &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: nsBench}, Spec: v1alpha1.CompositionSpec{Bundle: benchBundleName}}
		last = h.admin.Create(ctx, probe, client.DryRunAll)
		if last == nil && (len(h.ctrl.webhook) == 0 || probe.Labels[applyset.LabelApplySetID] != "") {
			logf("the API server admits Compositions (and the controller's admission webhooks answer)")
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("a Composition was not admitted (or the mutating webhook did not answer) in 2m (last error: %v)", last)
}
