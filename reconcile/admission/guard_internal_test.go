package admission

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/stencil-dev/stencil/publish"
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

// tokens are a conversion.Tokens of a map.
type tokens map[string]schema.GroupKind

func (t tokens) Kind(_ context.Context, token string) (schema.GroupKind, bool) {
	gk, ok := t[token]
	return gk, ok
}

// unreadable is a body that fails the test it is read in.
type unreadable struct{ t *testing.T }

func (u unreadable) Read([]byte) (int, error) {
	u.t.Error("the body of a stranger's request was read")
	return 0, io.EOF
}

// TestGuardConversionTokens: at the conversion webhook, only a path
// holding a known token reaches the handler, on the API server's budget
// (a client certificate counts for nothing there); any other caller gets
// a 404, its body unread, and the strangers' rate, by remote host.
func TestGuardConversionTokens(t *testing.T) {
	known := strings.Repeat("ab", publish.ConversionTokenBytes)
	served := 0
	g := guardedConversion(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }), []string{"kube-apiserver"},
		tokens{known: {Group: "app.example.com", Kind: "AppService"}})
	send := func(r *http.Request, path string) int {
		r.URL.Path = path
		r.Body = io.NopCloser(unreadable{t})
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		return w.Code
	}
	unknown := publish.ConversionPath(strings.Repeat("cd", publish.ConversionTokenBytes))
	for _, path := range []string{"/convert", "/convert/", unknown} {
		if code := send(stranger("10.4.0.1:1"), path); code != http.StatusNotFound {
			t.Errorf("a stranger at %s: %d, want 404", path, code)
		}
		if code := send(apiServer(), path); code != http.StatusNotFound {
			t.Errorf("a verified client certificate at %s: %d, want 404", path, code)
		}
	}
	if served != 0 {
		t.Errorf("%d requests without a known token reached the handler", served)
	}
	throttled := 0
	for range 100 {
		if send(stranger("10.4.0.2:1"), unknown) == http.StatusTooManyRequests {
			throttled++
		}
	}
	if throttled < 100-guardStrangerBurst-2 {
		t.Errorf("a stranger's 100 requests: %d throttled; want all but about its burst of %d", throttled, guardStrangerBurst)
	}
	for i := range 100 {
		r := stranger("10.4.0.3:1")
		r.URL.Path = publish.ConversionPath(known)
		w := httptest.NewRecorder()
		g.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			t.Fatalf("request %d with the known token: %d, want it served (the API server's rate)", i, w.Code)
		}
	}
	if served != 100 {
		t.Errorf("%d requests with the known token served, want 100", served)
	}
}
