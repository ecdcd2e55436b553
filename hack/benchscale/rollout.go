package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/revision"
	"github.com/stencil-dev/stencil/reconcile/rollout"
)

// The rollout benchmark (-rollout, make bench-rollout): one Bundle behind
// N parents in -rollout-namespaces namespaces, each a Deployment of one
// pod (on kwok's nodes, so it really rolls out) and a ConfigMap. Three
// changes of the Bundle, in order:
//
//  1. all at once (the default policy): a new image, until every parent
//     is Ready on the new revision;
//  2. in waves of 1, 10, 100 and the rest (Exponential, factor 10), each
//     soaking -rollout-soak: another image, until the rollout is complete
//     and every parent Ready on it; per wave, its time and the status
//     writes made in it;
//  3. a revision whose pods are never scheduled (its nodeSelector names no
//     node, a template mistake that still renders), rolled out in the same
//     waves with a progress deadline of -rollout-deadline: the wave that
//     meets it stops the rollout (Rollback), and the parents that ever left
//     the revision before are counted.
//
// Requests are the controller's, counted in the API server's audit log.

// rolloutBundleName is the Bundle of the rollout benchmark.
const rolloutBundleName = "bench-rollout"

// rolloutNamespace is the i-th namespace of the rollout benchmark.
func rolloutNamespace(i int) string { return fmt.Sprintf("bench-tenant-%02d", i) }

// rolloutFiles are the rollout Bundle's files: its Deployment runs image,
// on nodes labelled node (type=kwok for all of them).
func rolloutFiles(image, nodeLabel string) map[string]string {
	return map[string]string{
		"templates/deployment.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Composition.Name }}
spec:
  replicas: 1
  selector:
    matchLabels: {app: {{ .Composition.Name }}}
  # The old pod goes before the new one comes: a pod per parent at most.
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 0, maxUnavailable: 1}
  template:
    metadata:
      labels: {app: {{ .Composition.Name }}}
    spec:
      nodeSelector: {` + nodeLabel + `}
      tolerations:
      - {key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}
      containers:
      - name: app
        image: ` + image + `
`,
		"templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Composition.Name }}
data:
  image: ` + image + `
`,
	}
}

// rolloutResult is what the rollout benchmark measured.
type rolloutResult struct {
	n, namespaces int
	soak          time.Duration
	allAtOnce     rolloutRun
	waves         rolloutRun
	failing       failingRun
}

// rolloutRun is one rollout of a new revision to every parent.
type rolloutRun struct {
	elapsed  time.Duration
	requests requestCounts
	perWave  []waveRun
}

// waveRun is one wave of a rollout in waves.
type waveRun struct {
	number, parents int
	// ready is the time from the wave's start until its parents were
	// Ready on the new revision; elapsed until the next wave started.
	ready, elapsed time.Duration
	requests       requestCounts
}

// failingRun is the rollout of a revision whose members never become Ready.
type failingRun struct {
	elapsed   time.Duration
	phase     v1alpha1.RolloutPhase
	wave      int32
	waves     int32
	moved     int // parents that ever rendered the failing revision
	requests  requestCounts
	message   string
	afterward int // parents on the revision before, once the rollout stopped
}

// rolloutWatch follows the parents' revisions and readiness and the
// Bundle's rollout.
type rolloutWatch struct {
	mu      sync.Mutex
	on      map[string]string   // parent → the revision hash of its last render
	ready   map[string]bool     // parent → Ready for its generation
	ever    map[string][]string // revision hash → parents ever seen on it
	rollout v1alpha1.RolloutStatus
	// waveAt maps a wave number to when it was first seen started.
	waveAt  map[int32]time.Time
	changed chan struct{}
}

