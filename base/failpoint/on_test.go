//go:build fuelsync_testhooks

package failpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestEnable: a point runs its function, given its arguments, only while
// enabled; its error is Inject's; a function may disable its own point.
func TestEnable(t *testing.T) {
	if err := Inject(StateStep, "x"); err != nil {
		t.Fatalf("a point not enabled: %v", err)
	}
	var got []string
	Enable(StateStep, func(args ...string) error {
		got = append(got, args...)
		if args[0] == "fail" {
			return errors.New("injected")
		}
		return nil
	})
	if err := Inject(StateStep, "a", "b"); err != nil {
		t.Fatal(err)
	}
	if err := Inject(StateRead, "other point"); err != nil {
		t.Fatal(err)
	}
	if err := Inject(StateStep, "fail"); err == nil || err.Error() != "injected" {
		t.Fatalf("the function's error: %v", err)
	}
	Disable(StateStep)
	if err := Inject(StateStep, "fail"); err != nil {
		t.Fatalf("a disabled point: %v", err)
	}
	if strings.Join(got, " ") != "a b fail" {
		t.Errorf("the function was given %q; want a b fail", got)
	}
	Enable(StateRead, func(...string) error { Disable(StateRead); return nil })
	_ = Inject(StateRead)
	if err := Inject(StateRead); err != nil {
		t.Fatal(err)
	}
}

// TestParse: FUELSYNC_FAILPOINTS names known points with known terms, each
// point once.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		spec, err string
	}{
		{spec: "state/step=kill@3"},
		{spec: "state/step=fail@1,kill@2;controller/shard-commit=pause(/tmp/x)"},
		{spec: "cli/serve-shard=cpuprofile(/tmp/p)"},
		{spec: "state/step", err: "want name=term"},
		{spec: "state/step=", err: "want name=term"},
		{spec: "state/stp=kill@1", err: "no such point"},
		{spec: "state/step=kill@1;state/step=fail@2", err: "named twice"},
		{spec: "state/step=kill@0", err: "a count from 1"},
		{spec: "state/step=kill@x", err: "a count from 1"},
		{spec: "state/step=crash@1", err: "want kill@N"},
		{spec: "state/step=pause()", err: "want kill@N"},
		{spec: "state/step=pause(/tmp", err: "want kill@N"},
		{spec: "state/step=sleep(1s)", err: "want kill@N"},
	} {
		points, err := Parse(tc.spec)
		switch {
		case tc.err == "" && (err != nil || len(points) == 0):
			t.Errorf("%q: %v", tc.spec, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v; want one saying %q", tc.spec, err, tc.err)
		}
	}
}

// TestFailAt: fail@N fails the Nth evaluation of its point only, with
// ENOSPC, naming the point's arguments.
func TestFailAt(t *testing.T) {
	points, err := Parse("state/step=fail@3")
	if err != nil {
		t.Fatal(err)
	}
	f := points[StateStep]
	for n := 1; n <= 5; n++ {
		err := f("rename", "current")
		if (err != nil) != (n == 3) {
			t.Errorf("evaluation %d: %v", n, err)
		}
		if n == 3 && (!errors.Is(err, syscall.ENOSPC) || !strings.HasPrefix(err.Error(), "rename current: ")) {
			t.Errorf("evaluation 3: %v; want ENOSPC of rename current", err)
		}
	}
}

// TestPause: pause(DIR) holds its point only when DIR/arm exists, writes the
// point's arguments to DIR/paused, and lets it go when DIR/paused is removed.
func TestPause(t *testing.T) {
	dir := t.TempDir()
	points, err := Parse("controller/shard-commit=pause(" + dir + ")")
	if err != nil {
		t.Fatal(err)
	}
	f := points[ShardCommit]
	_ = f("c-01") // not armed: goes on
	if err := os.WriteFile(filepath.Join(dir, "arm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() { _ = f("c-01", "c-02"); close(done) })
	defer wg.Wait()
	paused := filepath.Join(dir, "paused")
	deadline := time.Now().Add(10 * time.Second)
	var data []byte
	for data, err = os.ReadFile(paused); err != nil || !strings.HasSuffix(string(data), "\n"); data, err = os.ReadFile(paused) {
		if time.Now().After(deadline) {
			t.Fatal("never paused")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if string(data) != "c-01 c-02\n" {
		t.Errorf("paused names %q", data)
	}
	select {
	case <-done:
		t.Fatal("went on while paused")
	default:
	}
	if _, err := os.Stat(filepath.Join(dir, "arm")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("arm left: %v", err)
	}
	if err := os.Remove(paused); err != nil {
		t.Fatal(err)
	}
	<-done
}
