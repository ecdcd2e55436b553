package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile"
	"github.com/stencil-dev/stencil/reconcile/engine"
	"github.com/stencil-dev/stencil/reconcile/shard"
)

// slowBundle renders one ConfigMap after a loop that keeps a worker busy
// for a while (a few hundred milliseconds on a CI core).
func slowBundle() map[string]string {
	return map[string]string{
		"templates/cm.yaml": `{{- range until 300 }}{{- range until 900 }}{{- $x := add 1 2 }}{{- end }}{{- end }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
data:
  slow: "yes"
`,
	}
}

// BenchmarkTenantFairness shows the controller serving tenant B's one
// Composition while tenant A has 50 slow ones queued: A creates 50
// Compositions whose render takes a worker for a while, then B creates
// one of the same Bundle, and the benchmark waits until B's is Ready. The
// controller has 2 workers and 2 render workers, as a small install.
//
//   - turns: the controller as shipped (its work queue and render pool
//     take turns by namespace).
//   - fifo: the same controller with a first come, first served work
//     queue, controller-runtime's default, for comparison.
//
// It reports b-ready-s (seconds from B's create until B is Ready),
// a-before-b (A's Compositions that became Ready before B's) and
// a-all-s (seconds until all of A's are Ready).
func BenchmarkTenantFairness(b *testing.B) {
	for _, mode := range []string{"turns", "fifo"} {
		b.Run(mode, func(b *testing.B) {
			for b.Loop() {
				fairnessRound(b, mode == "fifo")
			}
		})
	}
}

func fairnessRound(b *testing.B, fifo bool) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nsA, nsB := testenv.Namespace(b, k), testenv.Namespace(b, k)
	// The shared controller of the tests serves only Compositions without
	// a shard label: this benchmark's controller serves its own shard.
	shardName := "fair-" + nsA
	bundle := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "slow-" + nsA}, Spec: v1alpha1.BundleSpec{Files: slowBundle()}}
	if err := k.Create(ctx, bundle); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = k.Delete(context.Background(), bundle) }()

	mgr := startFairnessController(ctx, b, shardName, fifo)

	labelled := func(ns, name string) *v1alpha1.Composition {
		c := composition(ns, name, bundle.Name, `{}`)
		c.Labels = map[string]string{shard.Label: shardName}
		return c
	}
	start := time.Now()
	for i := range 50 {
		if err := k.Create(ctx, labelled(nsA, fmt.Sprint("a-", i))); err != nil {
			b.Fatal(err)
		}
	}
	// B's one arrives once the controller has seen A's burst (its cache
	// holds the 50), as a burst queued ahead of it.
	testenv.Eventually(b, 0, "the controller to see A's 50 Compositions", func() (bool, error) {
		var list v1alpha1.CompositionList
		if err := mgr.GetCache().List(ctx, &list, client.InNamespace(nsA)); err != nil {
			return false, err
		}
		return len(list.Items) == 50, fmt.Errorf("%d in its cache", len(list.Items))
	})
	bStart := time.Now()
	if err := k.Create(ctx, labelled(nsB, "b")); err != nil {
		b.Fatal(err)
	}
	ready := func(ns string) (int, error) {
		var list v1alpha1.CompositionList
		if err := k.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		n := 0
		for i := range list.Items {
			if cond(&list.Items[i], v1alpha1.ConditionReady) == metav1.ConditionTrue {
				n++
			}
		}
		return n, nil
	}
	var bReady time.Duration
	aBefore := -1
	testenv.Eventually(b, 5*time.Minute, "every Composition to be Ready", func() (bool, error) {
		nA, err := ready(nsA)
		if err != nil {
			return false, err
		}
		if aBefore < 0 {
			nB, err := ready(nsB)
			if err != nil {
				return false, err
			}
			if nB == 1 {
				bReady, aBefore = time.Since(bStart), nA
			}
		}
		return aBefore >= 0 && nA == 50, fmt.Errorf("B Ready after %s (%d of A before it), %d of A Ready", bReady, aBefore, nA)
	})
	b.ReportMetric(bReady.Seconds(), "b-ready-s")
	b.ReportMetric(float64(aBefore), "a-before-b")
	b.ReportMetric(time.Since(start).Seconds(), "a-all-s")
}

// startFairnessController starts a Composition controller of shard
// shardName until ctx ends, with controller-runtime's first come, first
// served queue when fifo, and returns its manager once the API server
// admits the shard's Compositions.
func startFairnessController(ctx context.Context, b *testing.B, shardName string, fifo bool) ctrl.Manager {
	cfg := rest.CopyConfig(controllerCfg)
	cfg.QPS = -1
	scheme, err := engine.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Cache: shard.CacheOptions(shardName),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		b.Fatal(err)
	}
	pool, err := sandbox.New(sandbox.Options{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	go func() { <-ctx.Done(); pool.Close() }()
	restore := reconcile.UseFIFOQueue(fifo)
	e, err := engine.New(mgr, engine.Options{
		Version: "v0.0.0-test", MaxConcurrentReconciles: 2, ApplyConcurrency: 4,
		Renderer: pool, Shard: shardName, WriteAsController: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	_, err = reconcile.SetupWithManager(ctx, mgr, e)
	restore()
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	// Until this controller has published its shard's default
	// ServiceAccount and the API server applies it, stencil's admission
	// policy refuses the shard's Compositions (they name none).
	testenv.AdmissionReady(b, k, e, shardName)

	return mgr
}
