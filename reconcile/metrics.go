package reconcile

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/reconcile/applyset"
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
	prunesTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "stencil_prunes_total",
		Help: "Members deleted by pruning or by the deletion of their Composition.",
	})
	compositionsByReadiness = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stencil_compositions",
		Help: "Compositions and instances of published kinds by the status (True, False, Unknown) and reason of their Ready condition, as last reported; reasons stencil does not define count as Other.",
	}, []string{"ready", "reason"})
	phaseDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "stencil_reconcile_phase_duration_seconds",
		Help: "Time one reconcile of a Composition spent in each phase it ran: shortcut (the unchanged-pass check, " +
			"and the whole of a pass it ends), parent, render, prepare, apply, prune, status (observing the members and writing the status).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"phase"})
	passesTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stencil_reconcile_passes_total",
		Help: "Reconciles of Compositions by outcome: unchanged (nothing changed since the last successful pass: status only), " +
			"full (rendered, applied and pruned), stalled (waits for its inputs to change), error (retried with backoff), suspended, deleting.",
	}, []string{"outcome"})
	renderCacheTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stencil_render_cache_total",
		Help: "Lookups of the caches that spare a render, by cache (pass: the unchanged-pass memo; failed-render: a render known to fail; " +
			"bundle: parsed Bundles) and result (hit, miss).",
	}, []string{"cache", "result"})
	apiRequestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stencil_api_requests_total",
		Help: "Requests the controller sent to the API server, by Kubernetes verb (get, list, watch, create, update, patch, delete, deletecollection) " +
			"and resource (resource.group, with /subresource; discovery for discovery and OpenAPI documents).",
	}, []string{"verb", "resource"})
)

// Phases of a reconcile, the values of stencil_reconcile_phase_duration_seconds' label.
const (
	phaseShortcut = "shortcut"
	phaseParent   = "parent"
	phaseRender   = "render"
	phasePrepare  = "prepare"
	phaseApply    = "apply"
	phasePrune    = "prune"
	phaseStatus   = "status"
)

// Outcomes of a reconcile, the values of stencil_reconcile_passes_total's label.
const (
	outcomeUnchanged = "unchanged"
	outcomeFull      = "full"
	outcomeStalled   = "stalled"
	outcomeError     = "error"
	outcomeSuspended = "suspended"
	outcomeDeleting  = "deleting"
)

// Caches of stencil_render_cache_total.
const (
	cachePass         = "pass"
	cacheFailedRender = "failed-render"
	cacheBundle       = "bundle"
)

// RegisterMetrics adds stencil's metrics to controller-runtime's registry,
// which the manager serves on its metrics endpoint.
func RegisterMetrics() error {
	for _, c := range []prometheus.Collector{
		renderDuration, appliesTotal, applyset.DryRunsTotal, prunesTotal, compositionsByReadiness,
		phaseDuration, passesTotal, renderCacheTotal, apiRequestsTotal,
	} {
		if err := metrics.Registry.Register(c); err != nil {
			if _, ok := err.(prometheus.AlreadyRegisteredError); !ok {
				return err
			}
		}
	}
	return nil
}

// cacheLookup counts one lookup of a cache that spares a render.
func cacheLookup(cache string, hit bool) {
	result := "miss"
	if hit {
		result = "hit"
	}
	renderCacheTotal.WithLabelValues(cache, result).Inc()
}

// phaseTimer adds up the time one reconcile spends in each phase, to
// observe each phase once per pass (status is observed and written in two
// steps; parent is written before and after the render).
type phaseTimer map[string]time.Duration

// time runs f and adds its duration to phase.
func (t phaseTimer) time(phase string, f func()) {
	start := time.Now()
	f()
	t[phase] += time.Since(start)
}

// observe records the pass's phases in the histogram.
func (t phaseTimer) observe() {
	for phase, d := range t {
		phaseDuration.WithLabelValues(phase).Observe(d.Seconds())
	}
}

// outcome classifies a finished pass for stencil_reconcile_passes_total.
func outcome(s *scope, err error) string {
	switch {
	case err != nil:
		return outcomeError
	case s.deleting:
		return outcomeDeleting
	case s.comp.ParentSpec().Suspend:
		return outcomeSuspended
	case meta.IsStatusConditionTrue(s.status.Conditions, v1alpha1.ConditionStalled):
		return outcomeStalled
	case s.unchanged:
		return outcomeUnchanged
	}
	return outcomeFull
}

