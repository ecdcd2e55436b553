package recall

import (
	"fmt"
	"sync"

	"github.com/stencil-dev/stencil/reconcile/metrics"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"

	"github.com/stencil-dev/stencil/api/v1alpha1"
	"github.com/stencil-dev/stencil/outputs"
	"github.com/stencil-dev/stencil/templates"
)

// MaxBundles bounds the parsed Bundles the controller keeps: the
// Bundles its Compositions and instances render, with room to spare.
const MaxBundles = 256

// Bundles keeps the last parsed generation of each Bundle, so
// reconciling many parents of one Bundle parses its templates once per
// generation (a new revision comes with a new generation) in the
// controller. It keeps at most MaxBundles, by name, the least
// recently used leaving first: a deleted Bundle, or one replaced by
// another of the same name, is not held for ever. The render workers
// parse a Bundle too, each once per revision, and keep their own copies
// (internal/sandbox).
type Bundles struct {
	mu      sync.Mutex // held while parsing, so that a Bundle is parsed once
	entries *lru.Cache // Bundle name to bundleEntry
}

type bundleEntry struct {
	uid        types.UID
	generation int64
	// digest is the chart a Bundle with a source was loaded with (its
	// status.source.digest): a new pull is a new entry, though the
	// generation stays.
	digest  string
	bundle  *templates.Bundle
	outputs *outputs.Set // spec.outputs and spec.readiness, compiled
	err     error
}

// Load returns the parsed bundle, from the cache when this Bundle's
// generation (and, for a Bundle with a source, the digest of its chart)
// is known. A Bundle with a source must come with its chart's files (see
// package pull). A Bundle whose outputs or readiness rules do not
// compile fails to load, with their paths and positions.
func (c *Bundles) Load(b *v1alpha1.Bundle) (*templates.Bundle, error) {
	loaded, _, err := c.LoadWithOutputs(b)
	return loaded, err
}

// LoadWithOutputs is Load, with the Bundle's compiled outputs and
// readiness rules.
func (c *Bundles) LoadWithOutputs(b *v1alpha1.Bundle) (*templates.Bundle, *outputs.Set, error) {
	return c.LoadKeyed(b.Name, b)
}

// LoadKeyed is LoadWithOutputs keeping b under key instead of its name:
// a Bundle's revisions (package revision) are kept each under its own
// name, beside the Bundle's current content, so that parents on two
// revisions during a rollout do not parse them in turn.
func (c *Bundles) LoadKeyed(key string, b *v1alpha1.Bundle) (*templates.Bundle, *outputs.Set, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = lru.New(MaxBundles)
	}
	if v, ok := c.entries.Get(key); ok {
		if e := v.(bundleEntry); e.uid == b.UID && e.generation == b.Generation && e.digest == sourceDigest(b) {
			metrics.CacheLookup(metrics.CacheBundle, true)
			return e.bundle, e.outputs, e.err
		}
	}
	metrics.CacheLookup(metrics.CacheBundle, false)
	loaded, err := templates.LoadObject(b)
	var outs *outputs.Set
	if err == nil {
		if outs, err = outputs.FromBundle(outputs.Stored, b.Spec); err != nil {
			loaded, err = nil, fmt.Errorf("compile the outputs of Bundle %s: %w", b.Name, err)
		}
	}
	c.entries.Add(key, bundleEntry{uid: b.UID, generation: b.Generation, digest: sourceDigest(b), bundle: loaded, outputs: outs, err: err})
	return loaded, outs, err
}

// sourceDigest is the digest of the chart a Bundle with a source holds
// in its files (see package pull), "" for another Bundle.
func sourceDigest(b *v1alpha1.Bundle) string {
	if b.Spec.Source == nil || b.Status.Source == nil {
		return ""
	}
	return b.Status.Source.Digest
}

// Len is the number of Bundles kept.
func (c *Bundles) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		return 0
	}
	return c.entries.Len()
}
