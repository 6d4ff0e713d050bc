package operation

import (
	"context"
	"io/fs"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/fuelsync/fuelsync/internal/benchutil"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestColdApplyMemoryFollowsLargestCluster: the peak heap of a cold apply of
// 16 clusters is within 1.5 times that of 4 clusters of the same size (the
// repogen heavy shape, 25 nodes a cluster): an apply holds a few clusters at
// a time, not the fleet. Holding every cluster's render until the publish
// made it 2.5 times.
func TestColdApplyMemoryFollowsLargestCluster(t *testing.T) {
	// The collector runs often, so that the heap read is close to what is
	// live rather than to when the collector last ran.
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	peaks := map[int]uint64{}
	for _, n := range []int{4, 16} {
		spec := repogen.Spec{Plugins: 11, Tasks: 1000, Nodes: n * 25, Clusters: n, Seed: 1, CrossDepends: 60, StageFanIn: true}
		fsys := repogen.Generate(spec)
		w := state.Open(filepath.Join(t.TempDir(), "wd"))
		op := &Operation{Workdir: w, ToolVersion: "test"}
		var res *Result
		var err error
		peaks[n] = benchutil.PeakHeap(func() {
			res, err = op.Run(context.Background(), Request{Revision: source.Revision{SHA: source.WorkingTree, FS: fsys}, Apply: true})
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != Applied || len(res.Next.Clusters) != n {
			t.Fatalf("%d clusters: outcome %s, %d clusters applied", n, res.Outcome, len(res.Next.Clusters))
		}
		t.Logf("%d clusters of 25 nodes: peak heap %.1f MB", n, float64(peaks[n])/1e6)
	}
	if ratio := float64(peaks[16]) / float64(peaks[4]); ratio > 1.5 {
		t.Errorf("the cold apply of 16 clusters peaks at %.1f MB of heap, %.2f times that of 4 clusters of the same size (%.1f MB): want at most 1.5",
			float64(peaks[16])/1e6, ratio, float64(peaks[4])/1e6)
	}
}

// TestReleaseChangeMemoryWithinColdApply: the plan and the apply of a release
// change (a task definition of the release edited: every node of every
// cluster changes) peak at most 0.9 times the heap of the cold apply of the
// same fleet (4 clusters of 100 nodes, the repogen heavy shape, from git, the
// applied revision readable again). The causes come from the change of the
// task catalogue, not from a second render of the applied revision, and a
// walk that compares with applied files holds one cluster at a time, where
// the cold apply holds two: the live heap of the release change is smaller
// than the cold apply's, not only equal, so that its peak (the collector's
// goal, twice what a cycle found live) stays under the cold apply's wherever
// the cycles land. The medians of three runs of each are compared. With two
// clusters in hand, the plan gave 1.03 times and the apply 0.95.
func TestReleaseChangeMemoryWithinColdApply(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	dir := t.TempDir()
	revA, revD := gittest.ReleaseChange(t, dir)
	open := func(rev string) (fs.FS, error) {
		fsys, _, err := loader.OpenRevision(dir, rev)
		return fsys, err
	}
	// Each step three times, each time from a cold apply into a new work
	// directory, and the medians compared: one peak moves by a tenth from
	// run to run with the collector's timing (0.70 to 0.89 times the cold
	// apply's on the development machine).
	var peaks [3][]float64 // cold apply, plan, apply
	for range 3 {
		op := &Operation{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), ToolVersion: "test", OpenRevision: open}
		run := func(what, rev string, apply bool) (*Result, uint64) {
			t.Helper()
			fsys, err := open(rev)
			if err != nil {
				t.Fatal(err)
			}
			var res *Result
			peak := benchutil.PeakHeap(func() {
				res, err = op.Run(context.Background(), Request{Revision: source.Revision{SHA: rev, FS: fsys}, Apply: apply})
			})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			t.Logf("%s: peak heap %.1f MB", what, float64(peak)/1e6)
			return res, peak
		}
		res, cold := run("cold apply", revA, true)
		if res.Outcome != Applied {
			t.Fatalf("cold apply: outcome %s", res.Outcome)
		}
		peaks[0] = append(peaks[0], float64(cold))
		for i, apply := range []bool{false, true} {
			what := map[bool]string{false: "plan", true: "apply"}[apply] + " of the release change"
			res, peak := run(what, revD, apply)
			if cs := res.Plan.Changes; cs.Summary.Deploy != gittest.ReleaseChangeSpec.Nodes {
				t.Fatalf("%s: %d nodes to deploy, want %d", what, cs.Summary.Deploy, gittest.ReleaseChangeSpec.Nodes)
			}
			peaks[i+1] = append(peaks[i+1], float64(peak))
		}
	}
	cold := benchutil.Median(peaks[0])
	for i, what := range []string{"plan", "apply"} {
		peak := benchutil.Median(peaks[i+1])
		if ratio := peak / cold; ratio > 0.9 {
			t.Errorf("the %s of the release change peaks at %.1f MB of heap (median of 3), %.2f times the cold apply's (%.1f MB): want at most 0.9",
				what, peak/1e6, ratio, cold/1e6)
		}
	}
}

// TestComparesApplied: the walk of a plan takes one cluster at a time when
// one of the clusters it renders has applied files to compare with, and two
// (as many as cores) when none has: a cold apply, or clusters new to the
// state.
func TestComparesApplied(t *testing.T) {
	applied := map[string]map[string]string{
		"a":     {"a/cluster.yaml": "1"},
		"empty": {},
	}
	for _, tc := range []struct {
		name     string
		old      map[string]map[string]string
		clusters []string
		want     bool
	}{
		{"cold apply", nil, []string{"a", "b"}, false},
		{"every cluster applied", applied, []string{"a"}, true},
		{"one of them applied", applied, []string{"b", "a", "c"}, true},
		{"none of them applied", applied, []string{"b", "c"}, false},
		{"applied without files", applied, []string{"empty"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &planner{old: tc.old}
			if got := p.comparesApplied(tc.clusters); got != tc.want {
				t.Errorf("comparesApplied(%v) = %v, want %v", tc.clusters, got, tc.want)
			}
		})
	}
}
