package reconcile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func publish(t *testing.T, w *Workdir, l *Lock, serial int64, files map[string]string) error {
	t.Helper()
	st := emptyState()
	st.Serial = serial
	st.Revision = "rev-" + strconv.FormatInt(serial, 10)
	for name := range files {
		st.Artifacts[name] = "x"
	}
	return w.Publish(l, st, func(put func(string, []byte) error) error {
		for name, data := range files {
			if err := put(name, []byte(data)); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestPublish(t *testing.T) {
	w := Open(filepath.Join(t.TempDir(), "wd"))
	if st, err := w.ReadState(); err != nil || st.Serial != 0 || st.Lineage != "" {
		t.Fatalf("empty work directory: %+v, %v", st, err)
	}
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	for n := int64(1); n <= 8; n++ {
		if err := publish(t, w, l, n, map[string]string{"c/a.yaml": "a" + strconv.FormatInt(n, 10), "manifest.json": "{}"}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := w.ReadState()
	if err != nil || st.Serial != 8 || st.Revision != "rev-8" || st.Lineage == "" {
		t.Fatalf("state after 8 publishes: %+v, %v", st, err)
	}
	data, err := os.ReadFile(filepath.Join(w.CurrentDir(), "c", "a.yaml"))
	if err != nil || string(data) != "a8" {
		t.Fatalf("current/c/a.yaml = %q, %v", data, err)
	}
	if fi, err := os.Lstat(filepath.Join(w.Dir, "state.json")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("state.json is not a symlink: %v", err)
	}
	var sets []string
	entries, _ := os.ReadDir(filepath.Join(w.Dir, "artifacts"))
	for _, e := range entries {
		sets = append(sets, e.Name())
	}
	if diff := cmp.Diff([]string{"4", "5", "6", "7", "8", "current"}, sets); diff != "" {
		t.Errorf("artifacts/ (-want +got):\n%s", diff)
	}

	// A wrong serial, a bad name, a failing writer: nothing changes.
	if err := publish(t, w, l, 8, nil); err == nil || !strings.Contains(err.Error(), "serials must follow") {
		t.Errorf("publishing serial 8 again: %v", err)
	}
	for _, bad := range []string{"../x", "/x", "a/../../b", "a//b", ""} {
		if err := publish(t, w, l, 9, map[string]string{bad: "x"}); err == nil {
			t.Errorf("put(%q) accepted", bad)
		}
	}
	boom := errors.New("boom")
	st9 := emptyState()
	st9.Serial = 9
	err = w.Publish(l, st9, func(put func(string, []byte) error) error {
		_ = put("c/half.yaml", []byte("x"))
		return boom
	})
	if !errors.Is(err, boom) {
		t.Errorf("a failing writer: %v", err)
	}
	if st, _ := w.ReadState(); st.Serial != 8 {
		t.Errorf("serial %d after failed publishes, want 8", st.Serial)
	}
	if left, _ := filepath.Glob(filepath.Join(w.Dir, "artifacts", ".tmp-*")); len(left) > 0 {
		t.Errorf("temporary sets left: %v", left)
	}
	if err := w.Publish(nil, st9, nil); err == nil {
		t.Error("publishing without the lock")
	}
}

func TestLockHeld(t *testing.T) {
	w := Open(t.TempDir())
	l, err := w.Lock(context.Background(), "apply", 0)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to open files: a second open in this process conflicts
	// as another process's would.
	_, err = w.Lock(context.Background(), "plan", 0)
	var locked *LockedError
	if !errors.As(err, &locked) || locked.Holder.PID != os.Getpid() || locked.Holder.Operation != "apply" {
		t.Fatalf("second lock: %v", err)
	}
	if !strings.Contains(err.Error(), "locked by pid "+strconv.Itoa(os.Getpid())+" (apply, ") {
		t.Errorf("message: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Lock(ctx, "plan", 1e9); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled wait: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := w.Lock(context.Background(), "plan", 0)
	if err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	l2.Unlock()
}

func TestAppliedState(t *testing.T) {
	var none *State
	if _, ok := none.Primary("c", "controller"); ok || none.Deployed("c", "n") {
		t.Error("a nil state knows something")
	}
	st := emptyState()
	st.Clusters["c"] = &ClusterState{Nodes: map[string]NodeState{"node-2": {ID: 2}}, Primary: map[string]string{"controller": "node-2"}}
	if n, ok := st.Primary("c", "controller"); !ok || n != "node-2" || !st.Deployed("c", "node-2") || st.Deployed("c", "node-1") {
		t.Errorf("state lookups: %q %v", n, ok)
	}
}

func TestStalePlan(t *testing.T) {
	p := &Plan{Lineage: "l1", Serial: 3}
	if err := p.CheckFresh(&State{Lineage: "l1", Serial: 3}, "x.plan"); err != nil {
		t.Errorf("fresh plan: %v", err)
	}
	err := p.CheckFresh(&State{Lineage: "l1", Serial: 4, Revision: "0123456789abcdef"}, "x.plan")
	want := "the plan x.plan is stale: it was made against state serial 3, but the state is now at serial 4 (applied revision 0123456789ab); run plan again"
	if err == nil || err.Error() != want {
		t.Errorf("stale plan:\n got %v\nwant %s", err, want)
	}
	if err := p.CheckFresh(&State{Lineage: "l2", Serial: 3}, "x.plan"); err == nil || !strings.Contains(err.Error(), "lineage l1") {
		t.Errorf("another lineage: %v", err)
	}
}
