package reports

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/state"
)

// claimed is a work directory with fuelsync's marker.
func claimed(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, state.MarkerName), []byte("fuelsync work directory, format 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func report(node, status, etag string, start time.Time) *Report {
	r := &Report{Cluster: "demo", Node: node, Graph: "default", ETag: etag, Status: status, StartedAt: start, ReceivedAt: time.Now(), View: "v-" + etag}
	if status != Running {
		end := start.Add(time.Second)
		r.FinishedAt = &end
	}
	return r
}

func seqsOf(rs []*Report) []int64 {
	var out []int64
	for _, r := range rs {
		out = append(out, r.Seq)
	}
	return out
}

// TestWorkdirHistory: a run's result takes its running report's place; the
// history keeps the newest keep reports, the oldest dropped first; a restart
// (a new store on the same directory) finds every node's last report.
func TestWorkdirHistory(t *testing.T) {
	ctx := context.Background()
	dir := claimed(t)
	s := NewStore(&Workdir{Dir: dir})
	s.HistoryKeep = 3
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		start := t0.Add(time.Duration(i) * time.Minute)
		if err := s.Put(ctx, report("node-1", Running, etag, start)); err != nil {
			t.Fatal(err)
		}
		if got := s.Last("demo", "node-1"); got.Status != Running || got.Seq != int64(i+1) {
			t.Fatalf("run %d: last is %s seq %d", i, got.Status, got.Seq)
		}
		done := report("node-1", Success, etag, start)
		done.Tasks = []Task{{ID: "a", Status: Success}, {ID: "b", Status: Skipped}}
		if err := s.Put(ctx, done); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.History(ctx, "demo", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]int64{5, 4, 3}, seqsOf(h)); d != "" {
		t.Errorf("history seqs (-want +got):\n%s", d)
	}
	// The history holds summaries: the tasks' counts, not the tasks; the
	// last report is kept whole apart.
	for _, r := range h {
		if r.Status != Success || len(r.Tasks) != 0 || r.TaskCounts[Success] != 1 || r.TaskCounts[Skipped] != 1 {
			t.Errorf("history entry %d: %s with %d tasks, counts %v; want the run's success, summarized", r.Seq, r.Status, len(r.Tasks), r.TaskCounts)
		}
	}
	w, err := s.Whole(ctx, "demo", "node-1")
	if err != nil || w == nil || w.Seq != 5 || len(w.Tasks) != 2 || w.TaskCounts[Success] != 1 {
		t.Errorf("the last report whole: %+v, %v; want seq 5 with its 2 tasks", w, err)
	}
	// Read once while it is the last report; read again once it is not.
	if again, _ := s.Whole(ctx, "demo", "node-1"); again != w {
		t.Error("the last report whole was read again")
	}
	files, _ := os.ReadDir(filepath.Join(dir, "reports", "nodes", "demo", "node-1"))
	if len(files) != 4 {
		t.Errorf("%d files in the node's directory; want 3 and last.json", len(files))
	}
	// A report of another run while the last is a success is a new entry.
	if err := s.Put(ctx, report("node-1", Failed, etag, t0.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, report("node-2", Running, etag, t0)); err != nil {
		t.Fatal(err)
	}

	if w, _ := s.Whole(ctx, "demo", "node-1"); w == nil || w.Seq != 6 || w.Status != Failed {
		t.Errorf("the last report whole after a new report: %+v", w)
	}

	again := NewStore(&Workdir{Dir: dir})
	if err := again.Load(ctx); err != nil {
		t.Fatal(err)
	}
	last := again.Cluster("demo")
	if last["node-1"].Seq != 6 || last["node-1"].Status != Failed || last["node-2"].Status != Running {
		t.Errorf("after a restart: node-1 %+v, node-2 %+v", last["node-1"], last["node-2"])
	}
	if s.Last("demo", "node-1").TaskCounts != nil || again.Last("demo", "node-1").Tasks != nil {
		t.Error("the store keeps tasks in memory")
	}
}