func (w *rolloutWatch) observe(o any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch o := o.(type) {
	case *v1alpha1.Composition:
		key := o.Namespace + "/" + o.Name
		if h := o.Status.BundleRevision; h != "" && w.on[key] != h {
			w.on[key] = h
			if !slices.Contains(w.ever[h], key) {
				w.ever[h] = append(w.ever[h], key)
			}
		}
		w.ready[key] = o.Status.ObservedGeneration == o.Generation && meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionReady)
	case *v1alpha1.Bundle:
		if o.Name != rolloutBundleName {
			return
		}
		for _, r := range o.Status.Rollouts {
			if r.Shard == "" {
				w.rollout = r
				if _, seen := w.waveAt[r.Wave]; r.Target != "" && !seen {
					w.waveAt[r.Wave] = time.Now()
				}
			}
		}
	}
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// readyOn counts the parents Ready on revision hash.
func (w *rolloutWatch) readyOn(hash string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for key, h := range w.on {
		if h == hash && w.ready[key] {
			n++
		}
	}
	return n
}

func (w *rolloutWatch) state() v1alpha1.RolloutStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	return *w.rollout.DeepCopy()
}

// waitFor waits until cond holds, looking again on every change.
func (w *rolloutWatch) waitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	deadline := time.After(timeout)
	for !cond() {
		select {
		case <-w.changed:
		case <-time.After(time.Second):
		case <-deadline:
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// startRolloutWatch watches the rollout namespaces' Compositions and the Bundles.
func (h *harness) startRolloutWatch(ctx context.Context) (*rolloutWatch, error) {
	scheme, err := reconcile.NewScheme()
	if err != nil {
		return nil, err
	}
	namespaces := map[string]cache.Config{}
	for i := range h.o.rolloutNamespaces {
		namespaces[rolloutNamespace(i)] = cache.Config{}
	}
	c, err := cache.New(h.adminRC, cache.Options{Scheme: scheme, DefaultNamespaces: namespaces})
	if err != nil {
		return nil, err
	}
	w := &rolloutWatch{on: map[string]string{}, ready: map[string]bool{}, ever: map[string][]string{}, waveAt: map[int32]time.Time{}, changed: make(chan struct{}, 1)}
	for _, obj := range []client.Object{&v1alpha1.Composition{}, &v1alpha1.Bundle{}} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return nil, err
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { w.observe(o) },
			UpdateFunc: func(_, o any) { w.observe(o) },
		}); err != nil {
			return nil, err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return nil, fmt.Errorf("the rollout watch's cache did not sync")
	}
	return w, nil
}

// rolloutPhases runs the rollout benchmark.
func (h *harness) rolloutPhases(ctx context.Context) error {
	if h.audit == nil {
		return fmt.Errorf("the rollout benchmark counts requests in the API server's audit log: run it on the local cluster, or give -audit-log and -audit-user")
	}
	res := &rolloutResult{n: h.o.n, namespaces: h.o.rolloutNamespaces, soak: h.o.rolloutSoak}
	h.res.rollout = res
	p, err := startController(ctx, h.ctrl, 1)
	if err != nil {
		return err
	}
	defer func() { p.stop() }()
	logf("controller started (pid %d); its log is in %s", p.cmd.Process.Pid, h.ctrl.logDir)
	if err := h.waitAdmission(ctx); err != nil {
		return err
	}
	w, err := h.startRolloutWatch(ctx)
	if err != nil {
		return err
	}
	if err := h.addNodes(ctx, h.o.n/100+1); err != nil {
		return err
	}
	for i := range h.o.rolloutNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rolloutNamespace(i)}}
		if err := h.admin.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	if err := h.admin.Create(ctx, newBundle(rolloutBundleName, rolloutFiles("registry.example/app:1", "type: kwok"))); err != nil {
		return fmt.Errorf("create Bundle %s: %w", rolloutBundleName, err)
	}
	logf("rollout: creating %d parents in %d namespaces", h.o.n, h.o.rolloutNamespaces)
	if err := forEach(ctx, 16, h.o.n, func(ctx context.Context, i int) error {
		return h.admin.Create(ctx, &v1alpha1.Composition{
			ObjectMeta: metav1.ObjectMeta{Name: compositionName(i), Namespace: rolloutNamespace(i % h.o.rolloutNamespaces)},
			Spec:       v1alpha1.CompositionSpec{Bundle: rolloutBundleName},
		})
	}); err != nil {
		return err
	}
	first, err := h.currentHash(ctx, "")
	if err != nil {
		return err
	}
	if err := w.waitFor(ctx, 20*time.Minute, "every parent Ready on the first revision", func() bool { return w.readyOn(first) == h.o.n }); err != nil {
		return err
	}
	if err := h.plane.waitIdle(ctx, "all at once", time.Minute); err != nil {
		return err
	}

	// 1. All at once.
	logf("rollout: a new image to every parent at once")
	if res.allAtOnce, err = h.rollTo(ctx, w, first, rolloutFiles("registry.example/app:2", "type: kwok"), nil); err != nil {
		return fmt.Errorf("all at once: %w", err)
	}

	// 2. In waves of 1, 10, 100 and the rest.
	if err := h.plane.waitIdle(ctx, "waves", time.Minute); err != nil {
		return err
	}
	before, err := h.currentHash(ctx, "")
	if err != nil {
		return err
	}
	pol := h.wavesPolicy(30 * time.Minute)
	logf("rollout: another image in waves of 1, 10, 100 and the rest, soaking %s", h.o.rolloutSoak)
	if res.waves, err = h.rollTo(ctx, w, before, rolloutFiles("registry.example/app:3", "type: kwok"), pol); err != nil {
		return fmt.Errorf("waves: %w", err)
	}

	// 3. A revision whose pods are never scheduled.
	if err := h.plane.waitIdle(ctx, "failing revision", time.Minute); err != nil {
		return err
	}
	logf("rollout: a revision whose pods are never scheduled, in waves with a progress deadline of %s", h.o.rolloutDeadline)
	res.failing, err = h.rollFailing(ctx, w, h.wavesPolicy(h.o.rolloutDeadline))
	return err
}

