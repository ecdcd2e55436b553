package sandbox

import (
	"context"
	"errors"
)

// SetProbe makes the workers of this test binary answer Pool.Probe with f.
func SetProbe(f func(what string) error) { testHooks.probe = f }

// WithoutLandlock and WithoutSeccomp make the workers of this test binary
// act as on a kernel without Landlock or seccomp.
func WithoutLandlock() { testHooks.noLandlock = true }
func WithoutSeccomp()  { testHooks.noSeccomp = true }

// Probe asks a worker to try what (see SetProbe): refused is the worker's
// error, err any other.
func (p *Pool) Probe(ctx context.Context, what string) (refused, err error) {
	if err := p.queue.acquire(ctx, ""); err != nil {
		return nil, err
	}
	defer p.queue.release()
	w, err := p.get()
	if err != nil {
		return nil, err
	}
	if err := w.sendWithin(&request{Probe: what}, p.limits.Timeout+grace); err != nil {
		err = w.died(err, p.limits)
		p.put(w, false)
		return nil, err
	}
	resp, err := w.await(p.limits)
	p.observe(w.hello())
	p.put(w, err == nil)
	switch {
	case err != nil:
		return nil, err
	case resp.Error != nil:
		return errors.New(resp.Error.Msg), nil
	}
	return nil, nil
}

// Hold takes a slot of p as a render would, until release is called.
func (p *Pool) Hold(ctx context.Context) (release func(), err error) {
	if err := p.queue.acquire(ctx, ""); err != nil {
		return nil, err
	}
	return p.queue.release, nil
}

// IdlePIDs returns the process ids of p's idle workers.
func (p *Pool) IdlePIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pids []int
	for _, w := range p.idle {
		pids = append(pids, w.cmd.Process.Pid)
	}
	return pids
}
