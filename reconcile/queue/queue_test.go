package queue_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/stencil-dev/stencil/internal/testenv"
	"github.com/stencil-dev/stencil/reconcile/queue"
)

func req(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

func newQueue() workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return queue.ByNamespace("", workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
}

// drain gets every waiting request, in the order the queue hands them
// out, marking each done.
func drain(q workqueue.TypedInterface[reconcile.Request]) []string {
	var got []string
	for q.Len() > 0 {
		r, _ := q.Get()
		got = append(got, r.String())
		q.Done(r)
	}
	return got
}

func TestTurns(t *testing.T) {
	t.Run("a tenant's burst delays another tenant's request by one", func(t *testing.T) {
		q := newQueue()
		defer q.ShutDown()
		for i := range 50 {
			q.Add(req("a", fmt.Sprint(i)))
		}
		q.Add(req("b", "one"))
		got := drain(q)
		if len(got) != 51 {
			t.Fatalf("got %d requests, want 51", len(got))
		}
		if got[1] != "b/one" {
			t.Errorf("b's request came %s, want second: %v", position(got, "b/one"), got[:5])
		}
	})
	t.Run("tenants take turns; each tenant keeps its order", func(t *testing.T) {
		q := newQueue()
		defer q.ShutDown()
		for _, r := range []reconcile.Request{req("a", "1"), req("a", "2"), req("a", "3"), req("b", "1"), req("c", "1"), req("b", "2")} {
			q.Add(r)
		}
		want := []string{"a/1", "b/1", "c/1", "a/2", "b/2", "a/3"}
		if diff := cmp.Diff(want, drain(q)); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
	})
	t.Run("a request added again while it waits is handed out once", func(t *testing.T) {
		q := newQueue()
		defer q.ShutDown()
		q.Add(req("a", "1"))
		q.Add(req("a", "1"))
		q.Add(req("b", "1"))
		if diff := cmp.Diff([]string{"a/1", "b/1"}, drain(q)); diff != "" {
			t.Errorf("order (-want +got):\n%s", diff)
		}
	})
	t.Run("a request added while it is processed waits for Done", func(t *testing.T) {
		q := newQueue()
		defer q.ShutDown()
		q.Add(req("a", "1"))
		r, _ := q.Get()
		q.Add(req("a", "1"))
		if q.Len() != 0 {
			t.Fatalf("Len = %d while the request is processed, want 0", q.Len())
		}
		q.Done(r)
		if q.Len() != 1 {
			t.Fatalf("Len = %d after Done, want 1", q.Len())
		}
	})
	t.Run("delays and rate limits still apply", func(t *testing.T) {
		q := newQueue()
		defer q.ShutDown()
		// A request is not handed out before its delay: one of an hour
		// says so whatever this machine's load (one of milliseconds
		// might have passed before Len is read).
		q.AddAfter(req("c", "much-later"), time.Hour)
		if q.Len() != 0 {
			t.Fatalf("Len = %d before the delay, want 0", q.Len())
		}
		q.AddAfter(req("a", "later"), 50*time.Millisecond)
		q.AddRateLimited(req("b", "x"))
		if n := q.NumRequeues(req("b", "x")); n != 1 {
			t.Errorf("NumRequeues = %d, want 1", n)
		}
		testenv.Eventually(t, 0, "the two requests whose delays passed to wait", func() (bool, error) {
			return q.Len() == 2, fmt.Errorf("Len = %d", q.Len())
		})
		if got := drain(q); !slices.Contains(got, "a/later") || !slices.Contains(got, "b/x") || slices.Contains(got, "c/much-later") {
			t.Errorf("handed out %v, want a/later and b/x (and not c/much-later)", got)
		}
	})
	t.Run("shutdown releases a waiting Get", func(t *testing.T) {
		q := newQueue()
		done := make(chan bool)
		go func() { _, shutdown := q.Get(); done <- shutdown }()
		q.ShutDown()
		select {
		case shutdown := <-done:
			if !shutdown {
				t.Error("Get returned without shutdown")
			}
		case <-time.After(testenv.Timeout):
			t.Fatalf("Get still waits %s after ShutDown", testenv.Timeout)
		}
	})
}

func position(got []string, want string) string {
	for i, g := range got {
		if g == want {
			return fmt.Sprintf("number %d", i+1)
		}
	}
	return "never"
}

// BenchmarkTurns measures a request's trip through the queue (Add, Get,
// Done) with 100 tenants waiting.
func BenchmarkTurns(b *testing.B) {
	q := newQueue()
	defer q.ShutDown()
	for i := range 100 {
		q.Add(req(fmt.Sprint("t", i), "x"))
	}
	i := 0
	for b.Loop() {
		r, _ := q.Get()
		q.Done(r)
		i++
		q.Add(req(fmt.Sprint("t", i%100), fmt.Sprint(i)))
	}
}
