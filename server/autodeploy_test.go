package server

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/runs"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestAutoDeployAfterStateSeenEarly: a request (an agent's poll) that reads
// the applied state before the loop has recorded the model of its commit
// kicks the automatic runs too early (no model yet: nothing starts); the end
// of the loop's reconcile kicks them again, and the run starts. (serve once
// started no run at all when an agent's poll came between the commit and the
// end of the reconcile.)
func TestAutoDeployAfterStateSeenEarly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir, _ := gittest.Quickstart(t)
	wd := state.Open(filepath.Join(t.TempDir(), "wd"))
	loop := &controller.Loop{Workdir: wd, Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	srv := New(loop, nil)
	srv.EnableRuns(&runs.Coordinator{Store: runs.Open(wd)})
	// Before the work directory is removed, the runs started stop writing
	// to it: no auto-deploy pass starts another, and the committers end.
	t.Cleanup(func() {
		cancel()
		srv.autoMu.Lock() // held: the auto-deploy loop's next pass waits for good
		srv.Runs.Shutdown()
	})
	started := make(chan string, 10)
	onStart := srv.Runs.OnStart
	srv.Runs.OnStart = func(h *runs.Header) { onStart(h); started <- h.Cluster }
	if err := srv.ResumeRuns(ctx); err != nil {
		t.Fatal(err)
	}
	// Another writer (here a loop of its own) commits the state; a request
	// reads it before srv's loop has reconciled.
	other := &controller.Loop{Workdir: wd, Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	if o := other.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("the other writer's reconcile: %s %q", o, other.Status().Errors)
	}
	if st, err := srv.applied(); err != nil || st.Serial != 1 {
		t.Fatalf("the applied state: %+v, %v", st, err)
	}
	if m, _ := loop.Model(); m != nil {
		t.Fatal("the loop holds a model before its first reconcile")
	}
	// srv's loop reconciles the same commit: its model is recorded, and the
	// runs due start.
	loop.ReconcileOnce(ctx)
	select {
	case c := <-started:
		if c != "demo" && c != "demo-hcl" {
			t.Errorf("a run of %s started", c)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no run started after the loop's reconcile")
	}
}
