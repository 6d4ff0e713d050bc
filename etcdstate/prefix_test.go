package etcdstate

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

// etcdAt opens the state of c under prefix.
func etcdAt(t *testing.T, c *etcdtest.Cluster, prefix string) *Etcd {
	t.Helper()
	cfg, err := state.ParseURL(c.URL(prefix))
	if err != nil {
		t.Fatal(err)
	}
	cfg.LockTTL, cfg.Timeout = 5*time.Second, 5*time.Second
	e, err := Open(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// stateOf is a state with n artifacts, of lineage and serial.
func stateOf(lineage string, serial int64, n int) *state.State {
	st := state.Empty()
	st.Lineage, st.Serial, st.Revision = lineage, serial, "rev-"+strconv.FormatInt(serial, 10)
	for i := 0; i < n; i++ {
		sum := sha256.Sum256([]byte(lineage + strconv.Itoa(i)))
		st.Artifacts["c/f"+strconv.Itoa(i)+".yaml"] = hex.EncodeToString(sum[:])
	}
	return st
}

// commitNext takes e's lock and commits the next serial of lineage.
func commitNext(t *testing.T, e *Etcd, lineage string) *state.State {
	t.Helper()
	unlock, err := e.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatalf("%s: lock: %v", e, err)
	}
	defer unlock()
	cur, err := e.ReadState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	next := stateOf(lineage, cur.Serial+1, 20000) // several parts
	if err := e.Commit(context.Background(), cur.Serial, next); err != nil {
		t.Fatalf("%s: commit: %v", e, err)
	}
	return next
}

// TestEtcdPrefixesIsolated is issue 27's reproducer: etcd://…/fs/n/parts and
// …/fs/n shared keys (applying to the second wiped the first's state); a
// prefix ending in lock locked another prefix forever, one ending in leader
// made its state's keys the other's leader. Each prefix now keeps its keys
// in its own namespace.
func TestEtcdPrefixesIsolated(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	parts, base := etcdAt(t, c, "fs/n/parts"), etcdAt(t, c, "fs/n")
	first := commitNext(t, parts, "parts")
	for i := 0; i < 3; i++ {
		commitNext(t, base, "base")
	}
	if got, err := parts.ReadState(ctx); err != nil {
		t.Errorf("fs/n/parts after three applies to fs/n: %v", err)
	} else if diff := cmp.Diff(first, got); diff != "" {
		t.Errorf("fs/n/parts after three applies to fs/n (-want +got):\n%s", diff)
	}

	// A prefix ending in lock, its lock held: the other prefix's lock is free.
	lock := etcdAt(t, c, "fs/n/lock")
	commitNext(t, lock, "lock")
	unlock, err := lock.Lock(ctx, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	if u, err := base.Lock(ctx, "test", 0); err != nil {
		t.Errorf("fs/n's lock while fs/n/lock holds its own: %v", err)
	} else {
		u()
	}
	unlock()

	// A prefix ending in leader: its keys are no leader of the other.
	leader := etcdAt(t, c, "fs/n/leader")
	commitNext(t, leader, "leader")
	if id, err := base.Leader(ctx); !errors.Is(err, state.ErrNoLeader) {
		t.Errorf("fs/n's leader with no campaign: %q, %v; want no leader", id, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	lead, err := base.Campaign(cctx, "replica-a")
	cancel()
	if err != nil {
		t.Fatalf("fs/n's campaign: %v", err)
	}
	if id, err := base.Leader(ctx); err != nil || id != "replica-a" {
		t.Errorf("fs/n's leader: %q, %v", id, err)
	}
	if _, err := leader.Leader(ctx); !errors.Is(err, state.ErrNoLeader) {
		t.Errorf("fs/n/leader's leader: %v; want none (fs/n's election is not its)", err)
	}
	lead.Resign(ctx)
}

// TestEtcdPrefixesRefused: prefixes that would reach into another's keys, or
// that etcd would take for another prefix than the one they look like.
func TestEtcdPrefixesRefused(t *testing.T) {
	for _, tc := range []struct{ url, want string }{
		{"etcd://h:2379/fs/.fuelsync", "has the segment .fuelsync, which is reserved"},
		{"etcd://h:2379/fs/.fuelsync/state", "has the segment .fuelsync, which is reserved"},
		{"etcd://h:2379/.fuelsync", "has the segment .fuelsync, which is reserved"},
		{"etcd://h:2379/fs//n", "has an empty segment"},
		{"etcd://h:2379/fs/./n", `has a "." segment`},
		{"etcd://h:2379/fs/../n", `has a ".." segment`},
		{"etcd://h:2379/fs n", "has a space"},
		{"etcd://h:2379/fs\x01n", "has a space, a control character"},
		{"etcd://h:2379/" + strings.Repeat("a", state.MaxEtcdPrefix), "is longer than"},
	} {
		if _, err := state.ParseURL(tc.url); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("state.ParseURL(%q) = %v, want %q", tc.url, err, tc.want)
		}
	}
	for _, ok := range []string{"etcd://h:2379/fs/n", "etcd://h:2379/fs/n/lock", "etcd://h:2379/fuelsync", "etcd://h:2379/a.fuelsync/b", "etcd://h:2379/fs/n/"} {
		if _, err := state.ParseURL(ok); err != nil {
			t.Errorf("state.ParseURL(%q): %v", ok, err)
		}
	}
}

// TestEtcdOldLayoutMoved: a state an older fuelsync kept at <prefix>/state is
// read there while the namespace holds none, and the first writer moves it in
// (a tombstone left at the old header stops an older fuelsync); the lineage
// goes on.
func TestEtcdOldLayoutMoved(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	e := etcdAt(t, c, "prod")
	old := stateOf("lin", 7, 20000)
	v1Layout(t, e, old, e.oldKey)
	got, err := e.ReadState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(old, got); diff != "" {
		t.Errorf("the old layout's state read (-want +got):\n%s", diff)
	}
	if n, _ := e.client.Get(ctx, e.key(""), clientv3.WithPrefix(), clientv3.WithCountOnly()); n.Count != 0 {
		t.Errorf("a read wrote %d keys into the namespace", n.Count)
	}
	next := commitNext(t, e, "lin") // Lock moves it, then serial 8 follows 7
	if next.Serial != 8 {
		t.Fatalf("the serial after the move: %d", next.Serial)
	}
	if got, err := e.ReadState(ctx); err != nil || got.Serial != 8 {
		t.Fatalf("after the move: %+v, %v", got, err)
	}
	resp, err := e.client.Get(ctx, e.oldKey("state"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatal(resp, err)
	}
	var tomb etcdHeader
	if err := json.Unmarshal(resp.Kvs[0].Value, &tomb); err != nil || tomb.FormatVersion != "moved" || tomb.MovedTo != "/prod/.fuelsync/" {
		t.Errorf("the old header after the move: %s, %v", resp.Kvs[0].Value, err)
	}
	if sr, _ := e.client.Get(ctx, e.oldKey("serial")); len(sr.Kvs) != 1 || string(sr.Kvs[0].Value) != "moved" {
		t.Errorf("the old serial after the move: %v", sr.Kvs)
	}
	if pr, _ := e.client.Get(ctx, e.oldKey("parts/"), clientv3.WithPrefix(), clientv3.WithCountOnly()); pr.Count != 0 {
		t.Errorf("%d old parts left after the move", pr.Count)
	}
	// What an older fuelsync reads at its header now: a refusal.
	if _, err := e.decodeHeader(resp.Kvs[0].Value, e.oldKey("state"), e.oldKey("parts/")); err == nil || !strings.Contains(err.Error(), `format_version "moved"`) {
		t.Errorf("the tombstone read as a header: %v", err)
	}
}

// TestEtcdGzipBomb is issue 27's reproducer: a part that expands far beyond
// its size was read whole (1.2 MB to 1.2 GB: 2.9 GB RSS in state show, and
// every replica reads the state). Decompression stops at the size the header
// promises, and at state.MaxSize for a header that promises none.
func TestEtcdGzipBomb(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const expanded = 256 << 20
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for i := 0; i < expanded>>20; i++ {
		zw.Write(zero)
	}
	zw.Close()
	packed := buf.Bytes()
	for _, tc := range []struct {
		name   string
		plain  int64
		budget uint64 // bytes the read may allocate
		want   string
	}{
		{"a header that promises 4 KiB", 4096, 16 << 20, "expands beyond 4096 bytes"},
		{"a header that promises nothing", 0, 3 * state.MaxSize, "expands beyond 67108864 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := etcdAt(t, c, "bomb-"+strconv.FormatInt(tc.plain, 10))
			sum := sha256.Sum256(packed)
			h := etcdHeader{FormatVersion: "1", Lineage: "l", Serial: 1, Encoding: "gzip", Size: len(packed), PlainSize: tc.plain, SHA256: hex.EncodeToString(sum[:])}
			for off := 0; off < len(packed); off += EtcdPartSize {
				p := packed[off:min(off+EtcdPartSize, len(packed))]
				ps := sha256.Sum256(p)
				k := e.key("parts/" + hex.EncodeToString(ps[:]))
				h.Parts = append(h.Parts, k)
				if _, err := e.client.Put(ctx, k, string(p)); err != nil {
					t.Fatal(err)
				}
			}
			header, _ := json.Marshal(h)
			if _, err := e.client.Put(ctx, e.key("state"), string(header)); err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := e.ReadState(ctx)
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("reading a %d-byte state that expands to %d: %v, want %q", len(packed), expanded, err, tc.want)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > tc.budget {
				t.Errorf("reading it allocated %d MiB, over %d MiB", alloc>>20, tc.budget>>20)
			}
		})
	}
}

// TestEtcdPushBounded is issue 27's reproducer for state push: serial 2^63-1
// was accepted (no later serial possible), and a state with a 30 MB field
// failed mid-way, its parts left behind. Both are refused before anything is
// written; a commit refused at its transaction removes the parts it wrote.
func TestEtcdPushBounded(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	w := etcdWorkdir(t, c, "push-bounds", 5*time.Second, 10*time.Second)
	e := w.Backend.(*Etcd)
	countParts := func() int64 {
		t.Helper()
		resp, err := e.client.Get(ctx, "/push-bounds/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, kv := range resp.Kvs {
			if strings.Contains(string(kv.Key), "/parts/") {
				n++
			}
		}
		return n
	}
	push := func(st *state.State) error {
		t.Helper()
		l, err := w.Lock(ctx, "state push", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock()
		_, err = state.Push(w, l, st)
		return err
	}
	big := stateOf("lin", 1, 20000)
	big.Revision = strings.Repeat("r", 30<<20)
	if err := push(big); err == nil || !strings.Contains(err.Error(), "its revision is 31457280 bytes long, over 256") {
		t.Errorf("pushing a 30 MB revision: %v", err)
	}
	if n := countParts(); n != 0 {
		t.Errorf("%d parts left behind by a refused push", n)
	}
	last := stateOf("lin", math.MaxInt64, 10)
	if err := push(last); err == nil || !strings.Contains(err.Error(), "leaves no room") {
		t.Errorf("pushing serial 2^63-1: %v", err)
	}
	if got, err := e.ReadState(ctx); err != nil || got.Serial != 0 {
		t.Errorf("the state after the refusals: %+v, %v", got, err)
	}
	if n := countParts(); n != 0 {
		t.Errorf("%d parts left behind by refused pushes", n)
	}
	// A commit whose transaction is refused (another serial) leaves only
	// the parts of the stored state.
	first := stateOf("lin", 1, 20000)
	if err := push(first); err != nil {
		t.Fatal(err)
	}
	stored := countParts()
	if err := e.Commit(ctx, 5, stateOf("lin", 6, 30000)); err == nil {
		t.Fatal("a commit over the wrong serial succeeded")
	}
	if n := countParts(); n != stored {
		t.Errorf("%d parts after a refused commit, want the stored state's %d", n, stored)
	}
}
