package loader

import (
	"crypto/sha256"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
)

// Cache shares decoded YAML and JSON files between loads, such as the two
// revisions diff reads: a file with the same path and the same bytes is decoded
// once. Decoded values are never modified afterwards (the `_path` loader copies a
// mapping or list before changing it), so the loads share them. Safe for
// concurrent use.
type Cache struct {
	mu           sync.Mutex
	m            map[cacheKey]*cacheEntry
	hits, misses atomic.Int64
}

type cacheKey struct {
	name string
	sum  [sha256.Size]byte
}

type cacheEntry struct {
	once  sync.Once
	value *Value
	diags hcl.Diagnostics
}

// NewCache returns an empty cache.
func NewCache() *Cache { return &Cache{m: map[cacheKey]*cacheEntry{}} }

// Stats returns how many decodes the cache saved and how many it did.
func (c *Cache) Stats() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

// decode decodes src as file name, or returns the result of an earlier decode of
// the same name and bytes. The diagnostics are returned clipped, so that a caller
// appending to them does not write into the shared array.
func (c *Cache) decode(name string, src []byte) (*Value, hcl.Diagnostics) {
	if c == nil {
		return DecodeYAML(name, src)
	}
	key := cacheKey{name, sha256.Sum256(src)}
	c.mu.Lock()
	e, ok := c.m[key]
	if !ok {
		e = &cacheEntry{}
		c.m[key] = e
	}
	c.mu.Unlock()
	decoded := false
	e.once.Do(func() {
		decoded = true
		e.value, e.diags = DecodeYAML(name, src)
	})
	if decoded {
		c.misses.Add(1)
	} else {
		c.hits.Add(1)
	}
	return e.value, slices.Clip(e.diags)
}
