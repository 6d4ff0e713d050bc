package source_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestRemoteSource follows a bare repository on disk through file://: the first
// commit, a pushed one, a force-push that rewrites the branch; the remote removed,
// the loop survives (errors, backoff) and catches up once it is back.
func TestRemoteSource(t *testing.T) {
	source.InstallFileTransport()
	dir, work, remote := gittest.QuickstartRemote(t)
	wd := filepath.Join(t.TempDir(), "wd")
	loop := &controller.Loop{Workdir: state.Open(wd), Source: &source.RemoteSource{URL: "file://" + remote, Branch: "main", CacheDir: filepath.Join(wd, "cache")}, ToolVersion: "test"}
	head, _ := work.Head()
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied || loop.Status().Applied != head.Hash().String() {
		t.Fatalf("first reconcile: %s %+v", o, loop.Status())
	}

	// A pushed commit.
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	second := gittest.Commit(t, work, "node-2 without rabbitmq")
	gittest.Push(t, work, false)
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied || loop.Status().Applied != second {
		t.Fatalf("after a push: %s, applied %s", o, loop.Status().Applied)
	}

	// A force-push: the branch rewritten from the first commit.
	wt, _ := work.Worktree()
	if err := wt.Reset(&git.ResetOptions{Commit: head.Hash(), Mode: git.HardReset}); err != nil {
		t.Fatal(err)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}")
	rewritten := gittest.Commit(t, work, "node-4 also storage")
	gittest.Push(t, work, true)
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied || loop.Status().Applied != rewritten {
		t.Fatalf("after a force-push: %s, applied %s", o, loop.Status().Applied)
	}

	// The remote gone: the loop reports errors and keeps running with backoff;
	// back, the next retry catches up without a trigger.
	if err := os.Rename(remote, remote+".away"); err != nil {
		t.Fatal(err)
	}
	if o := loop.ReconcileOnce(context.Background()); o != operation.Failed || len(loop.Status().Errors) == 0 {
		t.Fatalf("the remote gone: %s %q", o, loop.Status().Errors)
	}
	loop.Interval = time.Hour // only the backoff retries
	failed := make(chan struct{}, 1)
	loop.OnReconcile = func(o operation.Outcome, _ time.Duration) {
		if o == operation.Failed {
			select {
			case failed <- struct{}{}:
			default:
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { loop.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	select { // the loop runs, and fails, while the remote is away
	case <-failed:
	case <-time.After(10 * time.Second):
		t.Fatal("the loop did not fail a reconcile within 10 s while the remote was away")
	}
	if err := os.Rename(remote+".away", remote); err != nil {
		t.Fatal(err)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-3: {id: 3, roles: [controller]}", "node-3: {id: 3, roles: [controller], tags: {assign: [backup]}}")
	latest := gittest.Commit(t, work, "back")
	gittest.Push(t, work, false)
	deadline := time.Now().Add(10 * time.Second)
	for loop.Status().Applied != latest {
		if time.Now().After(deadline) {
			t.Fatalf("not caught up 10 s after the remote came back: %+v", loop.Status())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRemoteSourceWorkingTreeRepo: a file:// URL naming a repository with a
// working tree (not bare) is followed, its branch the one HEAD names when none
// is given (go-git's file transport read the working tree's root as the .git
// directory and found no branch, and the branch defaulted to main).
func TestRemoteSourceWorkingTreeRepo(t *testing.T) {
	dir, work := gittest.Quickstart(t) // on master
	wd := filepath.Join(t.TempDir(), "wd")
	src := &source.RemoteSource{URL: "file://" + dir, CacheDir: filepath.Join(wd, "cache")}
	loop := &controller.Loop{Workdir: state.Open(wd), Source: src, ToolVersion: "test"}
	head, _ := work.Head()
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied || loop.Status().Applied != head.Hash().String() {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	if b, err := source.FollowedBranch(context.Background(), src); err != nil || b != "master" {
		t.Errorf("the branch followed: %q %v, want master", b, err)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	second := gittest.Commit(t, work, "node-2 without rabbitmq")
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied || loop.Status().Applied != second {
		t.Fatalf("after a commit: %s, applied %s %q", o, loop.Status().Applied, loop.Status().Errors)
	}
}

// TestRemoteCacheKeptWhenNotMade: a failed clone removes the cache directory
// only when the clone made it (or found it empty): a directory that held
// something already is not the clone's to remove.
func TestRemoteCacheKeptWhenNotMade(t *testing.T) {
	source.InstallFileTransport()
	missing := "file://" + filepath.Join(t.TempDir(), "no-such.git")
	cache := filepath.Join(t.TempDir(), "cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "mine"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := &source.RemoteSource{URL: missing, Branch: "main", CacheDir: cache}
	if _, err := src.Latest(context.Background()); err == nil {
		t.Fatal("cloning a missing repository succeeded")
	}
	if _, err := os.Stat(filepath.Join(cache, "mine")); err != nil {
		t.Errorf("a failed clone removed the directory it found: %v", err)
	}
	made := filepath.Join(t.TempDir(), "cache")
	src = &source.RemoteSource{URL: missing, Branch: "main", CacheDir: made}
	if _, err := src.Latest(context.Background()); err == nil {
		t.Fatal("cloning a missing repository succeeded")
	}
	if _, err := os.Stat(made); err == nil {
		t.Errorf("a failed clone left the directory it made")
	}
}
