package loader

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
)

// Cache shares parsed files between loads (two revisions of one repository): a file
// whose path and content are the same is decoded once. Safe for concurrent use.
//
// What is shared is what decoding a file gives: the *Value tree of a YAML, JSON or
// HCL cluster/settings file, the data trees a plugin.hcl converts to before its
// `_path` keys are loaded, and the diagnostics decoding produced. Every load reports
// those diagnostics again (as copies), and still records the bytes of every file it
// reads in its own Sources. `_path` loading, and everything else that depends on
// other files, is done again by every load.
//
// Sharing relies on Values being immutable once decoded (see Value): the loader and
// its users (render, capabilities) build new Values (With, Without, DeepMerge, the
// `_path` loader's copy-on-write walk) instead of changing the ones they are given,
// and a load copies the maps of a shared plugin.hcl conversion before filling them.
// The tests check it: concurrent loads rendered under -race, then every shared tree
// compared with a fresh decode.
//
// A cache forgets only when swept: one made for the loads that share it (diff's two
// revisions) needs nothing more. One that lives as long as a process (serve's and
// watch's loop, whose every reconcile loads a revision much like the last one) is
// swept after each reconcile: Sweep drops what no load used since the sweep
// before, so that the cache holds about what the last reconcile's loads read.
type Cache struct {
	mu      sync.Mutex
	entries map[cacheKey]*cacheEntry
	// blobs holds the bytes of files read from a file system that names its
	// contents (BlobHasher, the git revisions of OpenRevision), by blob id, so that
	// a file both revisions share is also read from the object store once.
	blobs map[string]*cacheBlob
	// epoch counts the sweeps (those that found something used); an entry or
	// a blob records the epoch it was last used in, and used says whether
	// anything was used in this one. Under mu.
	epoch uint64
	used  bool

	hits, misses atomic.Int64
}

// decodeKind says how a file is decoded; a file may be read in several ways.
type decodeKind uint8

const (
	asYAML        decodeKind = iota // DecodeYAML: YAML and JSON data files
	asClusterHCL                    // clusterHCLToValue: clusters/*.hcl
	asSettingsHCL                   // decodeHCLAttributes: fuelsync.hcl
	asPluginHCL                     // decodePluginHCL: plugin.hcl before `_path` loading
)

// decoders holds the decoder of each kind. Each depends on the file name and bytes
// alone, which is what makes its result shareable.
var decoders = [...]func(name string, src []byte) (any, hcl.Diagnostics){
	asYAML:        func(name string, src []byte) (any, hcl.Diagnostics) { return DecodeYAML(name, src) },
	asClusterHCL:  func(name string, src []byte) (any, hcl.Diagnostics) { return clusterHCLToValue(name, src) },
	asSettingsHCL: func(name string, src []byte) (any, hcl.Diagnostics) { return decodeHCLAttributes(name, src) },
	asPluginHCL:   func(name string, src []byte) (any, hcl.Diagnostics) { return decodePluginHCL(name, src) },
}

type cacheKey struct {
	kind decodeKind
	name string
	sum  [sha256.Size]byte
}

type cacheEntry struct {
	once  sync.Once
	value any
	diags hcl.Diagnostics
	epoch uint64 // last used in; under Cache.mu
}

type cacheBlob struct {
	src   []byte
	epoch uint64 // last used in; under Cache.mu
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{entries: map[cacheKey]*cacheEntry{}, blobs: map[string]*cacheBlob{}}
}

// Sweep drops every decoded file and every blob that no load used since the
// previous sweep (or since the cache was made): a file used again after the
// sweep is decoded again. A sweep when nothing at all was used since the one
// before drops nothing, so that idle sweeps (a reconcile that loaded nothing)
// keep what the next load is likely to want. It returns how many decoded
// files and blobs it dropped.
//
// Sweeping while loads run is safe: a load keeps every value it was given, and
// a file it wants after the sweep is at worst decoded again (an entry still
// being decoded when it is dropped is finished by the load decoding it, and
// decoded anew by the next load that wants it).
func (c *Cache) Sweep() (entries, blobs int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.used {
		return 0, 0
	}
	for k, e := range c.entries {
		if e.epoch != c.epoch {
			delete(c.entries, k)
			entries++
		}
	}
	for id, b := range c.blobs {
		if b.epoch != c.epoch {
			delete(c.blobs, id)
			blobs++
		}
	}
	c.epoch++
	c.used = false
	return entries, blobs
}

// Len returns how many decoded files and how many blobs the cache holds.
func (c *Cache) Len() (entries, blobs int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries), len(c.blobs)
}

// Stats returns how many file decodes the cache saved (hits) and how many it did
// (misses), over every load that used it.
func (c *Cache) Stats() (hits, misses int) {
	return int(c.hits.Load()), int(c.misses.Load())
}

// decode decodes src, the content of file name, as kind, or returns the result of an
// earlier decode of the same name and bytes. The diagnostics returned are copies:
// the caller may append to them, sort them or change them without touching what the
// next load gets. A nil cache decodes every time.
func (c *Cache) decode(kind decodeKind, name string, src []byte) (any, hcl.Diagnostics) {
	if c == nil {
		return decoders[kind](name, src)
	}
	key := cacheKey{kind, name, sha256.Sum256(src)}
	c.mu.Lock()
	e, ok := c.entries[key]
	if !ok {
		e = &cacheEntry{}
		c.entries[key] = e
	}
	e.epoch, c.used = c.epoch, true
	c.mu.Unlock()
	decoded := false
	e.once.Do(func() {
		decoded = true
		e.value, e.diags = decoders[kind](name, src)
	})
	if decoded {
		c.misses.Add(1)
	} else {
		c.hits.Add(1)
	}
	return e.value, cloneDiags(e.diags)
}

// blob returns the bytes of the blob id, when a load has read it.
func (c *Cache) blob(id string) ([]byte, bool) {
	if c == nil || id == "" {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.blobs[id]
	if !ok {
		return nil, false
	}
	b.epoch, c.used = c.epoch, true
	return b.src, true
}

// addBlob records the bytes of the blob id.
func (c *Cache) addBlob(id string, src []byte) {
	if c == nil || id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.blobs[id]
	if !ok {
		b = &cacheBlob{src: src}
		c.blobs[id] = b
	}
	b.epoch, c.used = c.epoch, true
}

// cloneDiags copies diagnostics and their ranges.
func cloneDiags(diags hcl.Diagnostics) hcl.Diagnostics {
	if len(diags) == 0 {
		return nil
	}
	out := make(hcl.Diagnostics, len(diags))
	for i, d := range diags {
		c := *d
		if d.Subject != nil {
			c.Subject = rangePtr(*d.Subject)
		}
		if d.Context != nil {
			c.Context = rangePtr(*d.Context)
		}
		out[i] = &c
	}
	return out
}
