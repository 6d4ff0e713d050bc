package controller

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// cacheStats are a loader cache's counts: decodes saved and done so far,
// decoded files held.
type cacheStats struct{ Hits, Misses, Entries int }

func statsOf(c *loader.Cache) cacheStats {
	var s cacheStats
	s.Hits, s.Misses = c.Stats()
	s.Entries, _ = c.Len()
	return s
}

// TestLoopDecodesOnlyChangedFiles: the loop's loads share a cache across
// reconciles. The first decodes every file; a commit that changes one file
// decodes that file alone, and the others are the cache's; a commit that
// loads nothing (the README) keeps the cache as it is, so that the next
// commit of one file again decodes one file.
func TestLoopDecodesOnlyChangedFiles(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	c := loader.NewCache()
	loads := 0
	loop := &Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test",
		Load: loader.Options{Cache: c}, onLoad: func() { loads++ }}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied || loads != 1 {
		t.Fatalf("first reconcile: %s after %d loads %q", o, loads, loop.Status().Errors)
	}
	first := statsOf(c)
	n := first.Misses
	if n < 10 || first.Hits != 0 || first.Entries != n {
		t.Fatalf("after the first reconcile: %+v; want every file decoded once, and held", first)
	}
	step := func(what string, edit func(), outcome operation.Outcome, wantLoads int, want cacheStats) {
		t.Helper()
		edit()
		gittest.Commit(t, repo, what)
		if o := loop.ReconcileOnce(ctx); o != outcome || loads != wantLoads {
			t.Fatalf("%s: %s after %d loads, want %s after %d %q", what, o, loads, outcome, wantLoads, loop.Status().Errors)
		}
		if diff := cmp.Diff(want, statsOf(c)); diff != "" {
			t.Errorf("%s: the cache (-want +got):\n%s", what, diff)
		}
	}
	// A node added needs nothing of the applied revision for its causes:
	// the plan loads the new revision alone, every file but demo.yaml the
	// cache's, and the sweep drops demo.yaml's older version.
	step("a new node", func() {
		gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute]}\n  node-7: {id: 7, roles: [compute]}")
	}, operation.Applied, 2, cacheStats{Hits: n - 1, Misses: n + 1, Entries: n})
	step("the README", func() {
		gittest.EditFile(t, filepath.Join(dir, "README.md"), "#", "# Edited:")
	}, operation.NoChange, 2, cacheStats{Hits: n - 1, Misses: n + 1, Entries: n})
	step("a comment in the HCL cluster", func() {
		gittest.EditFile(t, filepath.Join(dir, "clusters", "demo-hcl.hcl"), "# The HCL twin", "# Edited: the HCL twin")
	}, operation.NoChange, 3, cacheStats{Hits: 2*n - 2, Misses: n + 2, Entries: n})
}

// TestLoopCacheBounded: over many commits that each change three files, the
// loop's own cache holds one revision's files after every reconcile, not
// every version it decoded.
func TestLoopCacheBounded(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	loop := &Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	n, blobs := loop.cache.Len()
	if n < 10 {
		t.Fatalf("the loop's cache holds %d files after the first reconcile", n)
	}
	files := []string{"clusters/demo.yaml", "clusters/demo-hcl.hcl", "plugins/quickstart/graphs/deployment.yaml"}
	const commits = 12
	for i := range commits {
		for _, f := range files {
			gittest.EditFile(t, filepath.Join(dir, filepath.FromSlash(f)), "\n", fmt.Sprintf("\n# commit %d\n", i))
		}
		gittest.Commit(t, repo, fmt.Sprint("commit ", i))
		if o := loop.ReconcileOnce(ctx); o != operation.NoChange {
			t.Fatalf("commit %d: %s %q", i, o, loop.Status().Errors)
		}
		if e, b := loop.cache.Len(); e != n || b != blobs {
			t.Fatalf("after commit %d: the cache holds %d decoded files and %d blobs, want %d and %d (one revision's)", i, e, b, n, blobs)
		}
	}
	if hits, misses := loop.cache.Stats(); misses != n+commits*len(files) || hits != commits*(n-len(files)) {
		t.Errorf("hits %d, misses %d; want %d and %d (each commit decodes its %d files)", hits, misses, commits*(n-len(files)), n+commits*len(files), len(files))
	}
}

