package admission

import (
	"net"
	"net/http"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/cache"

	"github.com/stencil-dev/stencil/reconcile/metrics"
)

// What one caller may cost a webhook path. The API server (a caller whose
// client certificate verifies) is trusted with a high rate, bounded only
// against a runaway; any other caller, named by its remote address, gets
// a few requests a second, which is plenty for nothing (it gets no review
// at all, see reviewer.Handle). A path serves at most guardInFlight
// requests at once whoever sends them.
const (
	guardInFlight       = 32
	guardAPIServerRate  = 1000
	guardAPIServerBurst = 2000
	guardStrangerRate   = 5
	guardStrangerBurst  = 10
	guardCallers        = 4096
	guardCallerTTL      = time.Minute
)

// guard bounds what any caller can make a webhook path cost, before the
// request is even decoded: at most guardInFlight requests at once on the
// path, and a token bucket per caller. A request past either is answered
// 429 at once (the API server's failurePolicy Ignore lets it through
// unreviewed, and the controller reports what a review would have said);
// the throttled count is stencil_webhook_throttled_total.
type guard struct {
	next     http.Handler
	path     string
	names    []string
	inFlight chan struct{}
	// callers holds a *rate.Limiter per caller seen within guardCallerTTL
	// (at most guardCallers, the least recently seen going first).
	callers *cache.LRUExpireCache
}

// guarded returns next behind a guard of path; names are the client
// certificate names that make a caller the API server (ClientNames).
func guarded(path string, next http.Handler, names []string) http.Handler {
	return &guard{next: next, path: path, names: names, inFlight: make(chan struct{}, guardInFlight),
		callers: cache.NewLRUExpireCache(guardCallers)}
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller, limit, burst, kind := g.caller(r)
	if !g.limiter(caller, limit, burst).Allow() {
		g.throttle(w, kind, "rate")
		return
	}
	select {
	case g.inFlight <- struct{}{}:
		defer func() { <-g.inFlight }()
	default:
		g.throttle(w, kind, "in-flight")
		return
	}
	g.next.ServeHTTP(w, r)
}

// caller names the caller of r and its rate: the API server, by its
// verified certificate, or anyone else by remote host.
func (g *guard) caller(r *http.Request) (name string, limit rate.Limit, burst int, kind string) {
	if verifiedCaller(r.TLS, g.names) {
		leaf := r.TLS.VerifiedChains[0][0]
		return "cert:" + leaf.Subject.CommonName, guardAPIServerRate, guardAPIServerBurst, "apiserver"
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host, guardStrangerRate, guardStrangerBurst, "other"
}

// limiter returns caller's token bucket, made when first seen.
func (g *guard) limiter(caller string, limit rate.Limit, burst int) *rate.Limiter {
	if l, ok := g.callers.Get(caller); ok {
		return l.(*rate.Limiter)
	}
	l := rate.NewLimiter(limit, burst)
	g.callers.Add(caller, l, guardCallerTTL)
	return l
}

// throttle answers 429, counting it.
func (g *guard) throttle(w http.ResponseWriter, caller, why string) {
	metrics.WebhookThrottled.WithLabelValues(g.path, caller, why).Inc()
	w.Header().Set("Retry-After", "1")
	http.Error(w, "stencil: too many requests", http.StatusTooManyRequests)
}
