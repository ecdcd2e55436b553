package reconcile

import (
	"sync"

	"github.com/stencil-dev/stencil/reconcile/metrics"

	"k8s.io/apimachinery/pkg/types"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/templates"
)

// bundleCache keeps each Bundle loaded (parsed) once per generation, so
// reconciling many Compositions of one Bundle parses its templates once.
type bundleCache struct {
	mu      sync.Mutex
	entries map[types.UID]bundleEntry
}

type bundleEntry struct {
	generation int64
	bundle     *templates.Bundle
	err        error
}

// load returns the parsed bundle, from the cache when its generation is known.
func (c *bundleCache) load(b *v1alpha1.Bundle) (*templates.Bundle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[b.UID]; ok && e.generation == b.Generation {
		metrics.CacheLookup(metrics.CacheBundle, true)
		return e.bundle, e.err
	}
	metrics.CacheLookup(metrics.CacheBundle, false)
	loaded, err := templates.LoadObject(b)
	if c.entries == nil {
		c.entries = map[types.UID]bundleEntry{}
	}
	c.entries[b.UID] = bundleEntry{generation: b.Generation, bundle: loaded, err: err}
	return loaded, err
}
