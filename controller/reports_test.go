package controller

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestLoopRecordsReconciles: each cluster's reconcile history gets the
// reconciles that apply it or change its status, with the nodes changed;
// one that leaves it as it was adds nothing.
func TestLoopRecordsReconciles(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	wd := state.Open(filepath.Join(t.TempDir(), "wd"))
	store := reports.NewStore(reports.Open(wd))
	loop := &Loop{Workdir: wd, Source: &source.LocalSource{Path: dir}, ToolVersion: "test", Reports: store}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute]}\n  node-7: {id: 7, roles: [compute]}")
	gittest.Commit(t, repo, "a new node")
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("a new node: %s", o)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo-hcl.hcl"), `roles = ["compute"]`, `roles = ["computee"]`)
	gittest.Commit(t, repo, "a typo in demo-hcl")
	loop.ReconcileOnce(ctx)

	demo, err := store.Reconciles(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if len(demo) != 2 || demo[0].Serial != 2 || !demo[0].Applied || demo[0].NodesAdded != 1 || demo[1].Serial != 1 || demo[1].NodesAdded != 6 {
		t.Errorf("demo's reconciles (newest first): %+v", demo)
	}
	hcl, _ := store.Reconciles(ctx, "demo-hcl")
	if len(hcl) != 2 || hcl[0].Status != state.StatusHeld || hcl[0].Applied || len(hcl[0].Problems) == 0 || hcl[1].Status != state.StatusSynced {
		t.Errorf("demo-hcl's reconciles (newest first): %+v", hcl)
	}
}

// reportConverged stores a success of every node of cluster on its default
// graph applied in st.
func reportConverged(t *testing.T, store *reports.Store, st *state.State, cluster string) {
	t.Helper()
	for node := range st.Clusters[cluster].Nodes {
		view, ok := render.ViewDigest(st.Artifacts, cluster+"/nodes/"+node+"/default.yaml")
		if !ok {
			t.Fatalf("no default graph of %s", node)
		}
		end := time.Now()
		r := &reports.Report{Cluster: cluster, Node: node, Graph: "default", ETag: strings.Repeat("e", 64), Status: reports.Success,
			StartedAt: end.Add(-time.Minute), FinishedAt: &end, ReceivedAt: end, View: view, Serial: st.Serial}
		if err := store.Put(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDependsOnHealthy: depends_on with healthy: true applies the dependent
// cluster only once the dependency is synced at the revision and healthy:
// it waits, saying why, without reconciling again and again; the report that
// makes the dependency healthy reconciles the same revision again, which
// applies it.
func TestDependsOnHealthy(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo-hcl.hcl"), `  mode    = "ha"`, "  mode    = \"ha\"\n  depends_on = [{cluster = \"demo\", healthy = true}]")
	gittest.Commit(t, repo, "demo-hcl after demo is healthy")
	wd := state.Open(filepath.Join(t.TempDir(), "wd"))
	store := reports.NewStore(reports.Open(wd))
	loop := &Loop{Workdir: wd, Source: &source.LocalSource{Path: dir}, ToolVersion: "test", Reports: store}
	status := func() (demo, hcl *operation.ClusterResult) {
		loop.mu.Lock()
		defer loop.mu.Unlock()
		for _, c := range loop.results {
			switch c.Name {
			case "demo":
				demo = c
			case "demo-hcl":
				hcl = c
			}
		}
		return
	}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	// demo applied; demo-hcl waits for it to be synced, then (the loop runs
	// again at once) to be healthy.
	if o := loop.ReconcileOnce(ctx); o != operation.Planned {
		t.Fatalf("second reconcile: %s %q", o, loop.Status().Errors)
	}
	demo, hcl := status()
	if demo.Status != state.StatusSynced || hcl.Status != state.StatusOutOfSync || len(hcl.Problems) != 1 ||
		!strings.Contains(hcl.Problems[0], "waiting for cluster demo to be healthy at revision ") || !strings.Contains(hcl.Problems[0], "(it is unknown: 0 of 6 nodes converged)") {
		t.Fatalf("demo %+v, demo-hcl %+v", demo, hcl)
	}
	if o := loop.ReconcileOnce(ctx); o != operation.Skipped {
		t.Errorf("a reconcile with nothing new while demo-hcl waits for a health: %s, want skipped", o)
	}
	st, err := wd.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	if st.Clusters["demo-hcl"] != nil && st.Artifacts["demo-hcl/cluster.yaml"] != "" {
		t.Fatal("demo-hcl applied while demo's health is unknown")
	}
	reportConverged(t, store, st, "demo")
	select {
	case <-loop.trigger:
	default:
		t.Fatal("the report that made demo healthy triggered no reconcile")
	}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("the reconcile after demo became healthy: %s %q", o, loop.Status().Errors)
	}
	if _, hcl := status(); hcl.Status != state.StatusSynced {
		t.Errorf("demo-hcl once demo is healthy: %+v", hcl)
	}
}