func TestWorkdirRefuses(t *testing.T) {
	ctx := context.Background()
	// Not a claimed work directory: nothing is written.
	dir := t.TempDir()
	err := (&Workdir{Dir: dir}).Put(ctx, report("node-1", Running, etag, time.Now()), 3)
	if err == nil || !strings.Contains(err.Error(), "not a claimed work directory") {
		t.Errorf("Put into an unclaimed directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "reports")); err == nil {
		t.Error("reports/ was made in an unclaimed directory")
	}
	// reports/ a link elsewhere: refused, nothing written there.
	dir = claimed(t)
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(dir, "reports")); err != nil {
		t.Fatal(err)
	}
	err = (&Workdir{Dir: dir}).Put(ctx, report("node-1", Running, etag, time.Now()), 3)
	if err == nil || !strings.Contains(err.Error(), "not a directory (a link or a file)") {
		t.Errorf("Put through a link: %v", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) > 0 {
		t.Errorf("written through the link: %v", entries)
	}
	if _, err := (&Workdir{Dir: dir}).Last(ctx); err == nil {
		t.Error("Last read through the link")
	}
	// A name that is not a name.
	s := NewStore(&Workdir{Dir: claimed(t)})
	bad := report("../x", Running, etag, time.Now())
	if err := s.Put(ctx, bad); err == nil {
		t.Error("a report of node ../x was stored")
	}
}

func TestReconcileHistory(t *testing.T) {
	ctx := context.Background()
	s := NewStore(&Workdir{Dir: claimed(t)})
	s.ReconcileKeep = 2
	for i := range 4 {
		if err := s.AddReconcile(ctx, &Reconcile{Cluster: "demo", Serial: int64(i + 1), Status: "synced", Applied: true,
			Problems: []string{"1", "2", "3", "4", "5", "6", "7"}}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := s.Reconciles(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Serial != 4 || recs[1].Serial != 3 || len(recs[0].Problems) != MaxReconcileProblems {
		t.Errorf("reconciles: %+v", recs)
	}
	if recs, _ := s.Reconciles(ctx, "other"); len(recs) != 0 {
		t.Errorf("another cluster's reconciles: %v", recs)
	}
}

// TestHealth: a node converged when its last report is a success on the graph
// applied now; progressing while running or on an older graph; failed on a
// failure on the applied graph. The cluster is unknown before any report,
// degraded with one failure (the failed task named), healthy when all
// converged.
func TestHealth(t *testing.T) {
	st := &state.State{Clusters: map[string]*state.ClusterState{"demo": {Nodes: map[string]state.NodeState{"node-1": {}, "node-2": {}, "node-3": {}}}},
		Artifacts: map[string]string{}}
	cur := map[string]string{}
	for _, n := range []string{"node-1", "node-2", "node-3"} {
		cur[n] = strings.Repeat(n[len(n)-1:], 64)
		st.Artifacts["demo/nodes/"+n+"/default.yaml"] = cur[n]
	}
	s := NewStore(&Workdir{Dir: claimed(t)})
	ctx := context.Background()
	check := func(what string, want Health) {
		t.Helper()
		if d := cmp.Diff(want, s.Health(st, "demo")); d != "" {
			t.Errorf("%s (-want +got):\n%s", what, d)
		}
	}
	put := func(node, status, view string) {
		t.Helper()
		r := report(node, status, etag, time.Now())
		r.View = view
		if status == Failed {
			r.Message = "puppet exited 1\nsecond line"
			r.Tasks = []Task{{ID: "keystone", Status: Failed}, {ID: "netconfig", Status: Success}}
		}
		if err := s.Put(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	check("no report", Health{Health: Unknown, Progressing: 3})
	put("node-1", Success, cur["node-1"])
	check("one converged", Health{Health: Progressing, Converged: 1, Progressing: 2})
	put("node-2", Success, "an older view")
	put("node-3", Running, cur["node-3"])
	check("one on an older graph, one running", Health{Health: Progressing, Converged: 1, Progressing: 2})
	put("node-3", Failed, cur["node-3"])
	check("one failed", Health{Health: Degraded, Converged: 1, Progressing: 1, Failed: 1,
		Problems: []string{"node node-3 failed graph default: task keystone failed: puppet exited 1"}})
	put("node-2", Success, cur["node-2"])
	put("node-3", Success, cur["node-3"])
	check("all converged", Health{Health: Healthy, Converged: 3})
	// A new commit changes node-2's graph: it has not run it yet.
	st.Artifacts["demo/nodes/node-2/default.yaml"] = strings.Repeat("f", 64)
	check("a new graph", Health{Health: Progressing, Converged: 2, Progressing: 1})
	if h := s.Health(st, "other"); h.Health != Unknown {
		t.Errorf("a cluster not applied: %+v", h)
	}

	// Prune: node-3 removed from the applied state, then the cluster.
	delete(st.Clusters["demo"].Nodes, "node-3")
	if err := s.Prune(ctx, st); err != nil {
		t.Fatal(err)
	}
	if s.Last("demo", "node-3") != nil {
		t.Error("a removed node's report is kept")
	}
	if h, _ := s.History(ctx, "demo", "node-3"); len(h) != 0 {
		t.Errorf("a removed node's history is kept: %d reports", len(h))
	}
	delete(st.Clusters, "demo")
	if err := s.Prune(ctx, st); err != nil {
		t.Fatal(err)
	}
	if len(s.Clusters()) != 0 {
		t.Errorf("clusters left: %v", s.Clusters())
	}
}

// TestWorkdirWholeAndOlderHistory: the node's last report whole is last.json
// only while it is the history's newest entry (a crash between the two
// writes leaves an older one: the newest summary is answered then); a history
// kept whole by an older fuelsync reads as summaries, and its newest entry is
// the last report whole.
func TestWorkdirWholeAndOlderHistory(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	withTasks := func(seq int64) *Report {
		r := report("node-1", Failed, etag, t0.Add(time.Duration(seq)*time.Hour))
		r.Seq, r.ReceivedAt, r.Tasks = seq, t0.Add(time.Duration(seq)*time.Hour+time.Minute), []Task{{ID: "a", Status: Success}, {ID: "keystone", Status: Failed}}
		return r
	}
	for name, tc := range map[string]struct {
		files     map[string]*Report // file name → report, stored whole (Marshal) or summarized
		summaries bool
		wantSeq   int64
		wantTasks int
	}{
		"an older history, whole":    {files: map[string]*Report{seqName(1): withTasks(1), seqName(2): withTasks(2)}, wantSeq: 2, wantTasks: 2},
		"last.json of an older seq":  {files: map[string]*Report{seqName(2): withTasks(2), lastName: withTasks(1)}, summaries: true, wantSeq: 2},
		"last.json of the newest":    {files: map[string]*Report{seqName(1): withTasks(1), seqName(2): withTasks(2), lastName: withTasks(2)}, summaries: true, wantSeq: 2, wantTasks: 2},
		"no last.json, a summary":    {files: map[string]*Report{seqName(3): withTasks(3)}, summaries: true, wantSeq: 3},
		"last.json without its node": {files: map[string]*Report{lastName: withTasks(1)}},
	} {
		t.Run(name, func(t *testing.T) {
			dir := claimed(t)
			nd := filepath.Join(dir, "reports", "nodes", "demo", "node-1")
			if err := os.MkdirAll(nd, 0o755); err != nil {
				t.Fatal(err)
			}
			for file, r := range tc.files {
				data, _ := Marshal(r)
				if file == lastName {
					data, _ = MarshalWhole(r)
				} else if tc.summaries {
					data, _ = MarshalSummary(r)
				}
				if err := os.WriteFile(filepath.Join(nd, file), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s := NewStore(&Workdir{Dir: dir})
			w, err := s.Whole(ctx, "demo", "node-1")
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantSeq == 0 {
				if w != nil {
					t.Errorf("a whole report without a history: %+v", w)
				}
				return
			}
			if w == nil || w.Seq != tc.wantSeq || len(w.Tasks) != tc.wantTasks || w.TaskCounts[Failed] != 1 || len(w.FailedTasks) != 1 {
				t.Errorf("Whole: %+v; want seq %d with %d tasks, its counts", w, tc.wantSeq, tc.wantTasks)
			}
			h, err := s.History(ctx, "demo", "node-1")
			if err != nil || len(h) == 0 {
				t.Fatal(h, err)
			}
			for _, r := range h {
				if len(r.Tasks) != 0 || r.TaskCounts[Failed] != 1 || r.FailedTasks[0] != "keystone" {
					t.Errorf("history entry %d: %d tasks, counts %v, failed %v; want a summary", r.Seq, len(r.Tasks), r.TaskCounts, r.FailedTasks)
				}
			}
		})
	}
}

// TestPruneReconciles: the reconciles of a cluster no longer in the applied
// state are removed with it, even when none of its nodes reported.
func TestPruneReconciles(t *testing.T) {
	ctx := context.Background()
	dir := claimed(t)
	s := NewStore(&Workdir{Dir: dir})
	for _, c := range []string{"kept", "gone"} {
		if err := s.AddReconcile(ctx, &Reconcile{Cluster: c, Serial: 1, Status: "synced", Applied: true}); err != nil {
			t.Fatal(err)
		}
	}
	st := &state.State{Clusters: map[string]*state.ClusterState{"kept": {}}}
	if err := s.Prune(ctx, st); err != nil {
		t.Fatal(err)
	}
	if recs, _ := s.Reconciles(ctx, "gone"); len(recs) != 0 {
		t.Errorf("a removed cluster's reconciles are kept: %d", len(recs))
	}
	if recs, _ := s.Reconciles(ctx, "kept"); len(recs) != 1 {
		t.Errorf("an applied cluster's reconciles: %d, want 1", len(recs))
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "reports", "reconciles"))
	if len(entries) != 1 {
		t.Errorf("%d reconcile directories; want 1", len(entries))
	}
}
