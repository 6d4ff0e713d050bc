package controller

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestLoopFolderTree: a loop that follows a folder does not reconcile a
// commit whose folder tree is the one reconciled last (a commit outside it,
// an empty commit), and logs why; a commit in the folder is reconciled; a
// loop told to forget what it saw (resetSeen: a replica leading again, a
// shard whose clusters moved) reconciles the same tree again.
func TestLoopFolderTree(t *testing.T) {
	ctx := context.Background()
	top := t.TempDir()
	// The quickstart, moved into a folder of a larger repository.
	qs, _ := gittest.Quickstart(t)
	dir := filepath.Join(top, "config")
	if err := os.Rename(qs, dir); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	r, err := git.PlainInit(top, false)
	if err != nil {
		t.Fatal(err)
	}
	first := gittest.Commit(t, r, "the repository")
	var log bytes.Buffer
	loop := &Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: top, Dir: "config"},
		ToolVersion: "test", Log: slog.New(slog.NewTextHandler(&log, nil))}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	if err := os.WriteFile(filepath.Join(top, "README.md"), []byte("outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	outside := gittest.Commit(t, r, "outside the folder")
	if o := loop.ReconcileOnce(ctx); o != operation.Skipped {
		t.Fatalf("a commit outside the folder: %s, want skipped", o)
	}
	if s := loop.Status(); s.Revision != outside || s.Applied != first || s.Serial != 1 {
		t.Errorf("status after it: revision %.12s, applied %.12s, serial %d; want %.12s, %.12s, 1", s.Revision, s.Applied, s.Serial, outside, first)
	}
	if want := "reason=\"this commit changes nothing in the files read since " + first[:12] + " was reconciled (applied)\""; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say %s:\n%s", want, log.String())
	}
	empty := gittest.Commit(t, r, "an empty commit")
	if o := loop.ReconcileOnce(ctx); o != operation.Skipped || loop.Status().Revision != empty {
		t.Errorf("an empty commit: %s at %.12s, want skipped at %.12s", o, loop.Status().Revision, empty)
	}
	loop.resetSeen()
	if o := loop.ReconcileOnce(ctx); o != operation.NoChange {
		t.Errorf("the same tree after resetSeen: %s, want unchanged (reconciled)", o)
	}
	// Told to forget while a reconcile runs (a shard's members changed
	// under it), the next reconcile of the same commit is not skipped.
	// (Owns is asked in the middle of every reconcile that is not skipped.)
	loop.resetSeen()
	loop.use(resetting{loop})
	if o := loop.ReconcileOnce(ctx); o != operation.NoChange {
		t.Fatalf("reconciled again after resetSeen: %s, want unchanged", o)
	}
	loop.use(nil)
	if o := loop.ReconcileOnce(ctx); o != operation.NoChange {
		t.Errorf("after a resetSeen during the last reconcile: %s, want unchanged (reconciled, not skipped)", o)
	}
	if o := loop.ReconcileOnce(ctx); o != operation.Skipped {
		t.Errorf("the same commit once more: %s, want skipped", o)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}")
	inside := gittest.Commit(t, r, "in the folder")
	if o := loop.ReconcileOnce(ctx); o != operation.Applied || loop.Status().Applied != inside {
		t.Errorf("a commit in the folder: %s at %.12s, want applied at %.12s %q", o, loop.Status().Applied, inside, loop.Status().Errors)
	}
}

// resetting is a strategy that owns every cluster, and asks its loop to
// forget the commit seen each time it is asked (in the middle of the run).
type resetting struct{ loop *Loop }

func (resetting) begin() func()                               { return func() {} }
func (resetting) prepare(context.Context, *state.State) error { return nil }
func (resetting) leading() error                              { return nil }
func (g resetting) owns(cs []string) []string                 { g.loop.resetSeen(); return cs }
func (resetting) clusters(st *state.State, live []*operation.ClusterResult, head string) []operation.ClusterInfo {
	return operation.ClusterInfos(st, live, head)
}
