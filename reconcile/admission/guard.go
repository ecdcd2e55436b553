package admission

import (
	"net"
	"net/http"
	"strings"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/cache"

	"github.com/stencil-dev/stencil/publish"
	"github.com/stencil-dev/stencil/reconcile/conversion"
	"github.com/stencil-dev/stencil/reconcile/metrics"
)

// What one caller may cost a webhook path. The API server (a caller whose
// client certificate verifies at the TLS handshake; for the conversion
// webhook, one whose path holds a CRD's token) is trusted with a
// high rate, bounded only against a runaway, and guardInFlight requests at
// once; any other caller, named by its remote address, gets a few
// requests a second, which is plenty for nothing (it gets no review at
// all, see reviewer.Handle), and all such callers together
// guardStrangerInFlight requests at once, taken from a budget of their
// own: however slowly they send, the API server never waits for them.
// A review's body is at most maxReviewBytes, as controller-runtime's
// admission.Webhook reads it.
const (
	guardInFlight         = 32
	guardStrangerInFlight = 4
	guardAPIServerRate    = 1000
	guardAPIServerBurst   = 2000
	guardStrangerRate     = 5
	guardStrangerBurst    = 10
	guardCallers          = 4096
	guardCallerTTL        = time.Minute
	maxReviewBytes        = 7 << 20
)

// guard bounds what any caller can make a webhook path cost, before the
// request's body is even read: a token bucket per caller, at most
// guardInFlight requests at once of the API server and
// guardStrangerInFlight of everyone else, and a body of at most
// maxReviewBytes (the server's timeouts bound how long it may take,
// package server). A request past any of them is answered at once (429, or
// 413 for a body too large; 404 for a stranger to the conversion webhook)
// and its connection closed; the API server's
// failurePolicy Ignore lets it through unreviewed, and the controller
// reports what a review would have said. The throttled count is
// stencil_webhook_throttled_total.
type guard struct {
	next  http.Handler
	path  string
	names []string
	// inFlight is the API server's budget, strangers the others'.
	inFlight, strangers chan struct{}
	// callers holds a *rate.Limiter per caller seen within guardCallerTTL
	// (at most guardCallers, the least recently seen going first).
	callers *cache.LRUExpireCache
	// tokens, for the conversion webhook, tell the API server by the
	// token in the path (see guardedConversion).
	tokens conversion.Tokens
}

// guarded returns next behind a guard of path; names are the client
// certificate names that make a caller the API server (ClientNames).
func guarded(path string, next http.Handler, names []string) http.Handler {
	return &guard{next: next, path: path, names: names,
		inFlight: make(chan struct{}, guardInFlight), strangers: make(chan struct{}, guardStrangerInFlight),
		callers: cache.NewLRUExpireCache(guardCallers)}
}

// guardedConversion guards the conversion webhook (package conversion):
// the API server calls a CRD's conversion webhook without a client
// certificate, at the path of the CRD's token (publish.ConversionPath).
// A caller presenting a token of tokens gets the API server's rate and
// budget of reviews in flight, by the token's kind; any other caller
// (no token, or a token of no CRD stencil keeps), certificate or none,
// is a stranger, by remote host: within the strangers' rate it is
// answered 404 at once, its body unread, and nothing is done for it.
func guardedConversion(next http.Handler, names []string, tokens conversion.Tokens) http.Handler {
	g := guarded(publish.ConversionWebhookPath, next, names).(*guard)
	g.tokens = tokens
	return g
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	caller, limit, burst, kind := g.caller(r)
	if !g.limiter(caller, limit, burst).Allow() {
		g.throttle(w, kind, "rate", http.StatusTooManyRequests)
		return
	}
	if r.ContentLength > maxReviewBytes {
		g.throttle(w, kind, "size", http.StatusRequestEntityTooLarge)
		return
	}
	slots := g.strangers
	if kind == callerAPIServer {
		slots = g.inFlight
	}
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	default:
		g.throttle(w, kind, "in-flight", http.StatusTooManyRequests)
		return
	}
	if g.tokens != nil && kind != callerAPIServer {
		g.throttle(w, kind, "token", http.StatusNotFound)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxReviewBytes)
	g.next.ServeHTTP(w, r)
}

// The kinds of caller, as stencil_webhook_throttled_total names them.
const (
	callerAPIServer = "apiserver"
	callerOther     = "other"
)

// caller names the caller of r and its rate: the API server, by its
// verified certificate (by the token of its path, for the conversion
// webhook), or anyone else by remote host.
func (g *guard) caller(r *http.Request) (name string, limit rate.Limit, burst int, kind string) {
	if g.tokens != nil {
		if gk, ok := conversion.Kind(r.Context(), g.tokens, r.URL.Path); ok {
			return "token:" + gk.String(), guardAPIServerRate, guardAPIServerBurst, callerAPIServer
		}
	} else if verifiedCaller(r.TLS, g.names) {
		leaf := r.TLS.VerifiedChains[0][0]
		return "cert:" + leaf.Subject.CommonName, guardAPIServerRate, guardAPIServerBurst, callerAPIServer
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host, guardStrangerRate, guardStrangerBurst, callerOther
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

// throttle answers code unread, counting it, and closes the connection:
// what is left of the body is never read.
func (g *guard) throttle(w http.ResponseWriter, caller, why string, code int) {
	metrics.WebhookThrottled.WithLabelValues(g.path, caller, why).Inc()
	w.Header().Set("Connection", "close")
	if code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	http.Error(w, "stencil: "+strings.ToLower(http.StatusText(code)), code)
}
