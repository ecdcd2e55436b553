package queue

import (
	"container/list"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Turns orders a work queue's waiting items by tenant: one first-in,
// first-out line per tenant, and the tenants take turns, one item each.
// A tenant that has just been served goes to the back of the turns; a
// tenant that starts waiting joins at the back.
//
// It implements client-go's workqueue.Queue, whose caller (the work
// queue) holds its lock around every call: Turns has no lock of its own.
type Turns[T comparable] struct {
	tenantOf func(T) string
	turns    *list.List               // of *line, whose turn first
	lines    map[string]*list.Element // tenant → its element of turns
	n        int
}

// line is one tenant's waiting items, oldest first.
type line[T comparable] struct {
	tenant string
	items  []T
}

var _ workqueue.Queue[reconcile.Request] = (*Turns[reconcile.Request])(nil)

// NewTurns returns an empty ordering whose tenant of an item is
// tenantOf(item).
func NewTurns[T comparable](tenantOf func(T) string) *Turns[T] {
	return &Turns[T]{tenantOf: tenantOf, turns: list.New(), lines: map[string]*list.Element{}}
}

// Push adds item at the end of its tenant's line.
func (t *Turns[T]) Push(item T) {
	tenant := t.tenantOf(item)
	e, ok := t.lines[tenant]
	if !ok {
		e = t.turns.PushBack(&line[T]{tenant: tenant})
		t.lines[tenant] = e
	}
	l := e.Value.(*line[T])
	l.items = append(l.items, item)
	t.n++
}

// Pop takes the head of the line of the tenant whose turn it is, and
// sends that tenant to the back of the turns (or forgets it, when its
// line is now empty). The work queue calls it only when Len() > 0.
func (t *Turns[T]) Pop() T {
	e := t.turns.Front()
	l := e.Value.(*line[T])
	item := l.items[0]
	var zero T
	l.items[0] = zero // let the item go
	l.items = l.items[1:]
	t.n--
	if len(l.items) == 0 {
		t.turns.Remove(e)
		delete(t.lines, l.tenant)
	} else {
		t.turns.MoveToBack(e)
	}
	return item
}

// Len is the number of waiting items.
func (t *Turns[T]) Len() int { return t.n }

// Touch does nothing: an item added again while it waits keeps its place
// (the work queue does not add it twice).
func (t *Turns[T]) Touch(T) {}

// New returns a rate-limiting work queue named name (its metrics carry
// the name) whose waiting items take turns by tenantOf.
func New[T comparable](name string, rateLimiter workqueue.TypedRateLimiter[T], tenantOf func(T) string) workqueue.TypedRateLimitingInterface[T] {
	base := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[T]{Name: name, Queue: NewTurns(tenantOf)})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[T]{Name: name, Queue: base})
	return workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter, workqueue.TypedRateLimitingQueueConfig[T]{Name: name, DelayingQueue: delaying})
}

// ByNamespace is a controller's NewQueue (controller.Options) whose
// requests take turns by namespace: one namespace's burst of requests
// delays another namespace's request by at most one pass.
func ByNamespace(name string, rateLimiter workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return New(name, rateLimiter, func(r reconcile.Request) string { return r.Namespace })
}
