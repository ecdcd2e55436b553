package sandbox

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrBusy is the error of a render refused because Options.MaxWaiting
// renders already wait for a worker; test it with errors.Is. Nothing is
// wrong with the bundle: a caller that cannot wait (the admission webhook)
// answers without the render.
var ErrBusy = errors.New("render pool busy")

// fairQueue hands out a pool's slots (one per worker) fairly by tenant:
// renders of one tenant wait in order of arrival, and a freed slot goes to
// the tenant whose turn it is, round-robin over the tenants with waiting
// renders. A tenant that has just been served goes to the back of the
// turns, so a tenant that starts waiting waits for at most one render of
// each other waiting tenant (plus those already running).
//
// Memory is one list element and one channel per waiting render, and one
// entry per tenant with a waiting render: a tenant is forgotten when its
// last render leaves the queue.
type fairQueue struct {
	mu         sync.Mutex
	free       int // slots nobody holds; 0 whenever a render waits
	maxWaiting int // 0: no bound
	waiting    int
	turns      *list.List               // of *tenantQueue, whose turn first
	tenants    map[string]*list.Element // tenant → its element of turns
}

// tenantQueue is one tenant's waiting renders.
type tenantQueue struct {
	tenant  string
	waiters *list.List // of chan struct{}, closed when given a slot; oldest first
}

func newFairQueue(slots, maxWaiting int) *fairQueue {
	return &fairQueue{free: slots, maxWaiting: maxWaiting, turns: list.New(), tenants: map[string]*list.Element{}}
}

// acquire waits for a slot in tenant's turn. It fails with ErrBusy, without
// waiting, when maxWaiting renders already wait, and with ctx's error when
// ctx ends first (the render then leaves the queue).
func (q *fairQueue) acquire(ctx context.Context, tenant string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	if q.free > 0 {
		q.free--
		q.mu.Unlock()
		return nil
	}
	if q.maxWaiting > 0 && q.waiting >= q.maxWaiting {
		n := q.waiting
		q.mu.Unlock()
		return fmt.Errorf("%w: %d renders wait for a worker", ErrBusy, n)
	}
	t, ok := q.tenants[tenant]
	if !ok {
		t = q.turns.PushBack(&tenantQueue{tenant: tenant, waiters: list.New()})
		q.tenants[tenant] = t
	}
	ready := make(chan struct{})
	e := t.Value.(*tenantQueue).waiters.PushBack(ready)
	q.waiting++
	q.mu.Unlock()

	select {
	case <-ready:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	select {
	case <-ready: // given a slot as ctx ended: the next render takes it
		q.mu.Unlock()
		q.release()
	default:
		q.leave(t, e)
		q.mu.Unlock()
	}
	return ctx.Err()
}

// release frees a slot: the render whose turn it is takes it.
func (q *fairQueue) release() {
	q.mu.Lock()
	defer q.mu.Unlock()
	t := q.turns.Front()
	if t == nil {
		q.free++
		return
	}
	tq := t.Value.(*tenantQueue)
	e := tq.waiters.Front()
	ready := e.Value.(chan struct{})
	q.leave(t, e)
	if _, ok := q.tenants[tq.tenant]; ok {
		q.turns.MoveToBack(t)
	}
	close(ready)
}

// leave takes the waiting render e of the tenant t out of the queue, and
// the tenant too when it was its last. q.mu is held.
func (q *fairQueue) leave(t, e *list.Element) {
	tq := t.Value.(*tenantQueue)
	tq.waiters.Remove(e)
	q.waiting--
	if tq.waiters.Len() == 0 {
		q.turns.Remove(t)
		delete(q.tenants, tq.tenant)
	}
}

// len returns how many renders wait.
func (q *fairQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiting
}
