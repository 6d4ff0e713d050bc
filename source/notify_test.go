package source_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestWatchWorktree: with --worktree, an edit of a cluster file — written in
// place, or the way editors save (a temporary file renamed over it) — triggers
// exactly one reconcile, which applies it.
func TestWatchWorktree(t *testing.T) {
	dir, _ := gittest.Quickstart(t)
	wd := filepath.Join(t.TempDir(), "wd")
	loop := &controller.Loop{Workdir: state.Open(wd), Source: &source.WorktreeSource{Path: dir}, ToolVersion: "test"}
	var reconciles atomic.Int64
	loop.OnReconcile = func(operation.Outcome, time.Duration) { reconciles.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go loop.Run(ctx)
	skip := func(p string) bool { return filepath.Base(p) == ".git" || strings.HasPrefix(p, wd) }
	// Until the watcher is seen set up, its triggers are the probe's, not the
	// loop's.
	var watched atomic.Bool
	probed := make(chan struct{}, 1)
	trigger := func() {
		if watched.Load() {
			loop.Trigger()
			return
		}
		select {
		case probed <- struct{}{}:
		default:
		}
	}
	go source.WatchTree(ctx, dir, skip, 150*time.Millisecond, trigger)
	gittest.WaitFor(t, "the first reconcile", func() bool { return loop.Status().Ready })
	// The watcher is set up: a file written (again every 5 s) triggers it.
	probe := filepath.Join(dir, ".watch-probe")
	for i := 0; !watched.Load(); i++ {
		if i == 4 {
			t.Fatal("a file written in the tree did not trigger the watcher within 20 s")
		}
		if err := os.WriteFile(probe, []byte{byte(i)}, 0o644); err != nil {
			t.Fatal(err)
		}
		select {
		case <-probed:
			watched.Store(true)
		case <-time.After(5 * time.Second):
		}
	}

	file := filepath.Join(dir, "clusters", "demo.yaml")
	for i, save := range []func(data []byte) error{
		func(data []byte) error { return os.WriteFile(file, data, 0o644) },
		func(data []byte) error { // an editor's atomic save
			tmp := filepath.Join(dir, "clusters", ".demo.yaml.swp")
			if err := os.WriteFile(tmp, data, 0o644); err != nil {
				return err
			}
			return os.Rename(tmp, file)
		},
	} {
		before := reconciles.Load()
		serial := loop.Status().Serial
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		old, new := "node-3: {id: 3, roles: [controller]}", "node-3: {id: 3, roles: [controller], tags: {assign: [backup]}}"
		if i == 1 {
			old, new = new, old
		}
		if err := save([]byte(strings.Replace(string(data), old, new, 1))); err != nil {
			t.Fatal(err)
		}
		gittest.WaitFor(t, "the edit applied", func() bool { return loop.Status().Serial == serial+1 })
		time.Sleep(500 * time.Millisecond) // a second reconcile would come by now
		if n := reconciles.Load() - before; n != 1 {
			t.Errorf("save %d: %d reconciles, want 1", i, n)
		}
	}
}
