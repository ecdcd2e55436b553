package source

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"sync"
)

// DefaultCacheBytes bounds a Cache's files when NewCache is given 0:
// 256 MiB.
const DefaultCacheBytes = 256 << 20

// Cache keeps unpacked charts by digest, the least recently used leaving
// first once their files take more than its bound. An entry holds no
// archive (Artifact.Archive is nil) and no per-pull details (URL,
// RemoteOptions, provenance). Safe for concurrent use.
type Cache struct {
	mu      sync.Mutex
	max     int64
	used    int64
	order   *list.List // of *Artifact, most recent first
	entries map[string]*list.Element
}

// NewCache returns a Cache bounded to maxBytes of files
// (DefaultCacheBytes when 0).
func NewCache(maxBytes int64) *Cache {
	if maxBytes <= 0 {
		maxBytes = DefaultCacheBytes
	}
	return &Cache{max: maxBytes, order: list.New(), entries: map[string]*list.Element{}}
}

// Get returns the chart of digest, if kept.
func (c *Cache) Get(digest string) (*Artifact, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[digest]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*Artifact), true
}

// Add keeps a's files under its digest. A chart larger than the bound
// is not kept.
func (c *Cache) Add(a *Artifact) {
	kept := &Artifact{Digest: a.Digest, Version: a.Version, Size: a.Size, Files: a.Files}
	n := filesSize(a.Files)
	c.mu.Lock()
	defer c.mu.Unlock()
	if n > c.max {
		return
	}
	if e, ok := c.entries[a.Digest]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.entries[a.Digest] = c.order.PushFront(kept)
	c.used += n
	for c.used > c.max {
		last := c.order.Back()
		old := last.Value.(*Artifact)
		c.order.Remove(last)
		delete(c.entries, old.Digest)
		c.used -= filesSize(old.Files)
	}
}

// Remove drops the chart of digest, if kept: one whose signature no
// longer verifies is never served from the cache again.
func (c *Cache) Remove(digest string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[digest]
	if !ok {
		return
	}
	c.order.Remove(e)
	delete(c.entries, digest)
	c.used -= filesSize(e.Value.(*Artifact).Files)
}

// Len is the number of charts kept.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

func filesSize(files map[string]string) int64 {
	var n int64
	for p, s := range files {
		n += int64(len(p) + len(s))
	}
	return n
}

// digestOf is data's sha256 digest, sha256:HEX.
func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
