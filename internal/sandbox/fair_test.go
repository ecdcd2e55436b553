package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/internal/sandbox"
	"github.com/stencil-dev/stencil/templates"
)

// slow renders in some 100–200 ms on this project's machines, within
// every step bound.
var slow = map[string]string{
	"templates/slow.yaml": "{{ range until 200 }}{{ range until 900 }}{{ $x := add 1 2 }}{{ end }}{{ end }}",
}

func tenantInput(ns string) templates.Input {
	return templates.Input{Composition: templates.CompositionInfo{Name: "app", Namespace: ns, UID: "u-" + ns}}
}

// waitFor yields until cond holds, and fails t with what after two
// minutes: the queue is reached by other goroutines, and only its state
// is awaited, never a duration; the bound is far past any state that
// comes. It is the sandbox tests' own: testenv, whose waits the other
// suites share, imports this package, and would make this test binary,
// which the pools re-execute as their render workers, the whole
// controller.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("after two minutes, still waiting for %s", what)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// TestFairByTenant: with one worker, tenant A queues ten slow renders,
// then tenant B queues one; B's render completes before A's third.
func TestFairByTenant(t *testing.T) {
	p := newPool(t, sandbox.Limits{}, 1)
	b := load(t, "slow", slow)
	release, err := p.Hold(context.Background()) // A and B queue behind it
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		order []string // tenants, in order of completion
		wg    sync.WaitGroup
	)
	render := func(ns string) {
		defer wg.Done()
		if _, err := p.Render(context.Background(), b, tenantInput(ns)); err != nil {
			t.Errorf("render of %s: %v", ns, err)
		}
		mu.Lock()
		order = append(order, ns)
		mu.Unlock()
	}
	wg.Add(11)
	for range 10 {
		go render("team-a")
	}
	waitFor(t, "ten renders of A to wait", func() bool { return p.Waiting() == 10 })
	go render("team-b")
	waitFor(t, "B's render to wait", func() bool { return p.Waiting() == 11 })
	release()
	wg.Wait()

	before := slices.Index(order, "team-b")
	t.Logf("completion order: %v", order)
	if before < 0 || before > 2 {
		t.Fatalf("%d of A's renders completed before B's, want at most 2 (order %v)", before, order)
	}
}

// TestQueuedRenderCancelled: a render whose context ends while it waits
// returns the context's error at once and leaves the queue; the renders
// behind it still run.
func TestQueuedRenderCancelled(t *testing.T) {
	p := newPool(t, sandbox.Limits{}, 1)
	b := load(t, "cm", configMap)
	release, err := p.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan error, 1)
	go func() {
		_, err := p.Render(ctx, b, tenantInput("team-a"))
		cancelled <- err
	}()
	waitFor(t, "a render to wait", func() bool { return p.Waiting() == 1 })
	later := make(chan error, 1)
	go func() {
		_, err := p.Render(context.Background(), b, tenantInput("team-b"))
		later <- err
	}()
	waitFor(t, "two renders to wait", func() bool { return p.Waiting() == 2 })

	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) { // the slot is still held
		t.Fatalf("cancelled render: %v, want context.Canceled", err)
	}
	if n := p.Waiting(); n != 1 {
		t.Errorf("Waiting() = %d after the cancel, want 1", n)
	}
	release()
	if err := <-later; err != nil {
		t.Fatalf("render queued behind the cancelled one: %v", err)
	}
	if _, err := p.Render(context.Background(), b, tenantInput("team-a")); err != nil {
		t.Fatalf("render after the cancel: %v", err)
	}
}