// addNodes adds kwok nodes until there are n, as hack/local-cluster.sh
// makes its own (110 pods each: a pod per parent, the old one going
// before the new one comes), and waits until they are Ready.
func (h *harness) addNodes(ctx context.Context, n int) error {
	for i := range n {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kwok-rollout-%d", i),
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{"type": "kwok", "kubernetes.io/hostname": fmt.Sprintf("kwok-rollout-%d", i),
				"kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}}}
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110")}
		node.Status.Capacity, node.Status.Allocatable = capacity, capacity
		if err := h.admin.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %w", node.Name, err)
		}
	}
	logf("rollout: %d kwok nodes added; waiting for them to be Ready", n)
	return poll(ctx, 5*time.Minute, func() (bool, error) {
		list := &corev1.NodeList{}
		if err := h.admin.List(ctx, list, client.MatchingLabels{"type": "kwok"}); err != nil {
			return false, err
		}
		ready := 0
		for _, node := range list.Items {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready >= n, nil
	})
}

// wavesPolicy is the benchmark's rollout in waves: 1, 10, 100 and the
// rest, soaking -rollout-soak, failing a wave past deadline.
func (h *harness) wavesPolicy(deadline time.Duration) *v1alpha1.RolloutPolicy {
	one := intstr.FromInt32(1)
	return &v1alpha1.RolloutPolicy{Strategy: v1alpha1.RolloutWaves,
		Batch:            v1alpha1.RolloutBatch{Size: &one, Growth: v1alpha1.GrowthExponential, Factor: 10},
		Soak:             &metav1.Duration{Duration: h.o.rolloutSoak},
		ProgressDeadline: &metav1.Duration{Duration: deadline},
		OnFailure:        v1alpha1.FailureRollback}
}

// currentHash waits until the Bundle's status holds the revision of its
// generation, other than not, and returns it.
func (h *harness) currentHash(ctx context.Context, not string) (string, error) {
	var hash string
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := h.admin.Get(ctx, client.ObjectKey{Name: rolloutBundleName}, b); err != nil {
			return false, err
		}
		hash = b.Status.Revision
		return b.Status.ObservedGeneration == b.Generation && hash != "" && hash != not, nil
	})
	return hash, err
}

