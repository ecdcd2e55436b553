package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/stencil-dev/stencil/templates"
)

// Default limits of one render.
const (
	// DefaultTimeout is how long one render may take.
	DefaultTimeout = 10 * time.Second
	// DefaultMemory is how much memory one render may use.
	DefaultMemory = 512 << 20
)

// grace is how long past its deadline a worker has to report where it was
// before it is killed.
const grace = 2 * time.Second

// Limits bound one render.
type Limits struct {
	// Timeout is the most time one render may take; 0 means DefaultTimeout.
	Timeout time.Duration
	// Memory is the most memory, in bytes, one render may use; 0 means DefaultMemory.
	Memory int64
	// Isolation says whether a worker that cannot confine itself (no
	// Landlock or no seccomp) may render; the zero value is IsolationStrict.
	Isolation IsolationMode
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Memory <= 0 {
		l.Memory = DefaultMemory
	}
	return l
}

// Options configure a Pool.
type Options struct {
	// Limits bound every render of the pool.
	Limits Limits
	// Workers is the most worker processes, and so renders, at once; 0 means 1.
	Workers int
	// MaxWaiting is the most renders that may wait for a worker; past it,
	// Render fails at once with ErrBusy. 0 means no bound (each waiting
	// render is its caller's goroutine and a few words of the pool).
	MaxWaiting int
	// Command is the worker's command line; empty means the running
	// executable, which must call Main first thing.
	Command []string
}

// Pool renders bundles in worker processes, at most Options.Workers at once;
// renders waiting for a worker take turns by tenant (see RenderFor). It is
// safe for concurrent use.
type Pool struct {
	limits  Limits
	command []string
	queue   *fairQueue
	warn    sync.Once // of a best-effort pool's first weaker worker

	mu        sync.Mutex
	idle      []*proc
	busy      map[*proc]bool
	closed    bool
	isolation *Isolation // of the last worker started
}

// New returns a pool. Workers are started on demand, so New itself starts
// no process; a strict pool on a kernel that lacks Landlock or seccomp is
// an *IsolationError.
func New(opts Options) (*Pool, error) {
	if err := checkIsolation(opts.Limits.Isolation, kernelIsolation()); err != nil {
		return nil, err
	}
	cmd := opts.Command
	if len(cmd) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the executable to run render workers: %w", err)
		}
		cmd = []string{exe}
	}
	return &Pool{limits: opts.Limits.withDefaults(), command: cmd, busy: map[*proc]bool{},
		queue: newFairQueue(max(opts.Workers, 1), max(opts.MaxWaiting, 0))}, nil
}

// Limits returns the limits every render of the pool runs under.
func (p *Pool) Limits() Limits { return p.limits }

// Isolation returns what confines the pool's workers, as the last worker
// started reported it, or what the kernel offers when none has started.
func (p *Pool) Isolation() Isolation {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.isolation != nil {
		return *p.isolation
	}
	return kernelIsolation()
}

// observe records what confines a new worker; a best-effort pool says
// once what is missing.
func (p *Pool) observe(iso *Isolation) {
	if iso == nil {
		return
	}
	p.mu.Lock()
	p.isolation = iso
	p.mu.Unlock()
	if m := iso.Missing(); len(m) > 0 && p.limits.Isolation == IsolationBestEffort {
		p.warn.Do(func() {
			fmt.Fprintf(os.Stderr, "warning: render workers run without %s: a render can do what this user can (%s=%s)\n",
				strings.Join(m, ", "), IsolationFlag, p.limits.Isolation)
		})
	}
}

// Render renders b with the input in, in a worker process, in the turn
// of in's tenant: the namespace of in.Composition (renders without one,
// such as the CLI's, share one tenant). See RenderFor.
func (p *Pool) Render(ctx context.Context, b *templates.Bundle, in templates.Input) ([]*unstructured.Unstructured, error) {
	return p.RenderFor(ctx, in.Composition.Namespace, b, in)
}

// RenderFor renders b with the input in, in a worker process, once a
// worker is free and it is tenant's turn: renders wait in order of
// arrival within a tenant and round-robin across tenants, so one tenant's
// burst delays another tenant's render by at most one render.
//
// A render error, including an overrun of the deadline or the memory
// ceiling, is a *templates.RenderError. Any other error is not about the
// bundle and may be retried: ErrBusy (Options.MaxWaiting renders already
// wait), ctx's error (it ended while the render waited or ran), no worker
// could be started. When ctx ends during the render, RenderFor returns at
// once and the worker is killed: its slot is free for the next render at
// once (a caller that gave up, such as a review past the API server's
// deadline, holds nothing), and the next render starts a fresh worker.
func (p *Pool) RenderFor(ctx context.Context, tenant string, b *templates.Bundle, in templates.Input) ([]*unstructured.Unstructured, error) {
	if err := p.queue.acquire(ctx, tenant); err != nil {
		return nil, err
	}
	type result struct {
		objs  []*unstructured.Unstructured
		obs   templates.Observations
		notes templates.Notes
		err   error
	}
	observations, notes := in.Observations, in.Notes
	done := make(chan result, 1) // the render never waits for its caller
	go func() {
		defer p.queue.release()
		var r result
		in.Observations, in.Notes = &r.obs, &r.notes // the caller's are set only if it still waits
		r.objs, r.err = p.render(ctx, b, in)
		done <- r
	}()
	select {
	case r := <-done:
		if observations != nil {
			*observations = r.obs
		}
		if notes != nil {
			*notes = r.notes
		}
		return r.objs, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// render renders in a worker, holding a slot. When ctx ends first, the
// worker is killed.
func (p *Pool) render(ctx context.Context, b *templates.Bundle, in templates.Input) ([]*unstructured.Unstructured, error) {
	w, err := p.get()
	if err != nil {
		return nil, err
	}
	stop := context.AfterFunc(ctx, w.kill)
	objs, reusable, err := w.render(b, in, p.limits)
	if !stop() {
		reusable = false // killed: its caller is gone
	}
	p.observe(w.hello())
	p.put(w, reusable)
	return objs, err
}

// Waiting returns how many renders wait for a worker.
func (p *Pool) Waiting() int { return p.queue.len() }

// Close stops the workers, idle or rendering: a render still running ends
// with an error that is not a RenderError. Render must not be called after
// Close.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	stop := p.idle
	for w := range p.busy {
		stop = append(stop, w)
	}
	p.idle = nil
	p.mu.Unlock()
	for _, w := range stop {
		w.kill()
	}
}

// get returns an idle worker or starts one.
func (p *Pool) get() (*proc, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.busy[w] = true
		p.mu.Unlock()
		return w, nil
	}
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("render pool is closed")
	}
	w, err := start(p.command, p.limits.Memory)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		w.kill()
		return nil, fmt.Errorf("render pool is closed")
	}
	p.busy[w] = true
	return w, nil
}