// readyReasons are the reasons stencil sets on the Ready condition: the
// bounded values of stencil_compositions' reason label.
var readyReasons = map[string]bool{
	v1alpha1.ReasonReady: true, v1alpha1.ReasonProgressing: true, v1alpha1.ReasonMemberFailed: true, v1alpha1.ReasonRenderFailed: true,
	v1alpha1.ReasonRefused: true, v1alpha1.ReasonBundleNotFound: true, v1alpha1.ReasonApplyFailed: true, v1alpha1.ReasonPruneFailed: true,
	v1alpha1.ReasonReconcileFailed: true, v1alpha1.ReasonSuspended: true, v1alpha1.ReasonDeleting: true, v1alpha1.ReasonForbidden: true,
	v1alpha1.ReasonInvalid: true, v1alpha1.ReasonBadRequest: true, v1alpha1.ReasonTooLarge: true, v1alpha1.ReasonEmptyRender: true,
	v1alpha1.ReasonFlapping: true, v1alpha1.ReasonHookFailed: true, v1alpha1.ReasonRenderTimeout: true, v1alpha1.ReasonRenderTooLarge: true,
}

// readyState is a Composition's Ready condition as the gauge counts it.
type readyState struct {
	status metav1.ConditionStatus
	reason string
}

// readiness remembers each Composition's Ready status and reason to
// publish the gauge.
type readiness struct {
	mu        sync.Mutex
	ready     map[parentKey]readyState
	published map[readyState]bool
	// gauge is stencil_compositions unless a test gives its own.
	gauge *prometheus.GaugeVec
}

func (r *readiness) record(comp applyset.Parent, conds []metav1.Condition) {
	st := readyState{status: metav1.ConditionUnknown}
	if c := meta.FindStatusCondition(conds, v1alpha1.ConditionReady); c != nil {
		st = readyState{status: c.Status, reason: c.Reason}
	}
	if !readyReasons[st.reason] && st.reason != "" {
		st.reason = "Other"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ready == nil {
		r.ready = map[parentKey]readyState{}
	}
	r.ready[keyOfParent(comp)] = st
	r.publish()
}

func (r *readiness) forget(key parentKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.ready, key)
	r.publish()
}

// publish sets the gauge from what is remembered: a series per status and
// reason some Composition has, 0 for True, False and Unknown when none has
// it, and none for a reason no Composition has any more.
func (r *readiness) publish() {
	gauge := r.gauge
	if gauge == nil {
		gauge = compositionsByReadiness
	}
	counts := map[readyState]float64{}
	for _, s := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
		counts[readyState{status: s}] = 0
	}
	for _, s := range r.ready {
		counts[s]++
	}
	for s := range r.published {
		if _, ok := counts[s]; !ok {
			gauge.DeleteLabelValues(string(s.status), s.reason)
		}
	}
	r.published = map[readyState]bool{}
	for s, n := range counts {
		gauge.WithLabelValues(string(s.status), s.reason).Set(n)
		r.published[s] = true
	}
}

// CountAPIRequests wraps a rest.Config's transport (see rest.Config.Wrap)
// to count each request in stencil_api_requests_total by Kubernetes verb
// and resource. client-go's rest_client_requests_total counts by HTTP
// method and code, which cannot tell a list from a get nor a watch from
// either.
func CountAPIRequests(rt http.RoundTripper) http.RoundTripper {
	return countingTransport{next: rt}
}

type countingTransport struct{ next http.RoundTripper }

// RoundTrip counts the request and sends it on.
func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	verb, resource := requestKind(req)
	apiRequestsTotal.WithLabelValues(verb, resource).Inc()
	return t.next.RoundTrip(req)
}

// requestKind derives the Kubernetes verb and resource of a request from
// its method and path: /api/v1[/namespaces/NS]/RESOURCE[/NAME[/SUB]] or
// /apis/GROUP/VERSION/... ; any other path (discovery, /openapi, /version)
// is a get of discovery. Names and namespaces never become labels.
func requestKind(req *http.Request) (verb, resource string) {
	info, err := requestInfos.NewRequestInfo(req)
	if err != nil || !info.IsResourceRequest {
		return strings.ToLower(req.Method), "discovery"
	}
	resource = info.Resource
	if info.APIGroup != "" {
		resource += "." + info.APIGroup
	}
	if info.Subresource != "" {
		resource += "/" + info.Subresource
	}
	return info.Verb, resource
}

// requestInfos parses request paths as the API server does.
var requestInfos = &request.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// AppliesTotal is the counter of applies by result, for tests and dashboards
// that read it in process.
func AppliesTotal() *prometheus.CounterVec { return appliesTotal }
