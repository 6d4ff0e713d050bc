//go:build fuelsync_testhooks

package etcdstate

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/base/failpoint"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

// A commit that fails without an answer keeps its set, which the next run
// removes when the state did not move; a failure after the commit (current
// not switched) is finished by the next run.
func TestEtcdCrashAroundCommit(t *testing.T) {
	c := etcdtest.Start(t, 1)
	w := etcdWorkdir(t, c, "crash", 5*time.Second, 5*time.Second)
	if _, err := publishNext(t, w); err != nil {
		t.Fatal(err)
	}
	failAt := func(name string) {
		failpoint.Enable(failpoint.StateStep, func(step ...string) error {
			if step[0] == name {
				return errors.New("injected failure at " + step[0])
			}
			return nil
		})
	}
	defer failpoint.Disable(failpoint.StateStep)

	// 1. The commit gets no answer (and did not happen).
	failAt("commit state")
	if _, err := publishNext(t, w); err == nil {
		t.Fatal("the failed commit was reported as done")
	}
	failpoint.Disable(failpoint.StateStep)
	if _, err := os.Stat(w.SetDir(2)); err != nil {
		t.Fatalf("the set of a commit without an answer was removed: %v", err)
	}
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Tidy(l); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if _, err := os.Stat(w.SetDir(2)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("set 2, never committed, is still there after the next run: %v", err)
	}

	// 2. Committed, but current not switched.
	failAt("rename current")
	_, err = publishNext(t, w)
	var applied *state.AppliedError
	if !errors.As(err, &applied) || applied.Serial != 2 {
		t.Fatalf("a failure after the commit: %v; want an AppliedError of serial 2", err)
	}
	failpoint.Disable(failpoint.StateStep)
	if n := w.CurrentSerial(); n != 1 {
		t.Fatalf("current names %d before the next run; want 1 (the switch failed)", n)
	}
	l, err = w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Tidy(l); err != nil {
		t.Fatal(err)
	}
	l.Unlock()
	if n := w.CurrentSerial(); n != 2 {
		t.Errorf("current names %d after the next run; want 2, the committed set", n)
	}
	if n, err := publishNext(t, w); err != nil || n != 3 {
		t.Errorf("the next apply: serial %d, %v; want 3", n, err)
	}
}
