package etcdstate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// etcdWorkdir is a new work directory whose state is on the etcd of c, under
// prefix.
func etcdWorkdir(t *testing.T, c *etcdtest.Cluster, prefix string, ttl, timeout time.Duration) *state.Workdir {
	t.Helper()
	cfg, err := state.ParseURL(c.URL(prefix))
	if err != nil {
		t.Fatal(err)
	}
	cfg.LockTTL, cfg.Timeout = ttl, timeout
	e, err := Open(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &state.Workdir{Dir: filepath.Join(t.TempDir(), "wd"), Backend: e}
}

// publishNext publishes the next serial (one file) and returns it.
func publishNext(t *testing.T, w *state.Workdir) (int64, error) {
	t.Helper()
	l, err := w.Lock(context.Background(), "test", 10*time.Second)
	if err != nil {
		return 0, err
	}
	defer l.Unlock()
	cur, err := w.ReadState()
	if err != nil {
		return 0, err
	}
	st := state.Empty()
	st.Lineage, st.Serial, st.Revision = cur.Lineage, cur.Serial+1, "r"+strconv.FormatInt(cur.Serial+1, 10)
	st.Artifacts["c/a.yaml"] = "x"
	return st.Serial, w.Publish(l, st, func(put func(string, []byte) error) error {
		return put("c/a.yaml", []byte(st.Revision))
	})
}

// The state of the 2,000-node generated repository, applied over etcd, stays
// well under etcd's request limit (1.5 MiB, the server's default here) in every
// request, and reads back as it was written.
func TestEtcdLargeState(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 2,000 nodes")
	}
	c := etcdtest.Start(t, 1)
	w := etcdWorkdir(t, c, "large", 5*time.Second, 20*time.Second)
	repo, diags := loader.Load(repogen.Generate(repogen.Spec{Plugins: 4, Tasks: 300, Nodes: 2000, Clusters: 20, Seed: 1}), loader.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	l, err := w.Lock(context.Background(), "apply", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	st, err := w.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	rs, diags := render.Render(repo, render.Options{State: st})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p, err := operation.MakePlan(w, st, rs, nil, "0123456789abcdef0123456789abcdef01234567", "test")
	if err != nil {
		t.Fatal(err)
	}
	next, err := operation.Apply(w, l, st, p, rs)
	if err != nil {
		t.Fatal(err)
	}
	nodes := 0
	for _, cs := range next.Clusters {
		nodes += len(cs.Nodes)
	}
	if nodes != 2000 {
		t.Fatalf("the state records %d nodes; want 2000", nodes)
	}
	h, units, err := packV2(next, noReuse)
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := json.Marshal(next)
	t.Logf("state of %d nodes, %d artifacts: %d bytes of JSON, %d gzipped, in %d unit(s) of parts of at most %d",
		nodes, len(next.Artifacts), len(doc), h.Size, len(units), EtcdPartSize)
	if len(units) != len(next.Clusters)+1 {
		t.Errorf("%d units for %d clusters; want one each and the rest", len(units), len(next.Clusters))
	}
	const limit = 1536 * 1024 // etcd's default --max-request-bytes
	for _, u := range units {
		for i, part := range u.parts {
			if len(part) > limit/4 {
				t.Errorf("part %d is %d bytes: not well under the %d-byte request limit", i, len(part), limit)
			}
		}
		if u.ref.Size > EtcdPartSize && len(u.parts) < 2 {
			t.Errorf("a %d-byte unit was not split", u.ref.Size)
		}
	}
	got, err := w.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(next, got); diff != "" {
		t.Errorf("state read back (-want +got):\n%s", diff)
	}
}

// A state too large for one part is cut in parts and read back whole.
func TestEtcdStateParts(t *testing.T) {
	c := etcdtest.Start(t, 1)
	e := etcdWorkdir(t, c, "parts", 5*time.Second, 20*time.Second).Backend
	st := state.Empty()
	st.Lineage, st.Serial = "l", 1
	for i := 0; i < 40000; i++ { // sha256 digests do not compress: ~2.5 MiB of JSON
		sum := sha256.Sum256([]byte(strconv.Itoa(i)))
		st.Artifacts[fmt.Sprintf("c/node-%05d/deploy.yaml", i)] = hex.EncodeToString(sum[:])
	}
	h, _, _ := packV2(st, noReuse)
	if len(h.Rest.Parts) < 3 {
		t.Fatalf("a %d-byte state in %d parts; want at least 3", h.Size, len(h.Rest.Parts))
	}
	if err := e.Commit(context.Background(), 0, st); err != nil {
		t.Fatal(err)
	}
	got, err := e.ReadState(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(st, got); diff != "" {
		t.Errorf("state read back (-want +got):\n%s", diff)
	}
	// A new state replaces the parts; the old ones are removed.
	st.Serial = 2
	st.Artifacts = map[string]string{"a": "b"}
	if err := e.Commit(context.Background(), 1, st); err != nil {
		t.Fatal(err)
	}
	resp, err := e.(*Etcd).client.Get(context.Background(), "/parts/.fuelsync/parts/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 1 {
		t.Errorf("parts left after the second commit: %v, %v; want 1", resp.Count, err)
	}
}

// A writer whose lock was lost (its lease expired while etcd was out of its
// reach) cannot commit, even at the right serial.
func TestEtcdCommitNeedsTheLock(t *testing.T) {
	c := etcdtest.Start(t, 1)
	w := etcdWorkdir(t, c, "lost", 5*time.Second, 5*time.Second)
	if _, err := publishNext(t, w); err != nil {
		t.Fatal(err)
	}
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	e := w.Backend.(*Etcd)
	// What the lease's expiry does: the lock's key goes.
	if _, err := e.client.Delete(context.Background(), e.held.Key()); err != nil {
		t.Fatal(err)
	}
	st := state.Empty()
	st.Serial = 2
	err = w.Publish(l, st, func(put func(string, []byte) error) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "lock on "+e.String()+" was lost") {
		t.Fatalf("commit without the lock: %v", err)
	}
	if got, err := w.ReadState(); err != nil || got.Serial != 1 {
		t.Fatalf("state after the refused commit: %+v, %v", got, err)
	}
}
