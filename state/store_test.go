//go:build linux

package state

import (
	"context"
	"errors"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func publish(t *testing.T, w *Workdir, l *Lock, serial int64, files map[string]string) error {
	t.Helper()
	st := Empty()
	st.Serial = serial
	st.Revision = "rev-" + strconv.FormatInt(serial, 10)
	for name := range files {
		st.Artifacts[name] = "x"
	}
	// In a fixed order: the tests that fail the Nth step count the steps.
	names := slices.Sorted(maps.Keys(files))
	return w.Publish(l, st, func(put func(string, []byte) error) error {
		for _, name := range names {
			if err := put(name, []byte(files[name])); err != nil {
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
	st9 := Empty()
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
	st := Empty()
	st.Clusters["c"] = &ClusterState{Nodes: map[string]NodeState{"node-2": {ID: 2}}, Primary: map[string]string{"controller": "node-2"}}
	if n, ok := st.Primary("c", "controller"); !ok || n != "node-2" || !st.Deployed("c", "node-2") || st.Deployed("c", "node-1") {
		t.Errorf("state lookups: %q %v", n, ok)
	}
}

// damagedWorkdir publishes serials 1 to 3 and returns the work directory.
func damagedWorkdir(t *testing.T) (*Workdir, *Lock) {
	t.Helper()
	w := Open(filepath.Join(t.TempDir(), "wd"))
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Unlock() })
	for n := int64(1); n <= 3; n++ {
		if err := publish(t, w, l, n, map[string]string{"c/a.yaml": "a" + strconv.FormatInt(n, 10)}); err != nil {
			t.Fatal(err)
		}
	}
	return w, l
}

// setNames lists artifacts/ (sets and current's target).
func setNames(t *testing.T, w *Workdir) []string {
	t.Helper()
	var out []string
	entries, _ := os.ReadDir(w.artifacts())
	for _, e := range entries {
		out = append(out, e.Name())
	}
	if target, err := os.Readlink(w.CurrentDir()); err == nil {
		out = append(out, "current→"+target)
	}
	return out
}

// TestDamagedStateChangesNothing edits or removes parts of a work directory with
// sets 1-3 applied: every damage is a *DamagedError naming what disagrees, and
// neither Tidy nor Publish removes a set (the one current names above all) or
// starts a new lineage.
func TestDamagedStateChangesNothing(t *testing.T) {
	editSerial := func(serial string) func(t *testing.T, w *Workdir) {
		return func(t *testing.T, w *Workdir) {
			// Through the state.json link, as an editor writing in place does.
			name := filepath.Join(w.Dir, "state.json")
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			edited := strings.Replace(string(data), `"serial": 3`, `"serial": `+serial, 1)
			if edited == string(data) {
				t.Fatalf("no serial 3 in %s", data)
			}
			if err := os.WriteFile(name, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, tc := range map[string]struct {
		damage func(t *testing.T, w *Workdir)
		want   []string // in the error
	}{
		"serial 3 edited to 1":  {editSerial("1"), []string{"says serial 1", "applied set 3"}},
		"serial 3 edited to -7": {editSerial("-7"), []string{"says serial -7", "applied set 3"}},
		"state.json replaced by an edited copy": {func(t *testing.T, w *Workdir) {
			// sed -i replaces the link with a regular file.
			name := filepath.Join(w.Dir, "state.json")
			data, _ := os.ReadFile(name)
			os.Remove(name)
			edited := strings.Replace(string(data), `"serial": 3`, `"serial": 1`, 1)
			if err := os.WriteFile(name, []byte(edited), 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"is a copy", "says serial 1", "applied set 3"}},
		"current removed": {func(t *testing.T, w *Workdir) {
			os.Remove(w.CurrentDir())
		}, []string{"current is missing beside applied sets 1, 2, 3", "state.json exists", "ln -sfn 3 "}},
		"current and state.json removed": {func(t *testing.T, w *Workdir) {
			os.Remove(w.CurrentDir())
			os.Remove(filepath.Join(w.Dir, "state.json"))
		}, []string{"current is missing beside applied sets 1, 2, 3"}},
		"current points to a removed set": {func(t *testing.T, w *Workdir) {
			os.RemoveAll(w.SetDir(3))
		}, []string{"points to applied set 3", "ln -sfn 2 "}},
		"current points elsewhere": {func(t *testing.T, w *Workdir) {
			os.Remove(w.CurrentDir())
			os.Symlink("../..", w.CurrentDir())
		}, []string{`points to "../..", which is not an applied set`}},
	} {
		t.Run(name, func(t *testing.T) {
			w, l := damagedWorkdir(t)
			tc.damage(t, w)
			before := setNames(t, w)
			_, err := w.ReadState()
			var damaged *DamagedError
			if !errors.As(err, &damaged) {
				t.Fatalf("ReadState: %v, want a *DamagedError", err)
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q:\n%v", want, err)
				}
			}
			if err := w.Tidy(l); !errors.As(err, &damaged) {
				t.Errorf("Tidy: %v", err)
			}
			for _, serial := range []int64{1, 2, 4} {
				if err := publish(t, w, l, serial, map[string]string{"c/a.yaml": "new"}); !errors.As(err, &damaged) {
					t.Errorf("Publish serial %d: %v", serial, err)
				}
			}
			if diff := cmp.Diff(before, setNames(t, w)); diff != "" {
				t.Errorf("the work directory changed (-before +after):\n%s", diff)
			}

			// --reinit starts over, at a serial above every set, keeping them.
			old := readSetState(t, w, 2)
			w.Reinit = true
			sets := w.sets()
			newest := sets[len(sets)-1]
			st, err := w.ReadState()
			if err != nil || st.Serial != newest || st.Lineage != "" || len(st.Artifacts) != 0 {
				t.Fatalf("ReadState with Reinit: %+v, %v; want serial %d", st, err, newest)
			}
			if err := publish(t, w, l, newest+1, map[string]string{"c/a.yaml": "new"}); err != nil {
				t.Fatalf("Publish with Reinit: %v", err)
			}
			w.Reinit = false
			st, err = w.ReadState()
			if err != nil || st.Serial != newest+1 || st.Lineage == old.Lineage {
				t.Fatalf("after the reinit: %+v, %v (old lineage %s)", st, err, old.Lineage)
			}
			if _, err := os.Stat(w.SetDir(2)); err != nil {
				t.Errorf("set 2 removed by the reinit: %v", err)
			}
		})
	}
}

func readSetState(t *testing.T, w *Workdir, n int64) *State {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(w.SetDir(n), ".state.json"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := Parse("set", data)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestCrashLeftoversAccepted builds, by hand, what a crash at each point of a
// publish leaves, and checks the next run accepts it: the state is the previous
// set's or the new one's, and Tidy restores the state.json link.
func TestCrashLeftoversAccepted(t *testing.T) {
	t.Run("first apply: set 1 renamed, current not switched", func(t *testing.T) {
		w, _ := damagedWorkdir(t)
		os.Remove(w.CurrentDir())
		os.Remove(filepath.Join(w.Dir, "state.json"))
		os.RemoveAll(w.SetDir(2))
		os.RemoveAll(w.SetDir(3))
		st, err := w.ReadState()
		if err != nil || st.Serial != 0 {
			t.Fatalf("ReadState: %+v, %v", st, err)
		}
	})
	t.Run("current switched, state.json not linked yet", func(t *testing.T) {
		w, l := damagedWorkdir(t)
		os.Remove(filepath.Join(w.Dir, "state.json"))
		st, err := w.ReadState()
		if err != nil || st.Serial != 3 {
			t.Fatalf("ReadState: %+v, %v", st, err)
		}
		if err := w.Tidy(l); err != nil {
			t.Fatal(err)
		}
		if target, err := os.Readlink(filepath.Join(w.Dir, "state.json")); err != nil || target != stateLink {
			t.Errorf("state.json after Tidy: %q, %v", target, err)
		}
	})
	t.Run("a set written, current not switched", func(t *testing.T) {
		w, l := damagedWorkdir(t)
		if err := os.Symlink("2", filepath.Join(w.artifacts(), ".link-current-0badc0de")); err != nil {
			t.Fatal(err)
		}
		os.Remove(w.CurrentDir())
		os.Symlink("2", w.CurrentDir())
		st, err := w.ReadState()
		if err != nil || st.Serial != 2 {
			t.Fatalf("ReadState: %+v, %v", st, err)
		}
		if err := publish(t, w, l, 3, map[string]string{"c/a.yaml": "again"}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"1", "2", "3", "current", "current→3"}, setNames(t, w)); diff != "" {
			t.Errorf("artifacts/ (-want +got):\n%s", diff)
		}
	})
}

// TestSetMode checks applied sets are 0755 like every other directory fuelsync
// writes (os.MkdirTemp makes 0700).
func TestSetMode(t *testing.T) {
	w, _ := damagedWorkdir(t)
	for _, dir := range []string{w.SetDir(3), filepath.Join(w.SetDir(3), "c")} {
		fi, err := os.Stat(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o755 {
			t.Errorf("%s has mode %v, want 0755", dir, fi.Mode().Perm())
		}
	}
}

// TestSerialNeverWraps: serials end at 2^53 (exact in every JSON reader). A
// set at the last serial is kept, and nothing is published after it: the
// serial after it, and the one an int64 wraps to (2^63-1 + 1 = -2^63), are
// refused and change nothing. A state beyond the end (an older fuelsync let
// state push take 2^63-2) is followed by nothing either.
func TestSerialNeverWraps(t *testing.T) {
	const last = int64(1) << 53
	w := Open(filepath.Join(t.TempDir(), "wd"))
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	pushAt := func(serial int64) error {
		st := Empty()
		st.Lineage, st.Serial = "lin", serial
		st.Artifacts["c/a.yaml"] = "x"
		return w.publish(l, st, true, nil, func(put func(string, []byte) error, _ func(string, string) error) error {
			return put("c/a.yaml", []byte("a"))
		})
	}
	if err := pushAt(last); err != nil {
		t.Fatalf("a set at serial 2^53: %v", err)
	}
	for _, serial := range []int64{last + 1, math.MinInt64} {
		if err := publish(t, w, l, serial, map[string]string{"c/a.yaml": "b"}); err == nil || !strings.Contains(err.Error(), "no apply can follow it") {
			t.Errorf("publishing serial %d after 2^53: %v", serial, err)
		}
	}
	if st, err := w.ReadState(); err != nil || st.Serial != last {
		t.Errorf("state after refused publishes: serial %d, %v", st.Serial, err)
	}
	w2 := Open(filepath.Join(t.TempDir(), "wd"))
	l2, err := w2.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Unlock()
	beyond := Empty()
	beyond.Lineage, beyond.Serial = "lin", math.MaxInt64-1
	if err := w2.publish(l2, beyond, true, nil, func(func(string, []byte) error, func(string, string) error) error { return nil }); err == nil || !strings.Contains(err.Error(), "serials end at") {
		t.Errorf("publishing serial 2^63-2: %v", err)
	}
}

// TestStateReadOnceUnderLock: the applied state that Tidy reads under a lock
// is the one ReadStateUnder returns and the publish under that lock replaces:
// a fleet's state (6.7 MB of JSON at 20,000 nodes) is parsed once by an
// apply, not again by its plan and by its publish. After a publish, the state
// is read anew.
func TestStateReadOnceUnderLock(t *testing.T) {
	w, l := lockedWorkdir(t)
	if err := publish(t, w, l, 1, map[string]string{"c/a.yaml": "a"}); err != nil {
		t.Fatal(err)
	}
	before := stateParses.Load()
	if err := w.Tidy(l); err != nil {
		t.Fatal(err)
	}
	st, err := w.ReadStateUnder(l)
	if err != nil || st.Serial != 1 {
		t.Fatalf("ReadStateUnder: %+v, %v", st, err)
	}
	if err := publish(t, w, l, 2, map[string]string{"c/a.yaml": "b"}); err != nil {
		t.Fatal(err)
	}
	if got := stateParses.Load() - before; got != 1 {
		t.Errorf("the state was parsed %d times by Tidy, ReadStateUnder and the publish, want once", got)
	}
	// The lock's state is the published one's predecessor no more.
	st, err = w.ReadStateUnder(l)
	if err != nil || st.Serial != 2 {
		t.Fatalf("ReadStateUnder after the publish: %+v, %v", st, err)
	}
	// Without a lock, or another work directory's: read.
	before = stateParses.Load()
	if st, err := w.ReadStateUnder(nil); err != nil || st.Serial != 2 {
		t.Fatalf("ReadStateUnder(nil): %+v, %v", st, err)
	}
	if got := stateParses.Load() - before; got != 1 {
		t.Errorf("ReadStateUnder(nil) parsed the state %d times, want once", got)
	}
}
