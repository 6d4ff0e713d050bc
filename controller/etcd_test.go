package controller_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
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
	e, err := state.OpenEtcd(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &state.Workdir{Dir: filepath.Join(t.TempDir(), "wd"), Backend: e}
}

// The reconcile loop of watch and serve runs unchanged with the state on
// etcd: it applies a new commit, records it there, and finds nothing to do
// after.
func TestEtcdLoopReconciles(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, r := gittest.Quickstart(t)
	w := etcdWorkdir(t, c, "loop", 5*time.Second, 5*time.Second)
	loop := &controller.Loop{Workdir: w, Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	if got := loop.ReconcileOnce(context.Background()); got != operation.Applied {
		t.Fatalf("first reconcile: %s %v", got, loop.Status().Errors)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	sha := gittest.Commit(t, r, "unassign rabbitmq")
	if got := loop.ReconcileOnce(context.Background()); got != operation.Applied {
		t.Fatalf("reconcile of the new commit: %s %v", got, loop.Status().Errors)
	}
	st, err := w.Backend.ReadState(context.Background())
	if err != nil || st.Serial != 2 || st.Revision != sha {
		t.Fatalf("the state on etcd: %+v, %v; want serial 2 at %s", st, err, sha)
	}
	if n := w.CurrentSerial(); n != 2 {
		t.Errorf("artifacts/current names set %d; want 2", n)
	}
	// A new loop (a restart) over the same etcd state and work directory.
	again := &controller.Loop{Workdir: w, Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	if got := again.ReconcileOnce(context.Background()); got != operation.NoChange {
		t.Fatalf("reconcile after a restart: %s %v", got, again.Status().Errors)
	}
}
