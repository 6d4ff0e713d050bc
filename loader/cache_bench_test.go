package loader_test

import (
	"io/fs"
	"maps"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/fuelsync/fuelsync/internal/benchutil"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// largeHead is the large generated repository with one cluster file changed: the
// head revision of BenchmarkLoadTwoRevisions.
func largeHead(b *testing.B, base fstest.MapFS) fstest.MapFS {
	const name = "clusters/c-01.yaml"
	head := maps.Clone(base)
	src := string(base[name].Data)
	changed := strings.Replace(src, "mode: ha", "mode: multinode", 1)
	if changed == src {
		b.Fatalf("%s has no mode: ha to change", name)
	}
	head[name] = &fstest.MapFile{Data: []byte(changed), Mode: base[name].Mode}
	return head
}

// twoRevisions times loading two revisions as diff does, with one cache for both
// and without a cache, alternating the two so they share the machine's noise (each
// side after a GC), and reports
//
//	cache-ms, nocache-ms  medians of the time to load both revisions
//	cache/nocache-ratio   median of the ratio of adjacent pairs
//	second-ms             median of the second load alone, with the cache
//	hits, misses          the cache's counts for the two loads
func twoRevisions(b *testing.B, open func(rev int) fs.FS) {
	load := func(fsys fs.FS, c *loader.Cache) {
		if _, diags := loader.Load(fsys, loader.Options{Cache: c}); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
	}
	timed := func(f func()) float64 {
		runtime.GC()
		t0 := time.Now()
		f()
		return float64(time.Since(t0))
	}
	var cached, uncached, second, ratios []float64
	var hits, misses int
	i := 0
	for b.Loop() {
		withCache := func() {
			c := loader.NewCache()
			load(open(0), c)
			t0 := time.Now()
			load(open(1), c)
			second = append(second, float64(time.Since(t0)))
			hits, misses = c.Stats()
		}
		without := func() {
			load(open(0), nil)
			load(open(1), nil)
		}
		var wc, wo float64
		if i%2 == 0 {
			wc, wo = timed(withCache), timed(without)
		} else {
			wo, wc = timed(without), timed(withCache)
		}
		cached, uncached, ratios = append(cached, wc), append(uncached, wo), append(ratios, wc/wo)
		i++
	}
	b.ReportMetric(benchutil.Median(cached)/1e6, "cache-ms")
	b.ReportMetric(benchutil.Median(uncached)/1e6, "nocache-ms")
	b.ReportMetric(benchutil.Median(ratios), "cache/nocache-ratio")
	b.ReportMetric(benchutil.Median(second)/1e6, "second-ms")
	b.ReportMetric(float64(hits), "hits")
	b.ReportMetric(float64(misses), "misses")
}

// BenchmarkLoadTwoRevisions loads the acceptance-size repository and a revision of it
// with one cluster file changed, from memory (fstest.MapFS): what the cache saves
// is decoding.
func BenchmarkLoadTwoRevisions(b *testing.B) {
	base, _, _ := largeRepo(b)
	revs := []fstest.MapFS{base, largeHead(b, base)}
	twoRevisions(b, func(rev int) fs.FS { return revs[rev] })
}

// BenchmarkLoadTwoRevisionsGit loads the same two revisions from the objects of a git
// repository, as `fuelsync diff --base REV --head REV` does (OpenRevision included):
// the cache also saves reading the blobs both revisions share.
func BenchmarkLoadTwoRevisionsGit(b *testing.B) {
	base, _, _ := largeRepo(b)
	head := largeHead(b, base)
	dir := b.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		b.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		b.Fatal(err)
	}
	for i, fsys := range []fstest.MapFS{base, head} {
		if err := repogen.WriteDir(fsys, dir); err != nil {
			b.Fatal(err)
		}
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			b.Fatal(err)
		}
		sig := &object.Signature{Name: "Bench", Email: "bench@example.com", When: time.Date(2024, 3, 1, i, 0, 0, 0, time.UTC)}
		if _, err := wt.Commit("revision", &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
			b.Fatal(err)
		}
	}
	revs := []string{"HEAD~1", "HEAD"}
	twoRevisions(b, func(rev int) fs.FS {
		fsys, _, err := loader.OpenRevision(dir, revs[rev])
		if err != nil {
			b.Fatal(err)
		}
		return fsys
	})
}
