package reconcile_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
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
	"github.com/stencil-dev/stencil/reconcile/plan"
	"github.com/stencil-dev/stencil/reconcile/shard"
	"github.com/stencil-dev/stencil/templates"
)

// BenchmarkReconcile measures one reconcile pass of a converged
// Composition (a Deployment and a Service, both ready), called directly
// on a reconciler of its own (as the controller's workers call it), with
// the controller's real cache, renderer (worker processes) and the API
// server of the tests, as the controller's ServiceAccount.
//
//   - noop: nothing changed since the last pass (what a member's status
//     event brings): no render, no request to the API server.
//   - full: the same pass with the memory of the last pass dropped: it
//     renders, compares every member, lists the set for pruning.
//
// It reports renders/op, render-ns/op (time spent in the renderer) and
// requests/op (every request to the API server, reads included) besides
// the time.
func BenchmarkReconcile(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := testenv.Namespace(b, k)
	bundle := &v1alpha1.Bundle{ObjectMeta: metav1.ObjectMeta{Name: "bench-" + ns}, Spec: v1alpha1.BundleSpec{Files: appService()}}
	comp := composition(ns, "web", bundle.Name, `{}`)
	for _, obj := range []client.Object{bundle, comp} {
		if err := k.Create(ctx, obj); err != nil {
			b.Fatal(err)
		}
	}
	b.Cleanup(func() { _ = k.Delete(context.Background(), bundle) })

	var requests, renders, renderNanos atomic.Int64
	cfg := rest.CopyConfig(controllerCfg)
	// No client-side rate limit (as controller-runtime's GetConfig
	// configures it): client-go's default of 5 requests a second would
	// measure the limiter, not the pass.
	cfg.QPS = -1
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return countAll{rt, &requests} }
	scheme, err := engine.NewScheme()
	if err != nil {
		b.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: scheme, Cache: shard.CacheOptions(""),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: ctrlconfig.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		b.Fatal(err)
	}
	pool, err := sandbox.New(sandbox.Options{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	r, err := reconcile.NewStandaloneReconciler(mgr, engine.Options{
		Version: "v0.0.0-test", MaxConcurrentReconciles: 1, ApplyConcurrency: 4,
		Renderer: countRenders{pool, &renders, &renderNanos}, WriteAsController: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("the cache did not sync")
	}
	// Until the controller's default ServiceAccount is in stencil's
	// admission policy, the API server refuses what names none.
	testenv.AdmissionReady(b, k, r, "")

	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "web"}}
	converge(b, ctx, r, req, &renders)

	b.Run("noop", func(b *testing.B) {
		renders0, requests0, nanos0 := renders.Load(), requests.Load(), renderNanos.Load()
		for b.Loop() {
			if _, err := r.Reconcile(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(renders.Load()-renders0)/float64(b.N), "renders/op")
		b.ReportMetric(float64(requests.Load()-requests0)/float64(b.N), "requests/op")
		b.ReportMetric(float64(renderNanos.Load()-nanos0)/float64(b.N), "render-ns/op")
	})
	b.Run("full", func(b *testing.B) {
		renders0, requests0, nanos0 := renders.Load(), requests.Load(), renderNanos.Load()
		for b.Loop() {
			r.ForgetLastPass(req.NamespacedName)
			if _, err := r.Reconcile(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(renders.Load()-renders0)/float64(b.N), "renders/op")
		b.ReportMetric(float64(requests.Load()-requests0)/float64(b.N), "requests/op")
		b.ReportMetric(float64(renderNanos.Load()-nanos0)/float64(b.N), "render-ns/op")
	})
}

// converge reconciles until the Composition is Ready and a pass renders
// nothing (the shared controller of the tests reconciles it too), marking
// its Deployment available as its controller would (envtest runs none).
func converge(b *testing.B, ctx context.Context, r *reconcile.Controller, req ctrl.Request, renders *atomic.Int64) {
	b.Helper()
	testenv.Eventually(b, 0, "the Composition to converge (Ready, and a pass that renders nothing)", func() (bool, error) {
		before := renders.Load()
		if _, err := r.Reconcile(ctx, req); err != nil {
			return false, fmt.Errorf("converging: %w", err)
		}
		dep := &appsv1.Deployment{}
		if err := k.Get(ctx, req.NamespacedName, dep); err != nil {
			return false, err
		}
		if dep.Status.ObservedGeneration != dep.Generation {
			// The controllers apply the Deployment too: again on a conflict.
			testenv.UpdateStatus(b, k, dep, func() {
				dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
					Conditions: []appsv1.DeploymentCondition{
						{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"},
						{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
					}}
			})
			return false, nil
		}
		comp := &v1alpha1.Composition{}
		if err := k.Get(ctx, req.NamespacedName, comp); err != nil {
			return false, err
		}
		return cond(comp, v1alpha1.ConditionReady) == metav1.ConditionTrue && comp.Status.ObservedGeneration == comp.Generation && renders.Load() == before,
			fmt.Errorf("Ready %s, generation %d observed %d, %d renders in the last pass", cond(comp, v1alpha1.ConditionReady), comp.Generation, comp.Status.ObservedGeneration, renders.Load()-before)
	})
}

// countAll counts every request.
type countAll struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countAll) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(req)
}

// countRenders counts renders.
type countRenders struct {
	next  plan.Renderer
	n     *atomic.Int64
	nanos *atomic.Int64 // time spent rendering
}

func (c countRenders) Render(ctx context.Context, b *templates.Bundle, in templates.Input) ([]*unstructured.Unstructured, error) {
	c.n.Add(1)
	start := time.Now()
	defer func() { c.nanos.Add(int64(time.Since(start))) }()
	return c.next.Render(ctx, b, in)
}
