package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stencil-dev/stencil/internal/testenv"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		samples []time.Duration
		p       float64
		want    time.Duration
	}{
		{"no samples", nil, 50, 0},
		{"one sample", ms(7), 95, 7 * time.Millisecond},
		{"median of an odd count, unsorted", ms(30, 10, 20), 50, 20 * time.Millisecond},
		{"nearest rank rounds up", ms(1, 2, 3, 4), 50, 2 * time.Millisecond},
		{"p95 of twenty is the nineteenth", ms(20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 95, 19 * time.Millisecond},
		{"p100 is the largest", ms(5, 9, 1), 100, 9 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.samples, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.samples, tc.p, got, tc.want)
			}
		})
	}
}

// auditLines are audit events as the API server writes them with
// omitStages: [RequestReceived], trimmed to the fields read.
const auditLines = `{"kind":"Event","auditID":"a1","stage":"ResponseComplete","verb":"get","user":{"username":"ctl"},"objectRef":{"resource":"compositions","namespace":"bench","name":"c-1","apiGroup":"stencil.dev"},"requestURI":"/apis/stencil.dev/v1alpha1/namespaces/bench/compositions/c-1","requestReceivedTimestamp":"2026-01-01T10:00:01.000000Z"}
{"kind":"Event","auditID":"a2","stage":"ResponseStarted","verb":"watch","user":{"username":"ctl"},"objectRef":{"resource":"configmaps","apiVersion":"v1"},"requestURI":"/api/v1/configmaps?watch=true","requestReceivedTimestamp":"2026-01-01T10:00:02.000000Z"}
{"kind":"Event","auditID":"a3","stage":"ResponseComplete","verb":"patch","user":{"username":"ctl"},"objectRef":{"resource":"compositions","subresource":"status","apiGroup":"stencil.dev"},"requestURI":"/apis/stencil.dev/v1alpha1/namespaces/bench/compositions/c-1/status","requestReceivedTimestamp":"2026-01-01T10:00:03.000000Z"}
{"kind":"Event","auditID":"a2","stage":"ResponseComplete","verb":"watch","user":{"username":"ctl"},"objectRef":{"resource":"configmaps","apiVersion":"v1"},"requestURI":"/api/v1/configmaps?watch=true","requestReceivedTimestamp":"2026-01-01T10:00:02.000000Z"}
{"kind":"Event","auditID":"a4","stage":"ResponseComplete","verb":"get","user":{"username":"admin"},"objectRef":{"resource":"compositions","apiGroup":"stencil.dev"},"requestURI":"/apis/stencil.dev/v1alpha1/namespaces/bench/compositions/c-1","requestReceivedTimestamp":"2026-01-01T10:00:03.000000Z"}
{"kind":"Event","auditID":"a5","stage":"ResponseComplete","verb":"get","user":{"username":"ctl"},"requestURI":"/apis?timeout=32s","requestReceivedTimestamp":"2026-01-01T10:00:04.000000Z"}
{"kind":"Event","auditID":"a6","stage":"ResponseComplete","verb":"create","user":{"username":"ctl"},"objectRef":{"resource":"events","apiGroup":"events.k8s.io"},"requestURI":"/apis/events.k8s.io/v1/namespaces/bench/events","requestReceivedTimestamp":"2026-01-01T10:00:09.000000Z"}
`

