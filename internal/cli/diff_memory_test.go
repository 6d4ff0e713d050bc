package cli

import (
	"io"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/fuelsync/fuelsync/internal/benchutil"
	"github.com/fuelsync/fuelsync/internal/gittest"
)

// TestDiffReleaseMemoryWithinColdApply: `fuelsync diff` of a release change
// (a task definition of the release edited: every node of every cluster
// changes) peaks at most 1.2 times the heap of the cold apply of the base
// (4 clusters of 100 nodes, the repogen heavy shape, from git), the medians of
// three runs of each compared. The diff holds one cluster of each side at a
// time; walking the head's clusters as an apply does, each with the base's
// render of it, and keeping the base's node files, made it 1.37 times.
func TestDiffReleaseMemoryWithinColdApply(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	dir := t.TempDir()
	revA, revD := gittest.ReleaseChange(t, dir)
	step := func(what string, want int, args ...string) float64 {
		t.Helper()
		code := 0
		peak := benchutil.PeakHeap(func() {
			code = run(append([]string{"fuelsync", "--repo", dir, "--color", "never"}, args...), io.Discard, io.Discard)
		})
		if code != want {
			t.Fatalf("%s: exit code %d, want %d", what, code, want)
		}
		t.Logf("%s: peak heap %.1f MB", what, float64(peak)/1e6)
		return float64(peak)
	}
	var cold, diff []float64
	for range 3 {
		wd := filepath.Join(t.TempDir(), "wd")
		cold = append(cold, step("cold apply", 0, "--rev", revA, "--workdir", wd, "--quiet", "apply", "--auto-approve"))
		diff = append(diff, step("diff of the release change", 1, "diff", "--base", revA, "--head", revD))
	}
	c, d := benchutil.Median(cold), benchutil.Median(diff)
	if ratio := d / c; ratio > 1.2 {
		t.Errorf("the diff of the release change peaks at %.1f MB of heap (median of 3), %.2f times the cold apply's (%.1f MB): want at most 1.2",
			d/1e6, ratio, c/1e6)
	}
}
