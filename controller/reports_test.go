package controller

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
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
