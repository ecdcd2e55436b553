// Package metrics holds stencil's Prometheus metrics (registered with
// controller-runtime's registry by Register, served on the manager's
// metrics endpoint) and CountAPIRequests, the transport wrapper that
// counts every request the controller sends by verb and resource, and
// Readiness, which feeds stencil_compositions from each parent's Ready
// condition.
package metrics

import (
	"errors"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// RenderDuration is the time to load and render a parent's Bundle.
	RenderDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "stencil_render_duration_seconds",
		Help:    "Time to load and render a Composition's bundle.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
	// DryRuns counts the server-side dry-run applies sent to settle a
	// no-change decision (package applyset).
	DryRuns = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "stencil_apply_dry_runs_total",
		Help: "Server-side dry-run applies sent to settle whether an apply would change a member (fields the server may default), each verdict remembered until the member or its desired form changes.",
	})
	// Applies counts the objects applied, by result.
	Applies = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stencil_applies_total",
		Help: "Objects applied, by result: Created, Configured, Reapplied (sent, changed nothing), Unchanged (no request sent), Failed.",
	}, []string{"result"})
	// ApplyConflicts counts the applies over an existing object that the
	// API server refused because the object had changed since the read
	// it was judged on (package applyset: each carries that object's uid
	// and resourceVersion as preconditions).
	ApplyConflicts = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "stencil_apply_conflicts_total",
		Help: "Applies over an existing member that the API server refused because it had changed since stencil read and judged it (its uid and resourceVersion preconditions failed); each is read live and judged again.",
	})
	// Prunes counts the members deleted by pruning or deletion.
	Prunes = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "stencil_prunes_total",
		Help: "Members deleted by pruning or by the deletion of their Composition.",
	})
	// DriftRepairs counts the applies that undid another field manager's
	// changes of a member (see applyset.ApplyResult.Drift).
	DriftRepairs = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "stencil_drift_repairs_total",
		Help: "Applies that set back fields of a member another field manager had changed (each also a DriftRepaired event naming the fields and the managers).",
	})
	// PrunesBlocked counts the passes that pruned nothing because of the
	// prune budget or a protected kind.
	PrunesBlocked = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "stencil_prunes_blocked_total",
		Help: "Passes that pruned nothing because they would have pruned past the prune budget or a member of a protected kind (reason PruneBlocked).",
	})
	// Compositions counts parents by their Ready condition.
	Compositions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stencil_compositions",
		Help: "Compositions and instances of published kinds by the status (True, False, Unknown) and reason of their Ready condition, as last reported; reasons stencil does not define count as Other.",
	}, []string{"ready", "reason"})
	// PhaseDuration is the time one pass spent in each phase.
	PhaseDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "stencil_reconcile_phase_duration_seconds",
		Help: "Time one reconcile of a Composition spent in each phase it ran: shortcut (the unchanged-pass check, " +
			"and the whole of a pass it ends), parent, render, prepare, apply, prune, status (observing the members and writing the status).",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"phase"})
	// WebhookThrottled counts the admission requests the webhook answered
	// 429 (or 413, or 404 for a stranger to the conversion webhook)
	// without reading them (package admission's guard).
	WebhookThrottled = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stencil_webhook_throttled_total",
		Help: "Admission requests answered 429 (413 for size) before they were read, by path, caller (apiserver: a verified client certificate; other) and why (rate: the caller's rate; in-flight: the path's cap for the caller's kind, the API server's and everyone else's apart; size: a body over 7 MiB; token: a conversion request whose path holds no token of a CRD stencil keeps, answered 404).",
	}, []string{"path", "caller", "why"})
	// Lookups counts the lookups of renders (Helm's lookup, package
	// reconcile/lookup) the controller answered, by result, and the
	// informers it started for them.
	Lookups = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stencil_lookups_total",
		Help: "Lookups of renders answered from the cache, by result: answered, denied (the parent's ServiceAccount, or the controller, may not read it: answered empty); informer and informer-stopped count the informers started for them and stopped when no parent read from them for two minutes.",
	}, []string{"result"})
	// Passes counts the passes by outcome.
	Passes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stencil_reconcile_passes_total",
		Help: "Reconciles of Compositions by outcome: unchanged (nothing changed since the last successful pass: status only), " +
			"full (rendered, applied and pruned), stalled (waits for its inputs to change), error (retried with backoff), suspended, deleting.",
	}, []string{"outcome"})
	// RenderIsolation says which protections confine the render workers
	// (set by the controller command at start from the render pool).
	RenderIsolation = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "stencil_render_isolation",
		Help: "1 when the protection (landlock, seccomp) confines the render workers, 0 when the kernel lacks it and --render-isolation=best-effort let the controller start without it.",
	}, []string{"protection"})
	renderCache = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stencil_render_cache_total",
		Help: "Lookups of the caches that spare a render, by cache (pass: the unchanged-pass memo; failed-render: a render known to fail; " +
			"bundle: parsed Bundles) and result (hit, miss).",
	}, []string{"cache", "result"})
	apiRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stencil_api_requests_total",
		Help: "Requests the controller sent to the API server, by Kubernetes verb (get, list, watch, create, update, patch, delete, deletecollection) " +
			"and resource (resource.group, with /subresource; discovery for discovery and OpenAPI documents).",
	}, []string{"verb", "resource"})
)

// Caches of stencil_render_cache_total.
const (
	CachePass         = "pass"
	CacheFailedRender = "failed-render"
	CacheBundle       = "bundle"
)

// Register adds stencil's metrics to controller-runtime's registry,
// which the manager serves on its metrics endpoint.
func Register() error {
	for _, c := range []prometheus.Collector{
		RenderDuration, Applies, DryRuns, ApplyConflicts, Prunes, DriftRepairs, PrunesBlocked, Compositions,
		PhaseDuration, Passes, RenderIsolation, renderCache, apiRequests, WebhookThrottled, Lookups,
	} {
		if err := ctrlmetrics.Registry.Register(c); err != nil {
			var already prometheus.AlreadyRegisteredError
			if !errors.As(err, &already) {
				return err
			}
		}
	}
	return nil
}

// CacheLookup counts one lookup of a cache that spares a render.
func CacheLookup(cache string, hit bool) {
	result := "miss"
	if hit {
		result = "hit"
	}
	renderCache.WithLabelValues(cache, result).Inc()
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
	apiRequests.WithLabelValues(verb, resource).Inc()
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
