package testenv

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stencil-dev/stencil/reconcile/engine"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// passes is the Controller's engine.PassObserver: it keeps, for each
// parent (by namespace and name, whatever its kind), when its passes
// started and ended.
type passes struct {
	mu      sync.Mutex
	started map[types.NamespacedName][]time.Time
	// ended is, for each parent, when the passes that ended had started,
	// in the order they ended (a parent's passes run one at a time).
	ended map[types.NamespacedName][]time.Time
	// running counts the passes running, by their parents' namespace.
	running map[string]int
}

var _ engine.PassObserver = (*passes)(nil)

func (p *passes) PassStarted(_ schema.GroupKind, key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started == nil {
		p.started, p.ended, p.running = map[types.NamespacedName][]time.Time{}, map[types.NamespacedName][]time.Time{}, map[string]int{}
	}
	p.started[key] = append(p.started[key], time.Now())
	p.running[key.Namespace]++
}

func (p *passes) PassEnded(_ schema.GroupKind, key types.NamespacedName, _ error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.started[key]
	p.ended[key] = append(p.ended[key], s[len(p.ended[key])])
	p.running[key.Namespace]--
}

// endedSince reports whether a pass of key that started after t has ended.
func (p *passes) endedSince(key types.NamespacedName, t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.ended[key]
	return len(e) > 0 && e[len(e)-1].After(t)
}

// startedSince reports whether a pass of key started after t.
func (p *passes) startedSince(key types.NamespacedName, t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.started[key]
	return len(s) > 0 && s[len(s)-1].After(t)
}

// Passes returns how many passes of parent namespace/name (a Composition
// or an instance of a published kind) have ended.
func (c *Controller) Passes(namespace, name string) int {
	c.passes.mu.Lock()
	defer c.passes.mu.Unlock()
	return len(c.passes.ended[types.NamespacedName{Namespace: namespace, Name: name}])
}

// Running returns how many passes of the parents of namespace are
// running now; "" counts those of every namespace.
func (c *Controller) Running(namespace string) int {
	c.passes.mu.Lock()
	defer c.passes.mu.Unlock()
	if namespace != "" {
		return c.passes.running[namespace]
	}
	n := 0
	for _, r := range c.passes.running {
		n += r
	}
	return n
}

// quiet is how long Settle wants no write before it takes the
// controller as settled.
const quiet = 500 * time.Millisecond

// Settle waits until no pass of a parent of namespace is running and c
// has sent no write request to namespace for half a second ("": no pass
// of any parent, no write at all): the events of a pass are sent after
// it, by another goroutine. Other tests' parents, gone or going, have
// passes of their own: give the test's namespace. A count of writes
// starts after Settle, never after a wait for writes to stop; to wait
// for the pass an event brings, use PassAfter.
func (c *Controller) Settle(t testing.TB, namespace string) {
	t.Helper()
	writes := func() int {
		n := 0
		for _, r := range c.Requests() {
			if !strings.HasPrefix(r, "GET ") && (namespace == "" || strings.Contains(r, "/namespaces/"+namespace+"/")) {
				n++
			}
		}
		return n
	}
	Eventually(t, 0, fmt.Sprintf("the controller to settle in namespace %q", namespace), func() (bool, error) {
		if n := c.Running(namespace); n > 0 {
			return false, fmt.Errorf("%d passes running", n)
		}
		before := writes()
		time.Sleep(quiet)
		after := writes()
		return after == before && c.Running(namespace) == 0, fmt.Errorf("%d writes in %s", after-before, quiet)
	})
}

// repass is how long PassAfter waits for a pass to start before it makes
// its change again.
const repass = 5 * time.Second

// PassAfter makes a change with change (a write to the parent or to one
// of its members: an event the controller watches) and waits until a
// pass of parent namespace/name that started after the change was sent
// has ended: the pass the change brought, or a later one (a pass that
// starts while the change's write is on its way counts too). A
// converged pass writes nothing, so a test that counts the writes of a
// pass waits for it so, never for writes or for the render counter. A change the
// controller had already taken into a pass under way brings no pass of
// its own (the queue folds events): when none starts within a few
// seconds, change is made again, so it must make a new change each time
// it is called (a label's new value). The pass may have started before
// the controller's cache held the change: for a pass that certainly saw
// it, make a second change and wait again.
func (c *Controller) PassAfter(t testing.TB, namespace, name string, change func() error) {
	t.Helper()
	key := types.NamespacedName{Namespace: namespace, Name: name}
	// The time is taken before the change is sent: the pass it brings may
	// start before the write's response is read (on a local API server,
	// within a millisecond of it).
	changed := time.Now()
	if err := change(); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 0, fmt.Sprintf("a pass of %s after a change", key), func() (bool, error) {
		if c.passes.endedSince(key, changed) {
			return true, nil
		}
		if !c.passes.startedSince(key, changed) && time.Since(changed) > repass {
			changed = time.Now()
			if err := change(); err != nil {
				return false, err
			}
		}
		return false, fmt.Errorf("no pass of %s has ended since %s", key, changed.Format(time.StampMilli))
	})
}
