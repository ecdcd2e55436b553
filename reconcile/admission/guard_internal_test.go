package admission

import (
	"fmt"
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

// TestGuardCapsInFlight: at most guardInFlight requests run at once on a
// path; the next is answered 429 without waiting.
func TestGuardCapsInFlight(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(guardInFlight)
	g := guarded("/mutate-stencil", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		started.Done()
		<-release
	}), nil).(*guard)
	var done sync.WaitGroup
	for i := range guardInFlight {
		done.Add(1)
		go func() {
			defer done.Done()
			r := httptest.NewRequest(http.MethodPost, "/mutate-stencil", nil)
			r.RemoteAddr = fmt.Sprintf("10.1.0.%d:1", i)
			g.ServeHTTP(httptest.NewRecorder(), r)
		}()
	}
	started.Wait()
	r := httptest.NewRequest(http.MethodPost, "/mutate-stencil", nil)
	r.RemoteAddr = "10.2.0.1:1"
	w := httptest.NewRecorder()
	g.ServeHTTP(w, r)
	close(release)
	done.Wait()
	if w.Code != http.StatusTooManyRequests {
		t.Errorf("request %d in flight: %d, want 429", guardInFlight+1, w.Code)
	}
}