func TestCountAudit(t *testing.T) {
	at := func(s string) time.Time {
		ts, err := time.Parse(time.RFC3339, "2026-01-01T10:00:"+s+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return ts
	}
	for _, tc := range []struct {
		name        string
		user        string
		from, to    time.Time
		want        requestCounts
		reads, wrts int
	}{
		{
			name: "a watch logged at two stages counts once; other users and later requests do not count",
			user: "ctl", from: at("00"), to: at("05"),
			want:  requestCounts{"get compositions.stencil.dev": 1, "watch configmaps": 1, "patch compositions.stencil.dev/status": 1, "get /apis": 1},
			reads: 3, wrts: 1,
		},
		{
			name: "the window is closed at its start, open at its end",
			user: "ctl", from: at("02"), to: at("03"),
			want:  requestCounts{"watch configmaps": 1},
			reads: 1, wrts: 0,
		},
		{
			name: "creates are writes",
			user: "ctl", from: at("05"), to: at("10"),
			want:  requestCounts{"create events.events.k8s.io": 1},
			reads: 0, wrts: 1,
		},
		{
			name: "another user",
			user: "admin", from: at("00"), to: at("10"),
			want:  requestCounts{"get compositions.stencil.dev": 1},
			reads: 1, wrts: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := countAudit(strings.NewReader(auditLines), tc.user, tc.from, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if got.reads() != tc.reads || got.writes() != tc.wrts {
				t.Errorf("reads, writes = %d, %d; want %d, %d", got.reads(), got.writes(), tc.reads, tc.wrts)
			}
		})
	}
}

func TestCountAuditRejectsABrokenLine(t *testing.T) {
	_, err := countAudit(strings.NewReader(`{"username":"ctl"`+"\n"), "ctl", time.Time{}, time.Now())
	if err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("err = %v, want one naming line 1", err)
	}
}

