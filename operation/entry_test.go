package operation

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestEntryPoints: each typed entry point runs its kind of run, whatever
// the request said: Plan applies nothing even when asked to, Apply applies,
// ApplySaved refuses a plan the revision does not give, Approve refuses a
// cluster with no pending plan.
func TestEntryPoints(t *testing.T) {
	ctx := context.Background()
	w := state.Open(filepath.Join(t.TempDir(), "wd"))
	op := &Operation{Workdir: w, ToolVersion: "test"}
	req := Request{Revision: source.Revision{SHA: source.WorkingTree, FS: os.DirFS("../examples/quickstart")}, Apply: true}
	res, err := op.Plan(ctx, req)
	if err != nil || res.Outcome != Planned || w.CurrentSerial() != 0 {
		t.Fatalf("Plan with Apply set: %v, %v, serial %d; want planned, nothing applied", res.Outcome, err, w.CurrentSerial())
	}
	plan := res.Plan
	req.Apply = false
	if res, err := op.Apply(ctx, req); err != nil || res.Outcome != Applied || w.CurrentSerial() != 1 {
		t.Fatalf("Apply without Apply set: %v, %v, serial %d; want applied at serial 1", res.Outcome, err, w.CurrentSerial())
	}
	if _, err := op.ApplySaved(ctx, req, plan, "x.plan"); err == nil || w.CurrentSerial() != 1 {
		t.Errorf("ApplySaved of a plan made against serial 0: %v, serial %d; want refused (stale)", err, w.CurrentSerial())
	}
	if _, err := op.Approve(ctx, req, "demo", &state.Pending{Revision: source.WorkingTree}); err == nil || w.CurrentSerial() != 1 {
		t.Errorf("Approve with no pending plan: %v, serial %d; want refused", err, w.CurrentSerial())
	}
}
