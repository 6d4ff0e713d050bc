package operation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// An apply that asks a person (Request.Ask) takes the lock only once the
// answer is yes. Declined, it leaves nothing behind: no work directory, no lock file
// (issue 28: a cancelled interactive apply left a lock file). While it asks,
// the lock is free: another apply that commits meanwhile makes the plan shown
// stale, and nothing of it is applied. Nothing moved, a yes applies.
func TestApplyAsksBeforeTheLock(t *testing.T) {
	ctx := context.Background()
	rev := source.Revision{SHA: source.WorkingTree, FS: os.DirFS("../examples/quickstart")}
	wd := filepath.Join(t.TempDir(), "wd")
	w := state.Open(wd)
	op := &Operation{Workdir: w, ToolVersion: "test"}

	asked := 0
	res, err := op.Run(ctx, Request{Revision: rev, Apply: true, Ask: true, Confirm: func(res *Result) bool {
		asked++
		if res.Plan == nil || !res.Plan.ChangesPresent {
			t.Errorf("asked about no change: %+v", res.Plan)
		}
		return false
	}})
	if !errors.Is(err, ErrCancelled) || asked != 1 {
		t.Fatalf("declined: %v, asked %d times", err, asked)
	}
	if res == nil || res.Next != nil {
		t.Errorf("declined, yet applied: %+v", res)
	}
	if _, err := os.Lstat(wd); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(wd)
		t.Errorf("the cancelled apply left %s (%v): %v", wd, err, entries)
	}

	// Yes, but another apply commits serial 1 while the question is asked.
	_, err = op.Run(ctx, Request{Revision: rev, Apply: true, Ask: true, Confirm: func(*Result) bool {
		if other, err := op.Run(ctx, Request{Revision: rev, Apply: true}); err != nil || other.Next == nil || other.Next.Serial != 1 {
			t.Fatalf("the apply made while asking: %v", err)
		}
		return true
	}})
	var stale *StaleError
	want := "the state moved while the plan awaited confirmation: the plan was made against serial 0, the state is now at serial 1 (applied revision working-tree); run apply again"
	if !errors.As(err, &stale) || !stale.Asked || err.Error() != want {
		t.Errorf("the plan shown, applied after another apply:\n got %v\nwant %s", err, want)
	}
	if st, err := w.ReadState(); err != nil || st.Serial != 1 {
		t.Errorf("after the refusal: serial %d, %v; want the other apply's 1", st.Serial, err)
	}

	// Yes, nothing moved: applied.
	w2 := state.Open(filepath.Join(t.TempDir(), "wd2"))
	op2 := &Operation{Workdir: w2, ToolVersion: "test"}
	res, err = op2.Run(ctx, Request{Revision: rev, Apply: true, Ask: true, Confirm: func(*Result) bool { return true }})
	if err != nil || res.Outcome != Applied || res.Next == nil || res.Next.Serial != 1 {
		t.Fatalf("confirmed: %v, %+v", err, res)
	}
	// Nothing to apply: not asked.
	res, err = op2.Run(ctx, Request{Revision: rev, Apply: true, Ask: true, Confirm: func(*Result) bool { t.Error("asked about nothing"); return false }})
	if err != nil || res.Outcome != NoChange {
		t.Errorf("nothing to apply: %v, %v", err, res.Outcome)
	}
}
