package controller_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// runReplicaFor runs a replica of the kind shard on the prefix of c for at
// most d, and returns what Run returned and how many reconciles it ran.
func runReplicaFor(t *testing.T, c *etcdtest.Cluster, prefix, dir, id string, shard bool, d time.Duration) (error, int) {
	t.Helper()
	w := etcdWorkdir(t, c, prefix, 2*time.Second, 5*time.Second)
	loop := &controller.Loop{Workdir: w, Source: &source.LocalSource{Path: dir}, ToolVersion: "test", Interval: time.Hour, Log: (&controller.LogBuffer{}).Logger()}
	reconciles := 0
	loop.OnReconcile = func(operation.Outcome, time.Duration) { reconciles++ }
	rep := &controller.Replica{Loop: loop, Etcd: w.Backend.(state.Coordinator), ID: id}
	if shard {
		rep = controller.NewShard(loop, w.Backend.(state.Sharder), id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	err := rep.Run(ctx)
	return err, reconciles
}

// TestEtcdReplicaKindsRefuseEachOther: a replica without --shard on a prefix
// that shards share refuses to run (it led, and applied a revision the
// shards applied too), and a shard refuses to run while a replica without
// --shard leads; neither reconciles. Each says why.
func TestEtcdReplicaKindsRefuseEachOther(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, _ := gittest.Quickstart(t)

	s1 := startShard(t, c, dir, "s1")
	waitLong(t, 20*time.Second, "s1 applied the clusters", func() bool { return s1.count(operation.Applied) > 0 })
	err, n := runReplicaFor(t, c, "shards", dir, "r1", false, 10*time.Second)
	var conflict *controller.RoleConflictError
	if !errors.As(err, &conflict) || n != 0 {
		t.Errorf("a replica without --shard beside shard s1: Run = %v after %d reconciles; want a RoleConflictError, no reconcile", err, n)
	} else if msg := err.Error(); !containsAll(msg, "without --shard", "s1", "--shard") {
		t.Errorf("the refusal says: %s", msg)
	}

	l1 := startReplicaOn(t, etcdWorkdir(t, c, "replicas", 2*time.Second, 5*time.Second), dir, "l1", nil, "test")
	waitLong(t, 20*time.Second, "l1 leads", func() bool { return l1.rep.Role() == controller.RoleLeader })
	err, n = runReplicaFor(t, c, "replicas", dir, "s2", true, 10*time.Second)
	if !errors.As(err, &conflict) || n != 0 {
		t.Errorf("a shard beside leader l1: Run = %v after %d reconciles; want a RoleConflictError, no reconcile", err, n)
	} else if msg := err.Error(); !containsAll(msg, "--shard", "l1") {
		t.Errorf("the refusal says: %s", msg)
	}
	if l1.rep.Role() != controller.RoleLeader {
		t.Errorf("l1 no longer leads: %s", l1.rep.Role())
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
