package etcdstate

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/state"
)

func etcdReport(node, status string, start time.Time) *reports.Report {
	r := &reports.Report{Cluster: "demo", Node: node, Graph: "default", ETag: strings.Repeat("a", 64), Status: status,
		StartedAt: start, ReceivedAt: time.Now().UTC(), View: "v", Serial: 1}
	if status != reports.Running {
		end := start.Add(time.Minute)
		r.FinishedAt = &end
		r.Tasks = []reports.Task{{ID: "keystone", Status: reports.Failed}, {ID: "netconfig", Status: reports.Success}}
	}
	return r
}

// TestEtcdReports: the reports on etcd: a run's result replaces its running
// report, the history keeps the newest N, and two replicas (two stores on the
// same prefix) see each other's reports through the watch, removals too; a
// new store (a restarted replica) finds every last report, and each cluster's
// reconciles, bounded.
func TestEtcdReports(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	open := func() *reports.Store {
		w := etcdWorkdir(t, c, "/fs", state.DefaultLockTTL, 5*time.Second)
		s := reports.NewStore(reports.Open(w))
		s.HistoryKeep, s.ReconcileKeep = 3, 2
		return s
	}
	a, b := open(), open()
	var mu sync.Mutex
	seen := map[string]int{}
	b.OnChange(func(cluster string) { mu.Lock(); seen[cluster]++; mu.Unlock() })
	if err := b.Load(ctx); err != nil {
		t.Fatal(err)
	}
	go b.Run(ctx)

	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := range 5 {
		start := t0.Add(time.Duration(i) * time.Minute)
		if err := a.Put(ctx, etcdReport("node-1", reports.Running, start)); err != nil {
			t.Fatal(err)
		}
		if err := a.Put(ctx, etcdReport("node-1", reports.Failed, start)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := a.History(ctx, "demo", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, r := range h {
		seqs = append(seqs, r.Seq)
		if r.Status != reports.Failed || len(r.Tasks) != 0 || r.TaskCounts[reports.Failed] != 1 || r.FailedTasks[0] != "keystone" {
			t.Errorf("entry %d: %s, %d tasks, counts %v; want a summary", r.Seq, r.Status, len(r.Tasks), r.TaskCounts)
		}
	}
	if len(seqs) != 3 || seqs[0] != 5 || seqs[2] != 3 {
		t.Errorf("history seqs %v, want [5 4 3]", seqs)
	}
	// The last report is kept whole, once.
	if w, err := a.Whole(ctx, "demo", "node-1"); err != nil || w == nil || w.Seq != 5 || len(w.Tasks) != 2 || w.TaskCounts[reports.Success] != 1 {
		t.Errorf("node-1's last report whole: %+v, %v", w, err)
	}
	// The other replica sees the last report through the watch, summarized.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := b.Last("demo", "node-1")
		if r != nil && r.Seq == 5 && r.Status == reports.Failed {
			if len(r.FailedTasks) != 1 || r.FailedTasks[0] != "keystone" || r.TaskCounts[reports.Success] != 1 {
				t.Errorf("the watched summary: failed %v, counts %v", r.FailedTasks, r.TaskCounts)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica b never saw node-1's last report: %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	if seen["demo"] == 0 {
		t.Error("OnChange was not called for the other replica's reports")
	}
	mu.Unlock()

	// Reports of one node from both replicas at once: each numbered once.
	var wg sync.WaitGroup
	for i, s := range []*reports.Store{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Put(ctx, etcdReport("node-2", reports.Failed, t0.Add(time.Duration(i)*time.Hour))); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	h, _ = a.History(ctx, "demo", "node-2")
	if len(h) != 3 || h[0].Seq != 4 {
		t.Errorf("node-2 after 4 concurrent reports: %d kept, newest seq %d; want 3 kept, seq 4", len(h), h[0].Seq)
	}

	for i := range 3 {
		if err := a.AddReconcile(ctx, &reports.Reconcile{Cluster: "demo", Serial: int64(i + 1), Status: "synced", Applied: true}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := b.Reconciles(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Seq != 3 || recs[0].Serial != 3 {
		t.Errorf("reconciles: %+v", recs)
	}

	// A restarted replica finds every last report.
	fresh := open()
	if err := fresh.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if r := fresh.Last("demo", "node-2"); r == nil || r.Seq != 4 || r.FailedTasks[0] != "keystone" {
		t.Errorf("after a restart: node-2's last report %+v", r)
	}

	// node-1 removed from the applied state: replica a prunes it, b forgets it.
	st := &state.State{Clusters: map[string]*state.ClusterState{"demo": {Nodes: map[string]state.NodeState{"node-2": {}}}}}
	if err := a.Prune(ctx, st); err != nil {
		t.Fatal(err)
	}
	for b.Last("demo", "node-1") != nil {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("replica b still has node-1's report after its removal")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cli := a.Backend.(*etcdReports).e.client
	resp, err := cli.Get(ctx, "/fs/.fuelsync/reports/history/demo/node-1/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 0 {
		t.Errorf("node-1's history after its removal: %d keys (%v)", resp.Count, err)
	}
	if w, err := a.Backend.Whole(ctx, "demo", "node-1"); w != nil || err != nil {
		t.Errorf("node-1's last report whole after its removal: %+v, %v", w, err)
	}
}

// TestEtcdReportsOlderHistory: a history kept whole by an older fuelsync
// (no whole/ key) reads as summaries, and its newest entry is the node's last
// report whole.
func TestEtcdReportsOlderHistory(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	w := etcdWorkdir(t, c, "/fs", state.DefaultLockTTL, 5*time.Second)
	b := reports.Open(w)
	cli := b.(*etcdReports).e.client
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for seq := int64(1); seq <= 2; seq++ {
		r := etcdReport("node-1", reports.Failed, t0.Add(time.Duration(seq)*time.Hour))
		r.Seq = seq
		data, _ := reports.Marshal(r)
		if _, err := cli.Put(ctx, "/fs/.fuelsync/reports/history/demo/node-1/"+reports.SeqKey(seq), string(data)); err != nil {
			t.Fatal(err)
		}
	}
	h, err := b.History(ctx, "demo", "node-1")
	if err != nil || len(h) != 2 || len(h[0].Tasks) != 0 || h[0].TaskCounts[reports.Failed] != 1 {
		t.Fatalf("the older history: %+v, %v; want 2 summaries", h, err)
	}
	if whole, err := b.Whole(ctx, "demo", "node-1"); err != nil || whole == nil || whole.Seq != 2 || len(whole.Tasks) != 2 {
		t.Errorf("the last report whole of an older history: %+v, %v", whole, err)
	}
}