// TestMaxWaiting: past Options.MaxWaiting waiting renders, Render fails at
// once with ErrBusy; the renders already waiting still run.
func TestMaxWaiting(t *testing.T) {
	p, err := sandbox.New(sandbox.Options{Workers: 1, MaxWaiting: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	b := load(t, "cm", configMap)
	release, err := p.Hold(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	queued := make(chan error, 1)
	go func() {
		_, err := p.Render(context.Background(), b, tenantInput("team-a"))
		queued <- err
	}()
	waitFor(t, "a render to wait", func() bool { return p.Waiting() == 1 })
	if _, err := p.Render(context.Background(), b, tenantInput("team-b")); !errors.Is(err, sandbox.ErrBusy) {
		t.Fatalf("render past MaxWaiting: %v, want ErrBusy", err)
	}
	release()
	if err := <-queued; err != nil {
		t.Fatalf("queued render: %v", err)
	}
}

// TestCallerGivesUpWorkerReleased: a caller whose context ends mid-render
// gets its context's error, and the worker rendering for it is killed at
// once, not left to finish a render nobody reads (a stranger's review past
// the API server's deadline must hold no worker); the next render gets a
// fresh worker.
func TestCallerGivesUpWorkerReleased(t *testing.T) {
	p := newPool(t, sandbox.Limits{}, 1)
	healthy := load(t, "cm", configMap)
	if _, err := p.Render(context.Background(), healthy, input); err != nil {
		t.Fatal(err)
	}
	warm := p.IdlePIDs()
	if len(warm) != 1 {
		t.Fatalf("idle workers %v, want one", warm)
	}
	// The caller gives up once the warm worker renders for it, not after a
	// duration: a deadline that ended before the render reached the worker
	// (on a busy machine, while the bundle loaded) would leave the worker
	// alone. The render takes seconds, far more than the cancel does.
	slower := load(t, "slower", map[string]string{
		"templates/slower.yaml": "{{ range until 1000 }}{{ range until 900 }}{{ $x := add 1 2 }}{{ end }}{{ end }}",
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gaveUp := make(chan error, 1)
	go func() {
		_, err := p.Render(ctx, slower, input)
		gaveUp <- err
	}()
	waitFor(t, "the warm worker to render", func() bool { return len(p.IdlePIDs()) == 0 })
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("render the caller gave up: %v, want context.Canceled", err)
	}
	waitFor(t, fmt.Sprintf("the worker %d of the abandoned render to be killed", warm[0]), func() bool { return syscall.Kill(warm[0], 0) != nil })
	if _, err := p.Render(context.Background(), healthy, input); err != nil {
		t.Fatalf("render after the caller gave up: %v", err)
	}
	if got := p.IdlePIDs(); len(got) != 1 || got[0] == warm[0] {
		t.Errorf("idle workers %v, want one fresh worker (not %d)", got, warm[0])
	}
}

// BenchmarkFairness: tenant A has 50 slow renders queued on a pool of two
// workers when tenant B asks for one. It reports how many of A's renders
// completed before B's (at most the workers) and B's latency; "one-tenant"
// gives B A's key, which is how every render waited before (first come,
// first served).
func BenchmarkFairness(b *testing.B) {
	const workers, burst = 2, 50
	for _, bench := range []struct{ name, tenantB string }{{"tenants", "team-b"}, {"one-tenant", "team-a"}} {
		b.Run(bench.name, func(b *testing.B) {
			p, err := sandbox.New(sandbox.Options{Workers: workers})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			bundle := load(b, "slow", slow)
			var latency time.Duration
			var ahead int64
			for b.Loop() {
				ctx, cancel := context.WithCancel(context.Background())
				var doneA atomic.Int64
				var wg sync.WaitGroup
				for range burst {
					wg.Go(func() {
						if _, err := p.Render(ctx, bundle, tenantInput("team-a")); err == nil {
							doneA.Add(1)
						}
					})
				}
				waitFor(b, "A's burst to wait", func() bool { return p.Waiting() >= burst-workers })
				start := time.Now()
				if _, err := p.Render(context.Background(), bundle, tenantInput(bench.tenantB)); err != nil {
					b.Fatal(err)
				}
				latency += time.Since(start)
				ahead += doneA.Load()
				cancel() // A's waiting renders leave; its running ones finish warm
				wg.Wait()
			}
			b.ReportMetric(float64(ahead)/float64(b.N), "A-renders-before-B")
			b.ReportMetric(float64(latency.Milliseconds())/float64(b.N), "B-latency-ms")
		})
	}
}
