package requests

import (
	"maps"
	"net/http"
	"sync"
)

// Counter counts the requests a client sends, by verb ("patch objects"):
// the floor's bare client, which has no audit user of its own.
type Counter struct {
	mu     sync.Mutex
	counts Counts
}

// NewCounter returns a Counter that has counted nothing.
func NewCounter() *Counter { return &Counter{counts: Counts{}} }

// Wrap counts each request through rt (rest.Config.Wrap's shape).
func (v *Counter) Wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		verb := map[string]string{http.MethodGet: "get", http.MethodPost: "create", http.MethodPut: "update",
			http.MethodPatch: "patch", http.MethodDelete: "delete"}[req.Method]
		v.mu.Lock()
		v.counts[verb+" objects"]++
		v.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// Reset forgets what was counted.
func (v *Counter) Reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.counts = Counts{}
}

// Snapshot returns a copy of the counts.
func (v *Counter) Snapshot() Counts {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.counts)
}

// roundTripFunc is a func as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip calls f.
func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