// setBundle writes the rollout Bundle's files and policy.
func (h *harness) setBundle(ctx context.Context, files map[string]string, pol *v1alpha1.RolloutPolicy) error {
	return poll(ctx, time.Minute, func() (bool, error) {
		b := &v1alpha1.Bundle{}
		if err := h.admin.Get(ctx, client.ObjectKey{Name: rolloutBundleName}, b); err != nil {
			return false, err
		}
		b.Spec.Files, b.Spec.Rollout = files, pol
		err := h.admin.Update(ctx, b)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// rollTo changes the Bundle to files under pol and waits until every
// parent is Ready on the new revision (and a rollout in waves is
// complete), counting the controller's requests, per wave too.
func (h *harness) rollTo(ctx context.Context, w *rolloutWatch, from string, files map[string]string, pol *v1alpha1.RolloutPolicy) (rolloutRun, error) {
	var run rolloutRun
	win, err := h.begin(ctx, nil)
	if err != nil {
		return run, err
	}
	w.mu.Lock()
	w.waveAt = map[int32]time.Time{}
	w.mu.Unlock()
	start := time.Now()
	if err := h.setBundle(ctx, files, pol); err != nil {
		return run, err
	}
	to, err := h.currentHash(ctx, from)
	if err != nil {
		return run, err
	}
	// A wave is Ready when the parents it brought are; the watch notes
	// when each wave started (the Bundle's status).
	readyAt := map[int32]time.Duration{}
	name := revision.Name(rolloutBundleName, to)
	err = w.waitFor(ctx, 60*time.Minute, "every parent Ready on the new revision", func() bool {
		st := w.state()
		if st.Target == name && st.Wave > 0 && w.readyOn(to) >= int(st.Updated) && st.Updated > 0 {
			if _, ok := readyAt[st.Wave]; !ok && st.WaveReady != nil {
				readyAt[st.Wave] = time.Since(start)
			}
		}
		return w.readyOn(to) == h.o.n && st.Stable == name && st.Target == ""
	})
	run.elapsed = time.Since(start)
	if err != nil {
		return run, err
	}
	if run.requests, err = h.end(ctx, nil, win); err != nil {
		return run, err
	}
	if pol == nil {
		return run, nil
	}
	w.mu.Lock()
	starts := make([]int32, 0, len(w.waveAt))
	for k := range w.waveAt {
		starts = append(starts, k)
	}
	slices.Sort(starts)
	at := copyTimes(w.waveAt)
	w.mu.Unlock()
	var sizes []int
	done := 0
	for _, total := range rollout.Batches(rollout.Policy(&v1alpha1.Bundle{Spec: v1alpha1.BundleSpec{Rollout: pol}}), h.o.n) {
		sizes, done = append(sizes, total-done), total
	}
	for i, k := range starts {
		from, until := at[k], start.Add(run.elapsed)
		if i+1 < len(starts) {
			until = at[starts[i+1]]
		}
		counts, err := h.audit.count(h.auditUser, from, until)
		if err != nil {
			return run, err
		}
		wr := waveRun{number: int(k), elapsed: until.Sub(from), requests: counts}
		if int(k)-1 < len(sizes) {
			wr.parents = sizes[k-1]
		}
		if r, ok := readyAt[k]; ok {
			wr.ready = r - from.Sub(start)
		}
		run.perWave = append(run.perWave, wr)
	}
	return run, nil
}

// copyTimes copies m.
func copyTimes(m map[int32]time.Time) map[int32]time.Time {
	out := make(map[int32]time.Time, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// rollFailing rolls out a revision whose pods are never scheduled and
// waits for the rollout to stop.
func (h *harness) rollFailing(ctx context.Context, w *rolloutWatch, pol *v1alpha1.RolloutPolicy) (failingRun, error) {
	var run failingRun
	before, err := h.currentHash(ctx, "")
	if err != nil {
		return run, err
	}
	win, err := h.begin(ctx, nil)
	if err != nil {
		return run, err
	}
	start := time.Now()
	if err := h.setBundle(ctx, rolloutFiles("registry.example/app:4", "bench.stencil.dev/no-such-node: \"true\""), pol); err != nil {
		return run, err
	}
	bad, err := h.currentHash(ctx, before)
	if err != nil {
		return run, err
	}
	err = w.waitFor(ctx, pol.ProgressDeadline.Duration+10*time.Minute, "the rollout of the failing revision to stop", func() bool {
		st := w.state()
		return st.Target == revision.Name(rolloutBundleName, bad) && (st.Phase == v1alpha1.RolloutRolledBack || st.Phase == v1alpha1.RolloutHalted)
	})
	run.elapsed = time.Since(start)
	if err != nil {
		return run, err
	}
	// The parents it moved go back (Rollback): wait for them.
	_ = w.waitFor(ctx, 5*time.Minute, "every parent back on the revision before", func() bool { return w.readyOn(before) == h.o.n })
	if run.requests, err = h.end(ctx, nil, win); err != nil {
		return run, err
	}
	st := w.state()
	run.phase, run.wave, run.waves, run.message = st.Phase, st.Wave, st.Waves, st.Message
	w.mu.Lock()
	run.moved = len(w.ever[bad])
	w.mu.Unlock()
	run.afterward = w.readyOn(before)
	return run, nil
}

// writeRollout writes the rollout benchmark's tables.
func (r *rolloutResult) write(out *strings.Builder) {
	fmt.Fprintf(out, "\nRollout of a Bundle change to %d parents in %d namespaces (each a Deployment of one pod on kwok and a ConfigMap)\n\n", r.n, r.namespaces)
	fmt.Fprintln(out, "| rollout\t| time\t| ÷ all at once\t| requests per parent\t| writes per parent\t| status writes (parents, Bundle, revisions)\t|")
	fmt.Fprintln(out, "| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t|")
	for _, row := range []struct {
		name string
		run  rolloutRun
	}{{"all at once", r.allAtOnce}, {fmt.Sprintf("waves of 1, 10, 100, the rest; soak %s", r.soak), r.waves}} {
		fmt.Fprintf(out, "| %s\t| %s\t| %s\t| %.1f\t| %.1f\t| %s\t|\n", row.name, dur(row.run.elapsed), ratio(row.run.elapsed, r.allAtOnce.elapsed),
			perEach(sumAll(row.run.requests), r.n), perEach(row.run.requests.writes(), r.n), statusWrites(row.run.requests))
	}
	for _, row := range []struct {
		name string
		run  rolloutRun
	}{{"all at once", r.allAtOnce}, {"in waves", r.waves}} {
		fmt.Fprintf(out, "\nThe controller's requests %s: %s\n", row.name, strings.Join(row.run.requests.top(8), ", "))
	}
	if len(r.waves.perWave) > 0 {
		fmt.Fprintln(out, "\n| wave\t| parents\t| Ready after\t| wave's time (soak included)\t| requests\t| status writes (parents, Bundle, revisions)\t|")
		fmt.Fprintln(out, "| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t|")
		for _, wv := range r.waves.perWave {
			fmt.Fprintf(out, "| %d\t| %d\t| %s\t| %s\t| %d\t| %s\t|\n", wv.number, wv.parents, dur(wv.ready), dur(wv.elapsed), sumAll(wv.requests), statusWrites(wv.requests))
		}
	}
	f := r.failing
	if f.phase != "" {
		kept := r.n - f.moved
		fmt.Fprintf(out, "\nA revision whose pods are never scheduled: %s in wave %d of %d after %s; parents moved to it: %d; never left the revision before: %d (%.1f%%); Ready on it once the rollout stopped: %d; %d requests, status writes (parents, Bundle, revisions) %s\n",
			f.phase, f.wave, f.waves, dur(f.elapsed), f.moved, kept, 100*float64(kept)/float64(max(r.n, 1)), f.afterward, sumAll(f.requests), statusWrites(f.requests))
		fmt.Fprintf(out, "(%s)\n", f.message)
	}
}

// sumAll counts every request.
func sumAll(c requestCounts) int { return c.reads() + c.writes() }

// statusWrites are the status writes of the parents, the Bundle and its
// revisions: "1012, 9, 14".
func statusWrites(c requestCounts) string {
	n := func(resource string) int { return c["patch "+resource] + c["update "+resource] }
	return fmt.Sprintf("%d, %d, %d", n("compositions.stencil.dev/status"), n("bundles.stencil.dev/status"), n("bundlerevisions.stencil.dev/status"))
}
