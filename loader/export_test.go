package loader

import (
	"crypto/sha256"
	"fmt"
	"reflect"

	"github.com/hashicorp/hcl/v2"
)

// CacheChanged re-decodes every file c holds, from the bytes that versions gives for
// its name, and describes each entry that is no longer what a fresh decode gives:
// something changed a tree the loads share.
func CacheChanged(c *Cache, versions func(name string) [][]byte) []string {
	c.mu.Lock()
	entries := make(map[cacheKey]*cacheEntry, len(c.entries))
	for k, e := range c.entries {
		entries[k] = e
	}
	c.mu.Unlock()
	var problems []string
	for k, e := range entries {
		var src []byte
		found := false
		for _, b := range versions(k.name) {
			if sha256.Sum256(b) == k.sum {
				src, found = b, true
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%s: no version with the cached content", k.name))
			continue
		}
		v, diags := decoders[k.kind](k.name, src)
		if !reflect.DeepEqual(e.value, v) {
			problems = append(problems, fmt.Sprintf("%s (kind %d): the shared value differs from a fresh decode", k.name, k.kind))
		}
		if got, want := diagsString(e.diags), diagsString(diags); got != want {
			problems = append(problems, fmt.Sprintf("%s (kind %d): the cached diagnostics differ from a fresh decode:\n%s\nwant:\n%s", k.name, k.kind, got, want))
		}
	}
	return problems
}

func diagsString(diags hcl.Diagnostics) string {
	s := ""
	for _, d := range diags {
		s += fmt.Sprintf("%d %v %q %q\n", d.Severity, d.Subject, d.Summary, d.Detail)
	}
	return s
}
