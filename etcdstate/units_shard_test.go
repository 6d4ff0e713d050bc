package etcdstate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

// Three shards commit their own clusters at once, round after round, while
// another process reads the state over and over: every commit lands, no
// update is lost, and no read meets a part removed under it (the removal
// rule of units.go).
func TestEtcdUnitsShardsAndReaders(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	const rounds = 8
	names := []string{"cluster-000", "cluster-001", "cluster-002"}
	first := fleetState("lin", 1, 6, 600)
	var shards []*Etcd
	var members []state.Membership
	for i, name := range names {
		e := shardBackend(t, c, "units-shards", 5*time.Second)
		m, err := e.Join(ctx, fmt.Sprintf("r%d", i), "")
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.Claim(ctx, m, name); err != nil || got != m.ID() {
			t.Fatalf("claim %s: %q, %v", name, got, err)
		}
		shards, members = append(shards, e), append(members, m)
	}
	if _, _, err := shards[0].CommitShard(ctx, members[0], names[:1], 0, first, nil); err != nil {
		t.Fatal(err)
	}
	reader := shardBackend(t, c, "units-shards", 5*time.Second)
	stop := make(chan struct{})
	var reads atomic.Int32
	var readErr atomic.Value
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := reader.ReadState(ctx); err != nil {
				readErr.Store(err)
				return
			}
			reads.Add(1)
		}
	}()
	for round := 1; round <= rounds; round++ {
		var wg sync.WaitGroup
		for i, e := range shards {
			cur, err := e.ReadState(ctx)
			if err != nil {
				t.Fatal(err)
			}
			next := cloneState(cur)
			changeOne(next, names[i])
			next.Artifacts[names[i]+"/round"] = fmt.Sprintf("%064d", round)
			wg.Add(1)
			go func() {
				defer wg.Done()
				merge := func(cur *state.State) (*state.State, error) {
					return state.MergeShard(cur, next, names[i:i+1]), nil
				}
				if _, _, err := e.CommitShard(ctx, members[i], names[i:i+1], cur.Serial, next, merge); err != nil {
					t.Errorf("round %d, %s: %v", round, names[i], err)
				}
			}()
		}
		wg.Wait()
		got, err := shards[0].ReadState(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			if v := got.Artifacts[name+"/round"]; v != fmt.Sprintf("%064d", round) {
				t.Fatalf("round %d: %s's update is lost (%q)", round, name, v)
			}
		}
	}
	close(stop)
	if err, _ := readErr.Load().(error); err != nil {
		t.Fatalf("a read while the shards committed: %v", err)
	}
	t.Logf("%d reads while %d commits landed", reads.Load(), 3*rounds)
}

// cloneState copies st deep enough for changeOne.
func cloneState(st *state.State) *state.State {
	out := *st
	out.Clusters = map[string]*state.ClusterState{}
	for k, v := range st.Clusters {
		cp := *v
		out.Clusters[k] = &cp
	}
	out.Artifacts = map[string]string{}
	for k, v := range st.Artifacts {
		out.Artifacts[k] = v
	}
	return &out
}
