package recall

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Memo keeps, for this process, one value per parent under a key: what a
// pass remembers of the last one (the version stencil last wrote, the last
// successful pass, a render known to fail, a terminal stall). A value is
// found only under the key it was put with, so a change of the inputs the
// key names forgets it; Forget drops a parent that is gone or has left
// this shard. Safe for concurrent passes. The zero Memo is ready.
type Memo[V any] struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]memoEntry[V]
}

type memoEntry[V any] struct {
	key   string
	value V
}

// Get returns the value put for name under key.
func (m *Memo[V]) Get(name types.NamespacedName, key string) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.entries[name]
	if !ok || e.key != key {
		var zero V
		return zero, false
	}
	return e.value, true
}

// Put keeps v for name under key, in place of what name had.
func (m *Memo[V]) Put(name types.NamespacedName, key string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[types.NamespacedName]memoEntry[V]{}
	}
	m.entries[name] = memoEntry[V]{key: key, value: v}
}

// Forget drops what is kept for name.
func (m *Memo[V]) Forget(name types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, name)
}
