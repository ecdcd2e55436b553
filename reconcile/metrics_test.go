package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/internal/testenv"
)

// TestMetrics scrapes the controller's registry, as /metrics serves it,
// around a Composition's life: its convergence is timed by phase, a Bundle
// metadata change brings a pass the shortcut serves, the Ready gauge
// counts it, and its deletion is a pass of its own.
func TestMetrics(t *testing.T) {
	ctx := context.Background()
	ns := testenv.Namespace(t, k)
	b := bundle(t, "metrics-"+ns, map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  greeting: hello\n",
	})
	comp := composition(ns, "m", b.Name, "")
	mustCreate(t, comp)
	condition(t, ns, "m", v1alpha1.ConditionReady, metav1.ConditionTrue)

	// A pass observes its phases and counts itself once its status write
	// has returned, and the request counter counts that write once it has
	// been answered: the status can be read before. Waited for, not read
	// once.
	eventually(t, "the converging passes' metrics", func() (bool, error) {
		var missing []string
		for _, phase := range []string{"shortcut", "parent", "render", "apply", "prune", "status"} {
			if n := histogramCount(t, "stencil_reconcile_phase_duration_seconds", map[string]string{"phase": phase}); n == 0 {
				missing = append(missing, fmt.Sprintf("stencil_reconcile_phase_duration_seconds{phase=%q} has no observation", phase))
			}
		}
		if v := metricValue(t, "stencil_reconcile_passes_total", map[string]string{"outcome": "full"}); v < 1 {
			missing = append(missing, fmt.Sprintf("stencil_reconcile_passes_total{outcome=full} = %v, want >= 1", v))
		}
		if v := metricValue(t, "stencil_render_cache_total", map[string]string{"cache": "failed-render", "result": "miss"}); v < 1 {
			missing = append(missing, fmt.Sprintf("stencil_render_cache_total{cache=failed-render,result=miss} = %v, want >= 1: the render ran", v))
		}
		for _, req := range []map[string]string{
			{"verb": "watch", "resource": "compositions.stencil.dev"},
			{"verb": "patch", "resource": "configmaps"},
			{"verb": "patch", "resource": "compositions.stencil.dev/status"},
		} {
			if v := metricValue(t, "stencil_api_requests_total", req); v < 1 {
				missing = append(missing, fmt.Sprintf("stencil_api_requests_total%v = %v, want >= 1", req, v))
			}
		}
		return len(missing) == 0, errors.New(strings.Join(missing, "; "))
	})
	eventually(t, "the Ready gauge to count the Composition", func() (bool, error) {
		return metricValue(t, "stencil_compositions", map[string]string{"ready": "True", "reason": v1alpha1.ReasonReady}) >= 1, nil
	})

	// A Bundle metadata change enqueues the Composition; nothing it renders
	// changed, so the pass memo serves the pass. The pass that created the
	// member kept no memo (it wrote): the Bundle is touched until one does.
	hits := metricValue(t, "stencil_render_cache_total", map[string]string{"cache": "pass", "result": "hit"})
	unchanged := metricValue(t, "stencil_reconcile_passes_total", map[string]string{"outcome": "unchanged"})
	touches := 0
	eventually(t, "a pass served by the pass memo", func() (bool, error) {
		if metricValue(t, "stencil_render_cache_total", map[string]string{"cache": "pass", "result": "hit"}) > hits &&
			metricValue(t, "stencil_reconcile_passes_total", map[string]string{"outcome": "unchanged"}) > unchanged {
			return true, nil
		}
		if err := k.Get(ctx, client.ObjectKeyFromObject(b), b); err != nil {
			return false, err
		}
		touches++
		b.Labels = map[string]string{"touched": fmt.Sprint(touches)}
		return false, k.Update(ctx, b)
	})
	if v := metricValue(t, "stencil_render_cache_total", map[string]string{"cache": "bundle", "result": "hit"}); v < 1 {
		t.Errorf("stencil_render_cache_total{cache=bundle,result=hit} = %v, want >= 1: the Bundle was loaded twice at one generation", v)
	}

	// Deleted, the Composition is finalized in a pass of its own (the
	// gauge forgetting it is TestReadinessGauge's: other tests' Compositions
	// share the process-wide gauge).
	if err := k.Delete(ctx, comp); err != nil {
		t.Fatal(err)
	}
	gone(t, &v1alpha1.Composition{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m"}})
	// The pass that let it go counts itself after its last write.
	eventually(t, "a deleting pass counted", func() (bool, error) {
		v := metricValue(t, "stencil_reconcile_passes_total", map[string]string{"outcome": "deleting"})
		return v >= 1, fmt.Errorf("stencil_reconcile_passes_total{outcome=deleting} = %v, want >= 1", v)
	})
}

// series returns the samples of the named metric whose labels include want.
func series(t *testing.T, name string, want map[string]string) []*dto.Metric {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	var out []*dto.Metric
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue next
				}
			}
			out = append(out, m)
		}
	}
	return out
}

// metricValue sums the counters and gauges of the named metric matching want.
func metricValue(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	var sum float64
	for _, m := range series(t, name, want) {
		sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return sum
}

// histogramCount sums the observations of the named histogram matching want.
func histogramCount(t *testing.T, name string, want map[string]string) uint64 {
	t.Helper()
	var n uint64
	for _, m := range series(t, name, want) {
		n += m.GetHistogram().GetSampleCount()
	}
	return n
}
