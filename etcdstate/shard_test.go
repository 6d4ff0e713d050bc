package etcdstate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

func shardBackend(t *testing.T, c *etcdtest.Cluster, prefix string, ttl time.Duration) *Etcd {
	t.Helper()
	return etcdWorkdir(t, c, prefix, ttl, 5*time.Second).Backend.(*Etcd)
}

// Members join on their leases and are listed; an id in use is refused; a
// member whose process is gone leaves within the lease TTL, and its owner
// keys with it; a cluster is claimed by one member at a time.
func TestEtcdShardMembers(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const ttl = 2 * time.Second
	a, b := shardBackend(t, c, "shards", ttl), shardBackend(t, c, "shards", ttl)
	ctx := context.Background()
	ma, err := a.Join(ctx, "r1", "")
	if err != nil {
		t.Fatal(err)
	}
	watch, stop := context.WithCancel(ctx)
	defer stop()
	seen := b.WatchMembers(watch)
	if got := <-seen; !slices.Equal(got, []string{"r1"}) {
		t.Fatalf("members watched: %q; want [r1]", got)
	}
	if _, err := b.Join(ctx, "r1", ""); err == nil {
		t.Fatal("a second live replica joined with the id r1")
	}
	if _, err := b.Join(ctx, "r/1", ""); err == nil {
		t.Fatal("the id r/1 was accepted as a key segment")
	}
	mb, err := b.Join(ctx, "r2", "http://127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.MemberURLs(ctx); err != nil || !maps.Equal(got, map[string]string{"r2": "http://127.0.0.1:9"}) {
		t.Fatalf("member URLs: %v, %v; want r2's only", got, err)
	}
	if got := <-seen; !slices.Equal(got, []string{"r1", "r2"}) {
		t.Fatalf("members watched: %q; want [r1 r2]", got)
	}
	if got, err := a.Members(ctx); err != nil || !slices.Equal(got, []string{"r1", "r2"}) {
		t.Fatalf("members: %q, %v", got, err)
	}
	for _, tc := range []struct {
		e       *Etcd
		m       state.Membership
		cluster string
		want    string
	}{{a, ma, "env-a", "r1"}, {b, mb, "env-a", "r1"}, {b, mb, "env-b", "r2"}, {a, ma, "env-a", "r1"}} {
		if got, err := tc.e.Claim(ctx, tc.m, tc.cluster); err != nil || got != tc.want {
			t.Fatalf("%s claims %s: holder %q, %v; want %q", tc.m.ID(), tc.cluster, got, err, tc.want)
		}
	}
	if got, _ := b.Owners(ctx); !cmp.Equal(got, map[string]string{"env-a": "r1", "env-b": "r2"}) {
		t.Fatalf("owners: %v", got)
	}
	// r2 releases env-a, which it does not hold: nothing changes; env-b, which it does.
	if err := b.Release(ctx, mb, []string{"env-a", "env-b"}); err != nil {
		t.Fatal(err)
	}
	if got, _ := b.Owners(ctx); !cmp.Equal(got, map[string]string{"env-a": "r1"}) {
		t.Fatalf("owners after r2 released: %v", got)
	}
	a.Close() // r1's process is gone: no keep-alive, no revoke
	gone := time.Now()
	for {
		got := <-seen
		if slices.Equal(got, []string{"r2"}) {
			break
		}
		if time.Since(gone) > ttl+3*time.Second {
			t.Fatalf("members %s after r1 was gone: %q", time.Since(gone), got)
		}
	}
	t.Logf("r1 left the members %s after its process was gone (TTL %s)", time.Since(gone).Round(time.Millisecond), ttl)
	if got, err := b.Claim(ctx, mb, "env-a"); err != nil || got != "r2" {
		t.Fatalf("r2 claims env-a after r1 is gone: %q, %v", got, err)
	}
}