func TestRequestCountsTop(t *testing.T) {
	c := requestCounts{"get a": 3, "list b": 5, "patch c": 3, "watch d": 1}
	want := []string{"5 list b", "3 get a", "3 patch c"}
	if diff := cmp.Diff(want, c.top(3)); diff != "" {
		t.Errorf("top (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(requestCounts{"list b": 2, "get z": 1}, requestCounts{"list b": 7, "get a": 3, "get z": 1}.minus(requestCounts{"list b": 5, "get a": 3})); diff != "" {
		t.Errorf("minus (-want +got):\n%s", diff)
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP controller_runtime_reconcile_total Total number of reconciliations per controller
# TYPE controller_runtime_reconcile_total counter
controller_runtime_reconcile_total{controller="composition",result="success"} 42
controller_runtime_reconcile_total{controller="composition",result="error"} 3
controller_runtime_reconcile_total{controller="bundle",result="success"} 2
stencil_compositions{ready="True",reason="Ready"} 40
stencil_compositions{reason="Other, \"quoted\"",ready="False"} 1
workqueue_depth{controller="composition",name="composition"} 0
stencil_api_requests_total{resource="compositions.stencil.dev",verb="get"} 7
process_resident_memory_bytes 9.5e+07
`
	samples, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	m := metricSet(samples)
	for _, tc := range []struct {
		name  string
		match map[string]string
		want  float64
	}{
		{"controller_runtime_reconcile_total", map[string]string{"controller": "composition"}, 45},
		{"stencil_compositions", map[string]string{"ready": "True"}, 40},
		{"stencil_compositions", map[string]string{"reason": `Other, "quoted"`}, 1},
		{"workqueue_depth", map[string]string{"name": "composition"}, 0},
		{"process_resident_memory_bytes", nil, 9.5e7},
		{"absent", nil, 0},
	} {
		if got := m.sum(tc.name, tc.match); got != tc.want {
			t.Errorf("sum(%s, %v) = %v, want %v", tc.name, tc.match, got, tc.want)
		}
	}
	if diff := cmp.Diff(requestCounts{"get compositions.stencil.dev": 7}, m.requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
	if _, err := parseMetrics(strings.NewReader(`broken{a="b 1` + "\n")); err == nil {
		t.Error("a label value without its closing quote parsed")
	}
}

func TestDeploymentCurrent(t *testing.T) {
	deployment := func(updated, available int32) *appsv1.Deployment {
		replicas := int32(2)
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "roll", Namespace: "bench-roll", Generation: 3},
			Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
			Status: appsv1.DeploymentStatus{
				ObservedGeneration: 3, Replicas: 2, UpdatedReplicas: updated, ReadyReplicas: available, AvailableReplicas: available,
				Conditions: []appsv1.DeploymentCondition{
					{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
					{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
				},
			},
		}
	}
	// As an informer hands it over: no apiVersion, no kind.
	if deploymentCurrent(deployment(1, 2)) {
		t.Error("a Deployment with one of two replicas updated is Current")
	}
	if !deploymentCurrent(deployment(2, 2)) {
		t.Error("a Deployment with every replica updated and available is not Current")
	}
}

func TestPrintAFailedRun(t *testing.T) {
	r := &results{countedBy: "test", floor: floorResult{elapsed: 2 * time.Second, objects: 10, requests: requestCounts{"patch objects": 10}}}
	var b strings.Builder
	r.print(&b, options{n: 2, children: 5}, 2)
	out := b.String()
	for _, want := range []string{
		"floor: bare server-side apply  2s",
		"floor with parents             -",
		"stencil controller             -",
		"Restart: controller start → every Composition reported Ready again (2 existing): -",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for line := range strings.Lines(out) {
		if strings.HasSuffix(strings.TrimSuffix(line, "\n"), " ") {
			t.Errorf("line %q ends in a space", line)
		}
	}
}

func TestUnselectedReads(t *testing.T) {
	lines := `{"auditID":"1","verb":"list","user":{"username":"ctl"},"objectRef":{"resource":"configmaps"},"requestURI":"/api/v1/configmaps?labelSelector=applyset.kubernetes.io%2Fpart-of&limit=500","requestReceivedTimestamp":"2026-01-01T10:00:01Z"}
{"auditID":"2","verb":"watch","user":{"username":"ctl"},"objectRef":{"resource":"secrets"},"requestURI":"/api/v1/secrets?allowWatchBookmarks=true&watch=true","requestReceivedTimestamp":"2026-01-01T10:00:02Z"}
{"auditID":"2","verb":"watch","user":{"username":"ctl"},"objectRef":{"resource":"secrets"},"requestURI":"/api/v1/secrets?allowWatchBookmarks=true&watch=true","requestReceivedTimestamp":"2026-01-01T10:00:02Z"}
{"auditID":"3","verb":"list","user":{"username":"ctl"},"objectRef":{"resource":"configmaps","apiGroup":"other.example"},"requestURI":"/apis/other.example/v1/configmaps","requestReceivedTimestamp":"2026-01-01T10:00:03Z"}
{"auditID":"4","verb":"get","user":{"username":"ctl"},"objectRef":{"resource":"configmaps"},"requestURI":"/api/v1/namespaces/a/configmaps/b","requestReceivedTimestamp":"2026-01-01T10:00:04Z"}
{"auditID":"5","verb":"list","user":{"username":"admin"},"objectRef":{"resource":"configmaps"},"requestURI":"/api/v1/configmaps","requestReceivedTimestamp":"2026-01-01T10:00:05Z"}
`
	n, err := unselectedReads(strings.NewReader(lines), "ctl", time.Time{}, time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("unselected reads = %d, want 1 (the watch of Secrets without a selector, once)", n)
	}
}

func TestParseStatus(t *testing.T) {
	status := "Name:\tstencil\nUmask:\t0022\nVmHWM:\t  204000 kB\nVmRSS:\t  190000 kB\nRssAnon:\t  120000 kB\nRssFile:\t   70000 kB\nRssShmem:\t       0 kB\nThreads:\t17\n"
	want := map[string]int{"VmHWM": 204000, "VmRSS": 190000, "RssAnon": 120000, "RssFile": 70000, "RssShmem": 0}
	if diff := cmp.Diff(want, parseStatus(status)); diff != "" {
		t.Errorf("parseStatus (-want +got):\n%s", diff)
	}
}

func TestRSSSplitKeepsLargestSample(t *testing.T) {
	var s rssSplit
	for _, sample := range [][2]int{{50, 60}, {90, 60}, {80, 65}} {
		s.record(sample[0], sample[1])
	}
	if anon, file := s.peak(); anon != 90 || file != 60 {
		t.Errorf("peak = %d anon, %d file; want the sample of the largest sum, 90 and 60", anon, file)
	}
}

func TestParseStatCPU(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
	stat := "4242 (stencil (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 1234 566 0 0 20 0 17 0\n"
	got, err := parseStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if want := 18 * time.Second; got != want {
		t.Errorf("parseStatCPU = %s, want %s (1234 + 566 ticks of 10 ms)", got, want)
	}
	if _, err := parseStatCPU("4242 stencil S 1"); err == nil {
		t.Error("parseStatCPU of a line without a command name: no error")
	}
}

func TestControlPlaneCPU(t *testing.T) {
	before := planeCPU{"kube-apiserver": 2 * time.Second, "etcd": time.Second}
	after := planeCPU{"kube-apiserver": 6 * time.Second, "etcd": 1500 * time.Millisecond}
	used := after.since(before)
	if used["kube-apiserver"] != 4*time.Second || used["etcd"] != 500*time.Millisecond {
		t.Errorf("since = %v", used)
	}
	if after.since(nil) != nil || planeCPU(nil).since(before) != nil {
		t.Error("since with an unknown side is not nil")
	}
	if got, want := used.perEach(1000, "Composition"), "kube-apiserver 4s (4.0 ms per Composition), etcd 500ms (0.5 ms per Composition)"; got != want {
		t.Errorf("perEach = %q, want %q", got, want)
	}
	// The harness's own process stands in for a cluster's.
	dir := t.TempDir()
	for _, name := range planeProcesses {
		if err := os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := (&controlPlane{pidDir: dir}).cpu(); len(got) != len(planeProcesses) {
		t.Errorf("cpu of live pids = %v", got)
	}
	if got := (&controlPlane{pidDir: t.TempDir()}).cpu(); got != nil {
		t.Errorf("cpu without pid files = %v, want nil", got)
	}
	if got := (*controlPlane)(nil).cpu(); got != nil {
		t.Errorf("cpu of no cluster = %v, want nil", got)
	}
}

func TestPrintControlPlaneCPU(t *testing.T) {
	r := &results{countedBy: "test",
		floor:           floorResult{elapsed: 2 * time.Second, objects: 10, plane: planeCPU{"kube-apiserver": time.Second, "etcd": time.Second}},
		parents:         floorResult{elapsed: 3 * time.Second, objects: 10, plane: planeCPU{"kube-apiserver": 2 * time.Second, "etcd": time.Second, "kube-controller-manager": 0}},
		parentsWebhooks: pass{cpu: time.Second},
		cold:            pass{elapsed: 4 * time.Second, cpu: 1500 * time.Millisecond, workersCPU: 500 * time.Millisecond, plane: planeCPU{"kube-apiserver": 3 * time.Second, "etcd": time.Second}}}
	var b strings.Builder
	r.print(&b, options{n: 2, children: 5}, 2)
	for _, want := range []string{
		"CPU used by the control plane: floor: kube-apiserver 1s (500.0 ms per set), etcd 1s (500.0 ms per set); " +
			"floor with parents: kube-apiserver 2s (1000.0 ms per set), etcd 1s (500.0 ms per set), kube-controller-manager 0s (0.0 ms per set); " +
			"cold converge: kube-apiserver 3s (1500.0 ms per Composition), etcd 1s (500.0 ms per Composition)\n",
		"ratio                          2.00×\n",
		"ratio to floor with parents    1.33×\n",
		"floor with parents ÷ floor     1.50×\n",
		"CPU per Composition, control plane, controller and render workers: floor with parents 2000.0 ms, cold converge 3000.0 ms (1.50×)\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// TestWaitIdle: waitIdle returns once the processes it reads are idle,
// and gives up after its limit, without failing, while one keeps busy.
// What it decided is read from what it says (its log), never from how
// long it took: the harness's own process stands in for the cluster's,
// and its CPU time, not this machine's load, is what waitIdle reads.
func TestWaitIdle(t *testing.T) {
	dir := t.TempDir()
	for _, name := range planeProcesses {
		if err := os.WriteFile(filepath.Join(dir, name+".pid"), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c := &controlPlane{pidDir: dir}
	// An idle process: waitIdle, given an hour, can only return by
	// finding it idle (or at the test's bound, failing).
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout)
	defer cancel()
	start := time.Now()
	var err error
	said := logOf(t, func() { err = c.waitIdle(ctx, "idle", time.Hour) })
	if err != nil {
		t.Fatalf("an idle process never looked idle: %v (%s)", err, said)
	}
	if !strings.Contains(said, "idle: the control plane is idle after") {
		t.Errorf("waitIdle of an idle process said %q, want that it is idle", said)
	}
	t.Logf("waitIdle of an idle process took %s", time.Since(start).Round(100*time.Millisecond))

	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	said = logOf(t, func() { err = c.waitIdle(ctx, "busy", 2*time.Second) })
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(said, "busy: the control plane still used") || strings.Contains(said, "is idle") {
		t.Errorf("waitIdle while the process kept a core busy said %q, want that it gave up after its limit", said)
	}
	if err := (*controlPlane)(nil).waitIdle(ctx, "none", time.Minute); err != nil {
		t.Errorf("no cluster: %v", err)
	}
}

// logOf is what f logs (logf writes to standard error).
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
	w.Close()
	said := <-read
	r.Close()
	return said
}

func TestCountsSince(t *testing.T) {
	before, err := parseMetrics(strings.NewReader(`stencil_reconcile_passes_total{outcome="full"} 3
stencil_reconcile_passes_total{outcome="unchanged"} 7
stencil_applies_total{result="Created"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseMetrics(strings.NewReader(`stencil_reconcile_passes_total{outcome="full"} 7
stencil_reconcile_passes_total{outcome="unchanged"} 7
stencil_reconcile_passes_total{outcome="error"} 2
stencil_applies_total{result="Created"} 9
`))
	if err != nil {
		t.Fatal(err)
	}
	got := perKey(metricSet(after).countsSince(before, "stencil_reconcile_passes_total", "outcome"), 2)
	if want := "error 1.00, full 2.00"; got != want {
		t.Errorf("passes per Composition: got %q, want %q", got, want)
	}
	if got := perKey(metricSet(after).countsSince(after, "stencil_applies_total", "result"), 2); got != "none" {
		t.Errorf("no growth: got %q, want none", got)
	}
}

// TestCPUProfilerMergesWindows: the windows a profiler fetched until it was
// stopped become one profile; a window that cannot be fetched is the
// recording's error.
func TestCPUProfilerMergesWindows(t *testing.T) {
	ctx := context.Background()
	var windows atomic.Int32
	fetch := func(ctx context.Context, w io.Writer) error {
		time.Sleep(20 * time.Millisecond)
		windows.Add(1)
		return pprof.Lookup("goroutine").WriteTo(w, 0)
	}
	p, err := startCPUProfile(ctx, fetch)
	if err != nil {
		t.Fatal(err)
	}
	// The profiler goes on to the next window, for as long as it runs:
	// stopped once it fetched two (however long they took), its profile
	// is their merge.
	testenv.Eventually(t, 0, "the profiler to fetch two windows", func() (bool, error) {
		return windows.Load() >= 2, fmt.Errorf("%d windows", windows.Load())
	})
	out := filepath.Join(t.TempDir(), "merged.pprof")
	if err := p.stop(ctx, out); err != nil {
		t.Fatal(err)
	}
	merged, err := os.ReadFile(out)
	if err != nil || len(merged) == 0 {
		t.Fatalf("merged profile: %d bytes, %v", len(merged), err)
	}
	if !bytes.HasPrefix(merged, []byte{0x1f, 0x8b}) {
		t.Errorf("the merged profile is not a gzipped profile: starts %x", merged[:min(len(merged), 4)])
	}

	failing, err := startCPUProfile(ctx, func(context.Context, io.Writer) error { return errors.New("refused") })
	if err != nil {
		t.Fatal(err)
	}
	if err := failing.stop(ctx, filepath.Join(t.TempDir(), "none.pprof")); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a window that cannot be fetched: got %v, want its error", err)
	}
}
