package loader_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/loader"
)

// stats are a cache's counts: hits and misses so far, decoded files and blobs
// held.
type stats struct{ Hits, Misses, Entries, Blobs int }

func statsOf(c *loader.Cache) stats {
	var s stats
	s.Hits, s.Misses = c.Stats()
	s.Entries, s.Blobs = c.Len()
	return s
}

// TestCacheSweep: a sweep keeps what the loads since the previous sweep used
// (a load of it again hits every file) and drops the rest (the version of the
// file the newer revision changed: a load of the old revision decodes it
// again, and only it). A sweep after which nothing was used drops nothing.
// Every load gives what a load without the cache gives, and the shared trees
// stay as decoded.
func TestCacheSweep(t *testing.T) {
	base := cacheRepo(t)
	head := withFile(t, base, "clusters/c-01.yaml", func(s string) string { return strings.Replace(s, "mode: ha", "mode: multinode", 1) })
	n := decodedFiles(base)
	c := loader.NewCache()
	load := func(what string, fsys fstest.MapFS) {
		t.Helper()
		want, wantDiags := loader.Load(fsys, loader.Options{})
		got, gotDiags := loader.Load(fsys, loader.Options{Cache: c})
		sameLoad(t, what, want, got, wantDiags, gotDiags)
	}
	sweep := func(what string, wantEntries int) {
		t.Helper()
		if got, _ := c.Sweep(); got != wantEntries {
			t.Errorf("%s: the sweep dropped %d decoded files, want %d", what, got, wantEntries)
		}
	}
	check := func(what string, want stats) {
		t.Helper()
		if diff := cmp.Diff(want, statsOf(c)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", what, diff)
		}
	}

	load("base", base)
	sweep("after base", 0) // every entry used
	check("base, swept", stats{Misses: n, Entries: n})
	sweep("an idle sweep", 0)
	sweep("another idle sweep", 0)
	check("after idle sweeps", stats{Misses: n, Entries: n})

	load("head", head)
	check("head", stats{Hits: n - 1, Misses: n + 1, Entries: n + 1})
	sweep("after head", 1) // base's clusters/c-01.yaml
	check("head, swept", stats{Hits: n - 1, Misses: n + 1, Entries: n})

	load("head again", head)
	check("head again", stats{Hits: 2*n - 1, Misses: n + 1, Entries: n})
	sweep("after head again", 0)

	load("base again", base) // its c-01.yaml was dropped
	check("base again", stats{Hits: 3*n - 2, Misses: n + 2, Entries: n + 1})
	if p := loader.CacheChanged(c, mapVersions(base, head)); len(p) > 0 {
		t.Errorf("shared trees changed:\n%s", strings.Join(p, "\n"))
	}
}

// TestCacheSweepBlobs: a sweep drops the blobs no load used since the previous
// one: the old revision's version of the changed file is read from the object
// store again, and only it.
func TestCacheSweepBlobs(t *testing.T) {
	base := cacheRepo(t)
	head := withFile(t, base, "clusters/c-01.yaml", func(s string) string { return s + "\n# changed\n" })
	n := decodedFiles(base)
	c := loader.NewCache()
	reads := func(fsys fstest.MapFS) map[string]int {
		b := &blobFS{MapFS: fsys, reads: map[string]int{}}
		loader.Load(b, loader.Options{Cache: c})
		return b.reads
	}
	if got := len(reads(base)); got != n {
		t.Errorf("the first load read %d files, want %d", got, n)
	}
	c.Sweep()
	reads(head)
	if _, blobs := c.Len(); blobs != n+1 {
		t.Errorf("%d blobs after both revisions, want %d", blobs, n+1)
	}
	if _, blobs := c.Sweep(); blobs != 1 {
		t.Errorf("the sweep dropped %d blobs, want 1 (base's c-01.yaml)", blobs)
	}
	if diff := cmp.Diff(map[string]int{}, reads(head)); diff != "" {
		t.Errorf("files the head's second load read (-want +got):\n%s", diff)
	}
	c.Sweep()
	if diff := cmp.Diff(map[string]int{"clusters/c-01.yaml": 1}, reads(base)); diff != "" {
		t.Errorf("files the base's second load read (-want +got):\n%s", diff)
	}
}

// TestCacheSweepConcurrent: loads of two revisions, each rendered, while
// another goroutine sweeps the cache over and over (run with -race). Every
// load gives the artifacts and diagnostics of a load without the cache; each
// file a load reads is counted once, as a hit or a miss; the shared trees stay
// as decoded; and once the sweeps stop, what the cache holds is the two
// revisions' files.
func TestCacheSweepConcurrent(t *testing.T) {
	base := cacheRepo(t)
	head := withFile(t, base, "clusters/c-02.yaml", func(s string) string { return strings.Replace(s, "mode: ha", "mode: multinode", 1) })
	revs := []fstest.MapFS{base, head}
	want := wantArtifacts(t, revs)

	c := loader.NewCache()
	const loads = 8
	var got [loads][2]string
	var sweeps, dropped atomic.Int64
	done := make(chan struct{})
	var sweeper sync.WaitGroup
	sweeper.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			e, _ := c.Sweep()
			sweeps.Add(1)
			dropped.Add(int64(e))
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	for i := range loads {
		wg.Go(func() { got[i] = artifacts(revs[i%2], loader.Options{Cache: c}) })
	}
	wg.Wait()
	close(done)
	sweeper.Wait()
	for i := range loads {
		if got[i] != want[i%2] {
			t.Errorf("load %d (revision %d) differs from a load without the cache:\n%s", i, i%2, cmp.Diff(want[i%2], got[i]))
		}
	}
	n := decodedFiles(base)
	if hits, misses := c.Stats(); hits+misses != loads*n || misses < n+1 {
		t.Errorf("hits %d, misses %d; want %d in all, at least %d misses", hits, misses, loads*n, n+1)
	}
	t.Logf("%d sweeps dropped %d decoded files", sweeps.Load(), dropped.Load())
	if p := loader.CacheChanged(c, mapVersions(base, head)); len(p) > 0 {
		t.Errorf("shared trees changed:\n%s", strings.Join(p, "\n"))
	}
	// Both revisions loaded again, then one sweep: their files, no more.
	for _, fsys := range revs {
		loader.Load(fsys, loader.Options{Cache: c})
	}
	c.Sweep()
	if entries, _ := c.Len(); entries != n+1 {
		t.Errorf("%d decoded files held after a sweep, want %d (the two revisions')", entries, n+1)
	}
	if got := fmt.Sprint(c.Sweep()); got != "0 0" {
		t.Errorf("an idle sweep dropped %s", got)
	}
}