// shardState is a state of clusters, each with one artifact whose digest
// says the cluster's version.
func shardState(serial int64, versions map[string]int) *state.State {
	st := state.Empty()
	st.Lineage, st.Serial, st.Revision = "lineage", serial, fmt.Sprintf("rev%d", serial)
	for c, v := range versions {
		st.Clusters[c] = &state.ClusterState{Serial: serial, Revision: st.Revision}
		st.Artifacts[c+"/cluster.yaml"] = fmt.Sprintf("%064d", v)
	}
	return st
}

func versionsOf(st *state.State) map[string]string {
	out := map[string]string{}
	for name, sum := range st.Artifacts {
		out[name] = sum
	}
	return out
}

// Two owners commit their own clusters at the same moment, 10 times over:
// both commits land every time (one of them merged into the other's), and
// neither overwrites the other's cluster. An owner that lost its cluster
// commits nothing.
func TestEtcdShardCommitsMerge(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a, b := shardBackend(t, c, "merge", 2*time.Second), shardBackend(t, c, "merge", 2*time.Second)
	ctx := context.Background()
	ma, err := a.Join(ctx, "r1", "")
	if err != nil {
		t.Fatal(err)
	}
	mb, err := b.Join(ctx, "r2", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []struct {
		e *Etcd
		m state.Membership
		c string
	}{{a, ma, "env-a"}, {b, mb, "env-b"}} {
		if got, err := x.e.Claim(ctx, x.m, x.c); err != nil || got != x.m.ID() {
			t.Fatalf("claim %s: %q, %v", x.c, got, err)
		}
	}
	merge := func(clusters []string, next *state.State) func(*state.State) (*state.State, error) {
		return func(cur *state.State) (*state.State, error) { return state.MergeShard(cur, next, clusters), nil }
	}
	// The first state: env-a at version 0, by r1.
	if _, merged, err := a.CommitShard(ctx, ma, []string{"env-a"}, 0, shardState(1, map[string]int{"env-a": 0}), nil); err != nil || merged {
		t.Fatalf("first commit: merged %v, %v", merged, err)
	}
	var merges atomic.Int32
	for round := 1; round <= 10; round++ {
		cur, err := a.ReadState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, x := range []struct {
			e *Etcd
			m state.Membership
			c string
		}{{a, ma, "env-a"}, {b, mb, "env-b"}} {
			next := shardState(cur.Serial+1, nil)
			for k, v := range cur.Clusters {
				cp := *v
				next.Clusters[k] = &cp
			}
			for k, v := range cur.Artifacts {
				next.Artifacts[k] = v
			}
			next.Clusters[x.c] = &state.ClusterState{Serial: next.Serial}
			next.Artifacts[x.c+"/cluster.yaml"] = fmt.Sprintf("%064d", round)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				_, merged, err := x.e.CommitShard(ctx, x.m, []string{x.c}, cur.Serial, next, merge([]string{x.c}, next))
				if err != nil {
					t.Errorf("round %d, %s: %v", round, x.c, err)
				}
				if merged {
					merges.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		got, err := b.ReadState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"env-a/cluster.yaml": fmt.Sprintf("%064d", round), "env-b/cluster.yaml": fmt.Sprintf("%064d", round)}
		if d := cmp.Diff(want, versionsOf(got)); d != "" || got.Serial != cur.Serial+2 {
			t.Fatalf("round %d: serial %d (want %d), artifacts (-want +got):\n%s", round, got.Serial, cur.Serial+2, d)
		}
		for _, name := range []string{"env-a", "env-b"} {
			if cs := got.Clusters[name]; cs == nil || cs.Serial <= cur.Serial {
				t.Fatalf("round %d: cluster %s's serial %v is not one of this round's", round, name, cs)
			}
		}
	}
	if merges.Load() != 10 {
		t.Errorf("%d of 10 rounds merged a commit; want every one (the two commits read the same serial)", merges.Load())
	}
	// r2 takes env-a over once r1 has released it; r1's commit of env-a,
	// planned before, is refused and writes nothing.
	before, _ := a.ReadState(ctx)
	if err := a.Release(ctx, ma, []string{"env-a"}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Claim(ctx, mb, "env-a"); err != nil || got != "r2" {
		t.Fatalf("r2 claims env-a: %q, %v", got, err)
	}
	next := shardState(before.Serial+1, map[string]int{"env-a": 99, "env-b": 10})
	_, _, err = a.CommitShard(ctx, ma, []string{"env-a"}, before.Serial, next, merge([]string{"env-a"}, next))
	var lost *state.ShardLostError
	if !errors.As(err, &lost) || lost.Holder != "r2" {
		t.Fatalf("a commit by the owner that lost env-a: %v; want a ShardLostError naming r2", err)
	}
	t.Log(err)
	after, _ := b.ReadState(ctx)
	if after.Serial != before.Serial || !cmp.Equal(versionsOf(after), versionsOf(before)) {
		t.Fatalf("the refused commit changed the state: serial %d → %d", before.Serial, after.Serial)
	}
	// A replica whose lease is gone (expired while it was paused, or
	// revoked) commits nothing either, not even a cluster it had claimed.
	if got, err := a.Claim(ctx, ma, "env-c"); err != nil || got != "r1" {
		t.Fatalf("r1 claims env-c: %q, %v", got, err)
	}
	if err := ma.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	_, _, err = a.CommitShard(ctx, ma, []string{"env-c"}, before.Serial, next, merge([]string{"env-c"}, next))
	if !errors.As(err, &lost) {
		t.Fatalf("a commit after the member's lease is gone: %v; want a ShardLostError", err)
	}
}

// A merge into a state at the last serial (2^53) is refused, and nothing is
// committed: the serial never wraps.
func TestEtcdShardMergeNeverWraps(t *testing.T) {
	c := etcdtest.Start(t, 1)
	a := shardBackend(t, c, "wrap", 2*time.Second)
	ctx := context.Background()
	m, err := a.Join(ctx, "r1", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := a.Claim(ctx, m, "env-a"); err != nil || got != "r1" {
		t.Fatalf("claim env-a: %q, %v", got, err)
	}
	const last = int64(1) << 53
	if _, _, err := a.CommitShard(ctx, m, []string{"env-a"}, 0, shardState(last, map[string]int{"env-a": 0}), nil); err != nil {
		t.Fatalf("a commit at serial 2^53: %v", err)
	}
	next := shardState(2, map[string]int{"env-a": 1})
	merge := func(cur *state.State) (*state.State, error) {
		return state.MergeShard(cur, next, []string{"env-a"}), nil
	}
	if _, _, err := a.CommitShard(ctx, m, []string{"env-a"}, 1, next, merge); err == nil || !strings.Contains(err.Error(), "no apply can follow it") {
		t.Errorf("a merge over serial 2^53: %v", err)
	}
	if got, err := a.ReadState(ctx); err != nil || got.Serial != last {
		t.Errorf("the state after the refused merge: serial %d, %v", got.Serial, err)
	}
}

// A member marked busy is listed until it is marked no longer busy, or its
// lease goes (a killed replica's mark does not hold the others up).
func TestEtcdShardBusy(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const ttl = 2 * time.Second
	a, b := shardBackend(t, c, "busy", ttl), shardBackend(t, c, "busy", ttl)
	ctx := context.Background()
	ma, err := a.Join(ctx, "r1", "")
	if err != nil {
		t.Fatal(err)
	}
	mb, err := b.Join(ctx, "r2", "")
	if err != nil {
		t.Fatal(err)
	}
	busy := func(want ...string) {
		t.Helper()
		got, err := b.Busy(ctx)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("busy: %q, %v; want %q", got, err, want)
		}
	}
	busy()
	for _, m := range []state.Membership{ma, mb} {
		if err := a.SetBusy(ctx, m, true); err != nil {
			t.Fatal(err)
		}
	}
	busy("r1", "r2")
	if err := a.SetBusy(ctx, ma, false); err != nil {
		t.Fatal(err)
	}
	busy("r2")
	if err := mb.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	busy()
}
