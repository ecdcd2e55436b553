package admission

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestGuardLimitsStrangers: a caller that is not the API server gets its
// burst, then 429s at once, whatever it sends; another caller is not
// affected.
func TestGuardLimitsStrangers(t *testing.T) {
	served := 0
	g := guarded("/validate-stencil", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { served++ }), nil)
	send := func(addr string) int {
		r := httptest.NewRequest(http.MethodPost, "/validate-stencil", nil)
		r.RemoteAddr = addr
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		return w.Code
	}
	throttled := 0
	for range 100 {
		if send("10.0.0.1:5555") == http.StatusTooManyRequests {
			throttled++
		}
	}
	if served > guardStrangerBurst+2 || throttled < 100-guardStrangerBurst-2 {
		t.Errorf("a stranger's 100 requests: %d served, %d throttled; want about its burst of %d served", served, throttled, guardStrangerBurst)
	}
	if code := send("10.0.0.2:6666"); code != http.StatusOK {
		t.Errorf("another caller: %d, want it served", code)
	}
}

// TestGuardCapsInFlight: at most guardInFlight requests of the API server
// and guardStrangerInFlight of everyone else run at once on a path; the
// next of each is answered 429 without waiting, and strangers that hold
// all theirs hold nothing of the API server's.
func TestGuardCapsInFlight(t *testing.T) {
	release := make(chan struct{})
	var started, done sync.WaitGroup
	g := guarded("/mutate-stencil", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		started.Done()
		<-release
	}), []string{"kube-apiserver"}).(*guard)
	hold := func(r *http.Request) {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			g.ServeHTTP(httptest.NewRecorder(), r)
		}()
	}
	send := func(r *http.Request) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		return w
	}
	defer func() { close(release); done.Wait() }()

	for i := range guardStrangerInFlight {
		hold(stranger(fmt.Sprintf("10.1.0.%d:1", i)))
	}
	started.Wait()
	if w := send(stranger("10.2.0.1:1")); w.Code != http.StatusTooManyRequests || w.Header().Get("Connection") != "close" {
		t.Errorf("stranger %d in flight: %d %v, want 429 and the connection closed", guardStrangerInFlight+1, w.Code, w.Header())
	}
	for range guardInFlight {
		hold(apiServer())
	}
	started.Wait()
	if w := send(apiServer()); w.Code != http.StatusTooManyRequests {
		t.Errorf("API server request %d in flight: %d, want 429", guardInFlight+1, w.Code)
	}
}

// TestGuardBoundsBodies: a body declared over maxReviewBytes is refused
// unread (413), and one that turns out longer is cut at the bound.
func TestGuardBoundsBodies(t *testing.T) {
	var read int64
	var readErr error
	g := guarded("/validate-stencil", http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		read, readErr = io.Copy(io.Discard, r.Body)
	}), nil)
	r := stranger("10.3.0.1:1")
	r.ContentLength = maxReviewBytes + 1
	w := httptest.NewRecorder()
	g.ServeHTTP(w, r)
	if w.Code != http.StatusRequestEntityTooLarge || read != 0 {
		t.Errorf("a body declared over the bound: %d, %d bytes read; want 413 unread", w.Code, read)
	}
	r = stranger("10.3.0.2:1")
	r.Body = io.NopCloser(io.LimitReader(zeros{}, maxReviewBytes+100))
	r.ContentLength = -1
	g.ServeHTTP(httptest.NewRecorder(), r)
	var tooLarge *http.MaxBytesError
	if read != maxReviewBytes || !errors.As(readErr, &tooLarge) {
		t.Errorf("a body of unknown length over the bound: %d bytes read, %v; want %d and a MaxBytesError", read, readErr, maxReviewBytes)
	}
}

// stranger is a request from addr without a client certificate.
func stranger(addr string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/validate-stencil", nil)
	r.RemoteAddr = addr
	return r
}

// apiServer is a request whose client certificate, named kube-apiserver,
// verified at the handshake.
func apiServer() *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/validate-stencil", nil)
	r.RemoteAddr = "10.9.0.1:1"
	r.TLS = &tls.ConnectionState{VerifiedChains: [][]*x509.Certificate{{{Subject: pkix.Name{CommonName: "kube-apiserver"}}}}}
	return r
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