// TestMaterialiseDecodesOnlyChangedFiles: a replica that makes each applied
// set (a follower; a shard, whose work directory names its loop) loads each
// revision with its loop's cache: the set of a commit that changed one file
// decodes that file alone, and the cache, swept after each set, holds one
// revision. A set made while a reconcile of the loop runs leaves the sweep
// to the reconcile.
func TestMaterialiseDecodesOnlyChangedFiles(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	src := &source.LocalSource{Path: dir}
	leader := &Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "leader")), Source: src, ToolVersion: "test"}
	apply := func(what string) *state.State {
		t.Helper()
		if o := leader.ReconcileOnce(ctx); o != operation.Applied {
			t.Fatalf("%s: %s %q", what, o, leader.Status().Errors)
		}
		st, err := leader.Workdir.ReadState()
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	st1 := apply("first commit")
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute]}\n  node-7: {id: 7, roles: [compute]}")
	gittest.Commit(t, repo, "a new node")
	st2 := apply("a new node")
	if st1.Revision == st2.Revision {
		t.Fatal("both states are of one revision")
	}

	follower := &Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "follower")), Source: src, ToolVersion: "test"}
	follower.init()
	shard := &Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "shard")), Source: src, ToolVersion: "test"}
	shard.init()
	for _, tc := range []struct {
		name string
		loop *Loop
		make func(st *state.State) error
	}{
		{"follower", follower, func(st *state.State) error { return follower.materialise(ctx, st, false) }},
		{"shard", shard, func(st *state.State) error { return shard.materialise(ctx, st, true) }},
	} {
		c := tc.loop.cache
		if err := tc.make(st1); err != nil {
			t.Fatalf("%s: the first set: %v", tc.name, err)
		}
		first := statsOf(c)
		n := first.Misses
		if n < 10 || first.Hits != 0 || first.Entries != n {
			t.Fatalf("%s: after the first set: %+v; want every file decoded once, and held", tc.name, first)
		}
		if err := tc.make(st2); err != nil {
			t.Fatalf("%s: the second set: %v", tc.name, err)
		}
		if diff := cmp.Diff(cacheStats{Hits: n - 1, Misses: n + 1, Entries: n}, statsOf(c)); diff != "" {
			t.Errorf("%s: after the second set (-want +got):\n%s", tc.name, diff)
		}
		// During a reconcile: the first revision's demo.yaml decoded again,
		// and nothing swept. The next set made between reconciles sweeps:
		// it keeps what was used since the last sweep (both revisions), and
		// the one after it the second revision alone.
		// (In another work directory, which lacks the sets: a loop with
		// the same cache.)
		other := &Loop{Source: src, ToolVersion: "test", Load: loader.Options{Cache: c}}
		again := func(st *state.State) {
			t.Helper()
			other.Workdir = state.Open(filepath.Join(t.TempDir(), "again"))
			if err := other.materialise(ctx, st, false); err != nil {
				t.Fatal(err)
			}
		}
		other.reconciling.Store(true)
		again(st1)
		other.reconciling.Store(false)
		if diff := cmp.Diff(cacheStats{Hits: 2*n - 2, Misses: n + 2, Entries: n + 1}, statsOf(c)); diff != "" {
			t.Errorf("%s: after a set made during a reconcile (-want +got):\n%s", tc.name, diff)
		}
		again(st2)
		if diff := cmp.Diff(cacheStats{Hits: 3*n - 2, Misses: n + 2, Entries: n + 1}, statsOf(c)); diff != "" {
			t.Errorf("%s: after a set made between reconciles (-want +got):\n%s", tc.name, diff)
		}
		again(st2)
		if diff := cmp.Diff(cacheStats{Hits: 4*n - 2, Misses: n + 2, Entries: n}, statsOf(c)); diff != "" {
			t.Errorf("%s: after another (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestLoopLoadBudget: the loop's loads honour Load's budget (serve's and
// watch's FUELSYNC_MAX_FILE_SIZE): a file over it makes the revision invalid,
// with the file named.
func TestLoopLoadBudget(t *testing.T) {
	ctx := context.Background()
	dir, _ := gittest.Quickstart(t)
	loop := &Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test",
		Load: loader.Options{MaxFileSize: 100}}
	if o := loop.ReconcileOnce(ctx); o != operation.Invalid {
		t.Fatalf("a reconcile over the budget: %s %q", o, loop.Status().Errors)
	}
	if errs := strings.Join(loop.Status().Errors, "\n"); !strings.Contains(errs, "over the 100 bytes limit") {
		t.Errorf("the problems do not say a file is over the limit:\n%s", errs)
	}
}
