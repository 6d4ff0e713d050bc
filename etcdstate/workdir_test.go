package etcdstate

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

// The work directory with its state on etcd (state.Workdir over this
// backend): writers, the lock, push, members lost, the quorum lost.

// Two writers that read the same serial commit concurrently: exactly one
// commits each serial, the other is told where the state now is.
func TestEtcdStaleWriterRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := etcdWorkdir(t, c, "stale", 5*time.Second, 5*time.Second).Backend
	b := etcdWorkdir(t, c, "stale", 5*time.Second, 5*time.Second).Backend
	ctx := context.Background()
	for round := int64(0); round < 10; round++ {
		sa, err := a.ReadState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sb, err := b.ReadState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if sa.Serial != round || sb.Serial != round {
			t.Fatalf("round %d: the writers read serials %d and %d", round, sa.Serial, sb.Serial)
		}
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, be := range []state.Backend{a, b} {
			next := state.Empty()
			next.Lineage, next.Serial, next.Revision = "lin", round+1, fmt.Sprintf("writer-%d", i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = be.Commit(ctx, round, next)
			}()
		}
		wg.Wait()
		var won, lost int
		for _, err := range errs {
			var stale *state.StaleStateError
			switch {
			case err == nil:
				won++
			case errors.As(err, &stale):
				lost++
				if want := fmt.Sprintf("the state is now at serial %d", round+1); !strings.Contains(err.Error(), want) {
					t.Errorf("round %d: %q does not say %q", round, err, want)
				}
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if won != 1 || lost != 1 {
			t.Fatalf("round %d: %d commits won, %d refused; want 1 and 1", round, won, lost)
		}
	}
	if st, err := a.ReadState(ctx); err != nil || st.Serial != 10 {
		t.Fatalf("final state: %+v, %v", st, err)
	}
}

// Two work directories apply concurrently over one etcd state, each taking
// the lock: every serial is committed once, none skipped.
func TestEtcdConcurrentApplies(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var mu sync.Mutex
	committed := map[int64]string{}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i := 0; i < 2; i++ {
		w := etcdWorkdir(t, c, "apply", 5*time.Second, 5*time.Second)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 8; k++ {
				l, err := w.Lock(context.Background(), "test", 20*time.Second)
				if err != nil {
					errs <- err
					return
				}
				cur, err := w.ReadState()
				if err == nil {
					st := state.Empty()
					st.Lineage, st.Serial, st.Revision = cur.Lineage, cur.Serial+1, fmt.Sprintf("w%d-%d", i, k)
					st.Artifacts["a"] = "x"
					err = w.Publish(l, st, func(put func(string, []byte) error) error { return put("a", []byte(st.Revision)) })
					mu.Lock()
					if prev, dup := committed[st.Serial]; dup && err == nil {
						err = fmt.Errorf("serial %d committed twice (%s, %s)", st.Serial, prev, st.Revision)
					}
					committed[st.Serial] = st.Revision
					mu.Unlock()
				}
				l.Unlock()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for n := int64(1); n <= 16; n++ {
		if committed[n] == "" {
			t.Errorf("serial %d was never committed", n)
		}
	}
}

// TestEtcdLockHolder is the lock holder TestEtcdLockReleasedOnKill starts in
// a process of its own (and kills).
func TestEtcdLockHolder(t *testing.T) {
	url := os.Getenv("FUELSYNC_TEST_HOLD_LOCK")
	if url == "" {
		t.Skip("started by TestEtcdLockReleasedOnKill")
	}
	cfg, err := state.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.LockTTL = 2 * time.Second
	e, err := state.OpenEtcd(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir(): the SIGKILL leaves no time to remove it.
	w := &state.Workdir{Dir: os.Getenv("FUELSYNC_TEST_HOLD_DIR"), Backend: e}
	if _, err := w.Lock(context.Background(), "apply", 0); err != nil {
		t.Fatal(err)
	}
	fmt.Println("locked")
	time.Sleep(time.Minute)
}

// The lock's holder is readable, and the lock is free again within its lease
// TTL after the holder is SIGKILLed.
func TestEtcdLockReleasedOnKill(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const ttl = 2 * time.Second
	cmd := exec.Command(os.Args[0], "-test.run=^TestEtcdLockHolder$", "-test.v")
	cmd.Env = append(os.Environ(), "FUELSYNC_TEST_HOLD_LOCK="+c.URL("killed"), "FUELSYNC_TEST_HOLD_DIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	locked := make(chan bool)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "locked" {
				locked <- true
			}
		}
		close(locked)
	}()
	select {
	case ok := <-locked:
		if !ok {
			t.Fatal("the holder exited before taking the lock")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the holder did not take the lock in 30s")
	}
	w := etcdWorkdir(t, c, "killed", ttl, 5*time.Second)
	_, err = w.Lock(context.Background(), "apply", 0)
	var le *state.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("locking while held: %v", err)
	}
	host, _ := os.Hostname()
	if le.Holder.PID != cmd.Process.Pid || le.Holder.Host != host || le.Holder.Operation != "apply" || le.Holder.Since == "" {
		t.Errorf("holder %+v; want pid %d on %s", le.Holder, cmd.Process.Pid, host)
	}
	if want := fmt.Sprintf("is locked by pid %d (apply,", cmd.Process.Pid); !strings.Contains(err.Error(), want) {
		t.Errorf("%q does not say %q", err, want)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	_ = cmd.Wait()
	for {
		l, err := w.Lock(context.Background(), "apply", 0)
		if err == nil {
			t.Logf("lock free %s after the SIGKILL (lease TTL %s)", time.Since(killed).Round(time.Millisecond), ttl)
			l.Unlock()
			break
		}
		if !errors.As(err, &le) {
			t.Fatal(err)
		}
		// etcd may round a lease up to its minimum; a second of slack.
		if time.Since(killed) > ttl+time.Second+500*time.Millisecond {
			t.Fatalf("the lock is still held %s after its holder was killed (lease TTL %s): %v", time.Since(killed), ttl, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// state.Push refuses a state of another lineage, and an older one.
func TestEtcdPushRefusesOtherLineage(t *testing.T) {
	c := etcdtest.Start(t, 1)
	w := etcdWorkdir(t, c, "push", 5*time.Second, 5*time.Second)
	l, err := w.Lock(context.Background(), "push", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	st := state.Empty()
	st.Lineage, st.Serial = "aaaa", 3
	if changed, err := state.Push(w, l, st); err != nil || !changed {
		t.Fatalf("first push: %v, %v", changed, err)
	}
	if changed, err := state.Push(w, l, st); err != nil || changed {
		t.Fatalf("the same state again: %v, %v", changed, err)
	}
	other := state.Empty()
	other.Lineage, other.Serial = "bbbb", 9
	_, err = state.Push(w, l, other)
	var le *state.LineageError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "lineage bbbb") || !strings.Contains(err.Error(), "holds lineage aaaa") {
		t.Errorf("pushing another lineage: %v", err)
	}
	older := state.Empty()
	older.Lineage, older.Serial = "aaaa", 2
	if _, err := state.Push(w, l, older); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("pushing an older serial: %v", err)
	}
	if got, err := w.ReadState(); err != nil || got.Lineage != "aaaa" || got.Serial != 3 {
		t.Errorf("after the refused pushes: %+v, %v", got, err)
	}
}

// With one member of three killed, applies go on.
func TestEtcdMemberKilled(t *testing.T) {
	c := etcdtest.Start(t, 3)
	w := etcdWorkdir(t, c, "member", 3*time.Second, 5*time.Second)
	if _, err := publishNext(t, w); err != nil {
		t.Fatal(err)
	}
	c.Kill(0) // the first endpoint: the client moves to another
	for i := 0; i < 3; i++ {
		if _, err := publishNext(t, w); err != nil {
			t.Fatalf("apply %d with one member down: %v", i+2, err)
		}
	}
	if st, err := w.ReadState(); err != nil || st.Serial != 4 {
		t.Fatalf("state: %+v, %v", st, err)
	}
	if data, err := os.ReadFile(filepath.Join(w.CurrentDir(), "c", "a.yaml")); err != nil || string(data) != "r4" {
		t.Errorf("current/c/a.yaml = %q, %v", data, err)
	}
}

// Without a quorum nothing is applied and nothing breaks; when the quorum is
// back, applies resume from the last committed serial.
func TestEtcdQuorumLostAndRegained(t *testing.T) {
	c := etcdtest.Start(t, 3)
	w := etcdWorkdir(t, c, "quorum", 3*time.Second, 3*time.Second)
	if _, err := publishNext(t, w); err != nil {
		t.Fatal(err)
	}
	// A lock taken before the quorum goes: the commit cannot happen either.
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(1)
	c.Stop(2)
	st := state.Empty()
	st.Lineage, st.Serial = "x", 2
	start := time.Now()
	err = w.Publish(l, st, func(put func(string, []byte) error) error { return nil })
	if err == nil {
		t.Fatal("published serial 2 without a quorum")
	}
	t.Logf("publish without quorum failed after %s: %v", time.Since(start).Round(time.Millisecond), err)
	l.Unlock()
	if _, err := publishNext(t, w); err == nil {
		t.Fatal("applied without a quorum")
	} else if !strings.Contains(err.Error(), "quorum") {
		t.Errorf("the error does not mention the quorum: %v", err)
	}
	if n := w.CurrentSerial(); n != 1 {
		t.Errorf("current names set %d without a quorum; want 1", n)
	}
	c.Restart(1)
	c.Restart(2)
	c.WaitHealthy(30 * time.Second)
	var n int64
	for deadline := time.Now().Add(20 * time.Second); ; {
		if n, err = publishNext(t, w); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no apply 20s after the quorum came back: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n != 2 {
		t.Errorf("the first apply after the quorum came back committed serial %d; want 2", n)
	}
	got, err := w.ReadState()
	if err != nil || got.Serial != 2 || got.Revision != "r2" {
		t.Fatalf("state: %+v, %v", got, err)
	}
	if data, err := os.ReadFile(filepath.Join(w.CurrentDir(), "c", "a.yaml")); err != nil || string(data) != "r2" {
		t.Errorf("current/c/a.yaml = %q, %v", data, err)
	}
}
