package table

import (
	"strings"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/hack/benchscale/internal/cluster"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/options"
	"github.com/stencil-dev/stencil/hack/benchscale/internal/requests"
)

func TestPrintAFailedRun(t *testing.T) {
	r := &Results{CountedBy: "test", Floor: Floor{Elapsed: 2 * time.Second, Objects: 10, Requests: requests.Counts{"patch objects": 10}}}
	var b strings.Builder
	r.Print(&b, options.Options{N: 2, Children: 5}, 2)
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

func TestPrintControlPlaneCPU(t *testing.T) {
	r := &Results{CountedBy: "test",
		Floor:           Floor{Elapsed: 2 * time.Second, Objects: 10, Plane: cluster.CPU{"kube-apiserver": time.Second, "etcd": time.Second}},
		Parents:         Floor{Elapsed: 3 * time.Second, Objects: 10, Plane: cluster.CPU{"kube-apiserver": 2 * time.Second, "etcd": time.Second, "kube-controller-manager": 0}},
		ParentsWebhooks: Pass{CPU: time.Second},
		Cold:            Pass{Elapsed: 4 * time.Second, CPU: 1500 * time.Millisecond, WorkersCPU: 500 * time.Millisecond, Plane: cluster.CPU{"kube-apiserver": 3 * time.Second, "etcd": time.Second}}}
	var b strings.Builder
	r.Print(&b, options.Options{N: 2, Children: 5}, 2)
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

// TestPrintRollout: with the rollout benchmark's results, its tables
// instead of the others, headed by the version and how requests were
// counted.
func TestPrintRollout(t *testing.T) {
	r := &Results{Version: "v1", CountedBy: "the audit log", Rollout: &Rollout{N: 10, Namespaces: 2, Soak: time.Second,
		AllAtOnce: RolloutRun{Elapsed: 2 * time.Second, Requests: requests.Counts{"patch compositions.stencil.dev/status": 10, "get x": 10}},
		Waves: RolloutRun{Elapsed: 6 * time.Second, Requests: requests.Counts{"patch compositions.stencil.dev/status": 20},
			PerWave: []Wave{{Number: 1, Parents: 1, Ready: time.Second, Elapsed: 2 * time.Second, Requests: requests.Counts{"patch bundles.stencil.dev/status": 3}}}}}}
	var b strings.Builder
	r.Print(&b, options.Options{N: 10, Children: 5}, 2)
	out := b.String()
	for _, want := range []string{
		"stencil v1 on 2 CPUs; requests counted by the audit log\n",
		"| all at once                            | 2s   | 1.00×         | 2.0                 | 1.0               | 10, 0, 0 ",
		"| waves of 1, 10, 100, the rest; soak 1s | 6s   | 3.00×",
		"| 1    | 1       | 1s          | 2s",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Cold converge") {
		t.Errorf("the rollout's output has the scale tables:\n%s", out)
	}
}

func TestPerKey(t *testing.T) {
	if got, want := perKey(map[string]float64{"full": 4, "error": 2}, 2), "error 1.00, full 2.00"; got != want {
		t.Errorf("perKey = %q, want %q", got, want)
	}
	if got := perKey(nil, 2); got != "none" {
		t.Errorf("perKey of nothing = %q, want none", got)
	}
}
