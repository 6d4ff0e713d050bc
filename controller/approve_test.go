package controller

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestLoopApprovalPinned: an approval names the plan approved (what serve
// answered, what the reviewer read). When a newer commit replaced that plan
// before the loop applies it, nothing is applied and the loop says so; the
// plan now pending, approved by name, is applied.
func TestLoopApprovalPinned(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	demo := filepath.Join(dir, "clusters", "demo.yaml")
	gittest.EditFile(t, demo, "mode: ha ", "sync: manual\nmode: ha ")
	gittest.Commit(t, repo, "demo manual")
	wd := state.Open(filepath.Join(t.TempDir(), "wd"))
	loop := &Loop{Workdir: wd, Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	pending := func() state.Pending {
		t.Helper()
		st, err := wd.ReadState()
		if err != nil || st.Clusters["demo"] == nil || st.Clusters["demo"].Pending == nil {
			t.Fatalf("demo has no pending plan: %v", err)
		}
		return *st.Clusters["demo"].Pending
	}
	a := pending()
	// Reviewed and approved: plan A. Commit B lands and is planned first.
	gittest.EditFile(t, demo, "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}")
	b := gittest.Commit(t, repo, "node-4 storage")
	loop.ReconcileOnce(ctx)
	if got := pending(); got.Revision != b {
		t.Fatalf("the pending plan is of %s, want %s", got.Revision, b)
	}
	loop.Approve("demo", a)
	loop.ReconcileOnce(ctx)
	st, _ := wd.ReadState()
	if cs := st.Clusters["demo"]; cs.StatusOf() != state.StatusAwaitingApproval || cs.Revision == b {
		t.Errorf("approving plan A applied the plan of B: status %s, revision %s", cs.StatusOf(), cs.Revision)
	}
	if errs := strings.Join(loop.Status().Errors, "\n"); !strings.Contains(errs, "approve it again") {
		t.Errorf("the loop's errors say nothing of the approval refused: %q", errs)
	}
	loop.Approve("demo", pending())
	loop.ReconcileOnce(ctx)
	st, _ = wd.ReadState()
	if cs := st.Clusters["demo"]; cs.StatusOf() != state.StatusSynced || cs.Revision != b {
		t.Errorf("approving plan B: status %s, revision %s", cs.StatusOf(), cs.Revision)
	}
}

// TestLoopDependencySuspendedNoHotLoop: a cluster that depends on a suspended
// one waits, and the loop does not reconcile the same revision again at once
// (it did, 8 times a second, for as long as the dependency was suspended):
// the next reconcile of that revision is skipped. The cluster's problem says
// the dependency is suspended.
func TestLoopDependencySuspendedNoHotLoop(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "mode: ha ", "suspend: true\nmode: ha ")
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo-hcl.hcl"), `release = "quickstart-1.0"`, `release = "quickstart-1.0"`+"\n  depends_on = [\"demo\"]")
	gittest.Commit(t, repo, "demo suspended; demo-hcl after demo")
	loop := &Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	loop.ReconcileOnce(ctx)
	if o := loop.ReconcileOnce(ctx); o != operation.Skipped {
		t.Errorf("the same revision again: %s; want skipped", o)
	}
	st, err := loop.Workdir.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range loop.Clusters(st) {
		if c.Name == "demo-hcl" && (len(c.Problems) == 0 || !strings.Contains(c.Problems[0], "and it is suspended (suspend: true)")) {
			t.Errorf("demo-hcl's problems: %q", c.Problems)
		}
	}
}
