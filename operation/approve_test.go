package operation_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestApproveRefusesReplacedPlan: an approval of the plan of A, read before
// the lock, is refused under the lock once a newer commit B replaced the
// pending plan (the state read then says so), and nothing is applied; the
// plan of B is applied.
func TestApproveRefusesReplacedPlan(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	demo := filepath.Join(dir, "clusters", "demo.yaml")
	gittest.EditFile(t, demo, "mode: ha ", "sync: manual\nmode: ha ")
	gittest.Commit(t, repo, "demo manual")
	wd := state.Open(filepath.Join(t.TempDir(), "wd"))
	src := &source.LocalSource{Path: dir}
	loop := &controller.Loop{Workdir: wd, Source: src, ToolVersion: "test"}
	pending := func() state.Pending {
		t.Helper()
		loop.ReconcileOnce(ctx)
		st, err := wd.ReadState()
		if err != nil || st.Clusters["demo"] == nil || st.Clusters["demo"].Pending == nil {
			t.Fatalf("demo has no pending plan: %v", err)
		}
		return *st.Clusters["demo"].Pending
	}
	a := pending()
	gittest.EditFile(t, demo, "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}")
	gittest.Commit(t, repo, "node-4 storage")
	b := pending()
	op := &operation.Operation{Workdir: wd, ToolVersion: "test"}
	approve := func(pd state.Pending) error {
		rev, err := src.At(ctx, pd.Revision)
		if err != nil {
			t.Fatal(err)
		}
		_, err = op.Run(ctx, operation.Request{Revision: rev, Targets: []string{"demo"}, Apply: true, Approve: &pd, Lock: "approve"})
		return err
	}
	var ae *operation.ApprovalError
	if err := approve(a); !errors.As(err, &ae) || !strings.Contains(err.Error(), "the plan awaiting approval is now of revision "+source.Short(b.Revision)) {
		t.Errorf("approving the replaced plan: %v", err)
	}
	if st, _ := wd.ReadState(); st.Clusters["demo"].StatusOf() != state.StatusAwaitingApproval {
		t.Errorf("after the refused approval, demo is %s", st.Clusters["demo"].StatusOf())
	}
	if err := approve(b); err != nil {
		t.Fatalf("approving the pending plan: %v", err)
	}
	if st, _ := wd.ReadState(); st.Clusters["demo"].StatusOf() != state.StatusSynced || st.Clusters["demo"].Revision != b.Revision {
		t.Errorf("after approving B, demo is %s at %s", st.Clusters["demo"].StatusOf(), st.Clusters["demo"].Revision)
	}
}
