package controller_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/state"
)

// A leader whose election key is gone while it did not notice — as when its
// lease expired while the process was paused (SIGSTOP past the TTL, then
// SIGCONT: its session has not seen the expiry yet) — writes nothing: the
// reconcile that follows stops before the lock ("this replica no longer
// leads"), the replica goes back to campaigning, and only as leader again does
// it apply. It used to run that reconcile, and apply, as a leader no longer.
func TestEtcdLeaderThatLostItsElectionWritesNothing(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, repo := gittest.Quickstart(t)
	a := startReplica(t, c, dir, "replica-a", nil)
	waitLong(t, 10*time.Second, "serial 1 applied", func() bool { return a.count(operation.Applied) == 1 })

	cfg, err := state.ParseURL(c.URL("replicas"))
	if err != nil {
		t.Fatal(err)
	}
	client, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := context.Background()
	leaderKeys := cfg.Prefix + "/" + state.EtcdNamespace + "/leader/"
	if resp, err := client.Delete(ctx, leaderKeys, clientv3.WithPrefix()); err != nil || resp.Deleted != 1 {
		t.Fatalf("deleting the election key: %v (%+v)", err, resp)
	}
	a.mu.Lock()
	before := len(a.sequence)
	a.mu.Unlock()

	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}")
	head := gittest.Commit(t, repo, "node-4 storage")
	a.loop.Trigger()
	waitLong(t, 20*time.Second, "the commit applied by a leader", func() bool { return a.loop.Status().Applied == head })
	a.mu.Lock()
	after := slices.Clone(a.sequence[before:])
	a.mu.Unlock()
	if len(after) < 2 || after[0] != operation.Failed || !slices.Contains(after, operation.Applied) {
		t.Fatalf("outcomes after the election key was lost: %v; want a failed reconcile first, then applied as leader again", after)
	}
	st, err := a.w.ReadState()
	if err != nil || st.Serial != 2 {
		t.Fatalf("the state: %v %+v", err, st)
	}
}