// put keeps a worker for the next render, or stops it.
func (p *Pool) put(w *proc, reusable bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.busy, w)
	if !reusable || p.closed {
		w.kill()
		return
	}
	p.idle = append(p.idle, w)
}

// render runs one render on w. reusable reports whether w may serve another.
func (w *proc) render(b *templates.Bundle, in templates.Input, l Limits) (objs []*unstructured.Unstructured, reusable bool, err error) {
	ref := bundleRef{Name: b.Name(), Revision: b.Revision()}
	req := request{Bundle: ref, Input: in, TimeoutMillis: l.Timeout.Milliseconds()}
	w.where = location{} // nothing of an earlier render
	if len(w.known) > 4*maxCachedBundles {
		// The worker forgets bundles too; it asks again (NeedBundle).
		clear(w.known)
	}
	if !w.known[ref.key()] {
		req.withSpec(b)
	}
	for {
		if err := w.sendWithin(&req, l.Timeout+grace); err != nil {
			if errors.Is(err, errSendTimeout) {
				// Not the bundle's doing: a worker reads its request
				// before it renders anything, and one that overran is
				// never reused. A machine too busy to start or schedule
				// the worker in time is transient: the caller backs off
				// and tries again with another worker, and the parent is
				// not stalled for the template's sake.
				return nil, false, fmt.Errorf("render worker did not take the request within %s: %w", l.Timeout+grace, err)
			}
			return nil, false, w.died(err, l)
		}
		resp, err := w.await(l)
		switch {
		case err != nil:
			return nil, false, err
		case resp.NeedBundle && req.Spec == nil:
			req.withSpec(b)
			continue
		case resp.NeedBundle:
			return nil, false, fmt.Errorf("render worker refused bundle %s", ref.key())
		}
		w.known[ref.key()] = true
		// A worker that stopped a render for an overrun exits after
		// reporting it; one that kept much memory is not worth keeping.
		reusable = resp.HeapBytes < uint64(l.Memory)/4 && (resp.Error == nil || resp.Error.Reason == "")
		if resp.Error != nil {
			if in.Observations != nil && resp.Observations != nil {
				*in.Observations = *resp.Observations
			}
			return nil, reusable, resp.Error.renderError()
		}
		objs, err := decode(resp)
		if err == nil && in.Observations != nil && resp.Observations != nil {
			*in.Observations = *resp.Observations
		}
		if err == nil && in.Notes != nil && resp.Notes != nil {
			*in.Notes = *resp.Notes
		}
		return objs, reusable && err == nil, err
	}
}

// await reads the worker's answer, killing it when the deadline (plus the
// grace) passes. It does not end with a caller's context: a worker stopped
// mid-render would have to be killed (its answer would otherwise be read
// as the next render's), and the worker bounds the render itself.
func (w *proc) await(l Limits) (*response, error) {
	timer := time.NewTimer(l.Timeout + grace)
	defer timer.Stop()
	for {
		select {
		case f, ok := <-w.frames:
			if !ok {
				return nil, w.died(w.readErr, l)
			}
			switch {
			case f.Progress != nil:
				w.where = *f.Progress
				continue
			case f.Isolation != nil && w.isolation == nil:
				w.isolation, w.fresh = f.Isolation, true
				if err := checkIsolation(l.Isolation, *f.Isolation); err != nil {
					w.kill()
					return nil, err
				}
				continue
			case w.isolation == nil:
				w.kill()
				return nil, fmt.Errorf("render worker answered before it said what confines it")
			}
			return f, nil
		case <-timer.C:
			w.kill()
			return nil, &templates.RenderError{File: w.where.File, Line: w.where.Line, Reason: templates.ReasonTimeout,
				Msg: fmt.Sprintf("render stopped: it did not finish within %s", l.Timeout)}
		}
	}
}

// decode turns the worker's objects into unstructured objects, with
// numbers as every other unstructured object has them (int64, float64).
func decode(resp *response) ([]*unstructured.Unstructured, error) {
	var items []any
	if err := utiljson.Unmarshal(resp.objects, &items); err != nil {
		return nil, fmt.Errorf("decode rendered objects: %w", err)
	}
	objs := make([]*unstructured.Unstructured, len(items))
	for i, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("decode rendered object %d: not an object", i)
		}
		objs[i] = &unstructured.Unstructured{Object: m}
	}
	return objs, nil
}
