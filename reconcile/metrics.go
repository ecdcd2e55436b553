package reconcile

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/stencil-dev/stencil/api/v1alpha1"
)

var (
	renderDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "stencil_render_duration_seconds",
		Help:    "Time to load and render a Composition's bundle.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
	appliesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stencil_applies_total",
		Help: "Objects applied, by result: Created, Configured, Reapplied (sent, changed nothing), Unchanged (no request sent), Failed.",
	}, []string{"result"})
	dryRunsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "stencil_apply_dry_runs_total",
		Help: "Server-side dry-run applies sent to settle whether an apply would change a member (fields the server may default), each verdict remembered until the member or its desired form changes.",
	})
	prunesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "stencil_prunes_total",
		Help: "Members deleted by pruning or by the deletion of their Composition.",
	})
	compositionsByReadiness = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stencil_compositions",
		Help: "Compositions by the status of their Ready condition (True, False, Unknown).",
	}, []string{"ready"})
)

// RegisterMetrics adds stencil's metrics to controller-runtime's registry,
// which the manager serves on its metrics endpoint.
func RegisterMetrics() error {
	for _, c := range []prometheus.Collector{renderDuration, appliesTotal, dryRunsTotal, prunesTotal, compositionsByReadiness} {
		if err := metrics.Registry.Register(c); err != nil {
			if _, ok := err.(prometheus.AlreadyRegisteredError); !ok {
				return err
			}
		}
	}
	return nil
}

// readiness remembers each Composition's Ready status to publish the gauge.
type readiness struct {
	mu    sync.Mutex
	ready map[types.NamespacedName]metav1.ConditionStatus
}

func (r *readiness) record(comp *v1alpha1.Composition, conds []metav1.Condition) {
	s := metav1.ConditionUnknown
	if c := meta.FindStatusCondition(conds, ConditionReady); c != nil {
		s = c.Status
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready == nil {
		r.ready = map[types.NamespacedName]metav1.ConditionStatus{}
	}
	r.ready[types.NamespacedName{Namespace: comp.Namespace, Name: comp.Name}] = s
	r.publish()
}

func (r *readiness) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ready, key)
	r.publish()
}

func (r *readiness) publish() {
	counts := map[metav1.ConditionStatus]float64{metav1.ConditionTrue: 0, metav1.ConditionFalse: 0, metav1.ConditionUnknown: 0}
	for _, s := range r.ready {
		counts[s]++
	}
	for s, n := range counts {
		compositionsByReadiness.WithLabelValues(string(s)).Set(n)
	}
}

// AppliesTotal is the counter of applies by result, for tests and dashboards
// that read it in process.
func AppliesTotal() *prometheus.CounterVec { return appliesTotal }
