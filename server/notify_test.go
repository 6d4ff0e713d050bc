package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/notify"
	"github.com/fuelsync/fuelsync/runs"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestNotifications: serve tells a webhook receiver of each change of a
// cluster's status, once (not at every reconcile), and of the deployment
// runs: started, a node failed, failed, stopped, succeeded. A cluster
// synced at start-up is not told of.
func TestNotifications(t *testing.T) {
	ctx := context.Background()
	got := make(chan notify.Event, 100)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var e notify.Event
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		got <- e
	}))
	defer recv.Close()
	dir, repo := gittest.Quickstart(t)
	demo := filepath.Join(dir, "clusters", "demo.yaml")
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	srv := New(loop, nil)
	cfg := &notify.Config{Queue: 100, Backoff: time.Millisecond, BaseURL: "http://serve.example",
		Providers: []*notify.Provider{{Name: "hook", Type: notify.Webhook, URL: recv.URL, Timeout: 5 * time.Second}}}
	n := notify.New(cfg, nil)
	srv.EnableNotifications(n)
	srv.EnableRuns(&runs.Coordinator{Store: runs.Open(loop.Workdir)})
	nctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { n.Run(nctx); close(done) }()
	defer func() { cancel(); <-done }()

	// expect takes the next events, in order, then checks that no other
	// was sent (a marker sent last comes next).
	expect := func(step string, want ...string) []notify.Event {
		t.Helper()
		n.Notify(notify.Event{Type: notify.RunStarted, Cluster: "marker"})
		var events []notify.Event
		for {
			select {
			case e := <-got:
				if e.Cluster == "marker" {
					if len(events) != len(want) {
						t.Errorf("%s: %d events, want %v", step, len(events), want)
					}
					return events
				}
				if len(events) >= len(want) || e.Type+" "+e.Cluster != want[len(events)] {
					t.Errorf("%s: event %d is %s %s (%s), want %v", step, len(events), e.Type, e.Cluster, e.Message, want)
				}
				events = append(events, e)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: no event", step)
			}
		}
	}

	loop.ReconcileOnce(ctx)
	expect("start-up, every cluster synced")

	gittest.EditFile(t, demo, "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}")
	gittest.Commit(t, repo, "node-4 storage")
	loop.ReconcileOnce(ctx)
	e := expect("a change applied", "cluster.synced demo")
	if len(e) == 1 && (e[0].Severity != notify.Info || e[0].URL != "http://serve.example/clusters/demo" || e[0].Serial == 0 || e[0].Revision == "") {
		t.Errorf("synced: %+v", e[0])
	}

	gittest.EditFile(t, demo, "node-4: {id: 4, roles: [compute, storage]}", "node-4: {id: 4, roles: [compute, nosuchrole]}")
	gittest.Commit(t, repo, "node-4 broken")
	loop.ReconcileOnce(ctx)
	e = expect("held", "cluster.held demo")
	if len(e) == 1 && (e[0].Severity != notify.Error || e[0].Message == "held") {
		t.Errorf("held: %+v", e[0])
	}
	loop.Trigger()
	loop.ReconcileOnce(ctx)
	expect("held still: nothing again")

	gittest.EditFile(t, demo, "node-4: {id: 4, roles: [compute, nosuchrole]}", "node-4: {id: 4, roles: [compute]}")
	gittest.EditFile(t, demo, "mode: ha ", "sync: manual\nmode: ha ")
	gittest.Commit(t, repo, "node-4 fixed, demo manual")
	loop.ReconcileOnce(ctx)
	expect("awaiting approval", "cluster.awaiting_approval demo")

	// The runs' hooks, as the coordinator calls them.
	c := srv.Runs
	h := &runs.Header{ID: "3", Cluster: "demo-hcl", Graph: "default", Serial: 2, Revision: "0123456789abcdef", Trigger: "apply"}
	c.OnStart(h)
	c.OnNodeDone(h, "node-1", true, []api.RunTask{{ID: "netconfig", Status: api.TaskFailed, Message: "exit 1"}})
	c.OnNodeDone(h, "node-2", false, nil)
	c.OnEnd(h, &runs.Summary{Failed: true, FailedNodes: []string{"node-1"}, Counts: map[string]int{"succeeded": 4, "failed": 1}})
	c.OnEnd(h, &runs.Summary{Halted: true, Reason: "stopped by an operator"})
	c.OnEnd(h, &runs.Summary{Reason: "node node-2 failed: 2 nodes of group compute failed, and it tolerates 1", FailedNodes: []string{"node-2", "node-3"}})
	e = expect("runs", "run.started demo-hcl", "node.failed demo-hcl", "run.failed demo-hcl", "run.stopped demo-hcl", "run.succeeded demo-hcl")
	if len(e) == 5 {
		if e[1].Node != "node-1" || e[1].Message != "node node-1 failed in run 3: netconfig: exit 1" || e[1].URL != "http://serve.example/clusters/demo-hcl/runs/3" {
			t.Errorf("node failed: %+v", e[1])
		}
		if e[2].Message != "run 3 failed; failed nodes: node-1; tasks: 1 failed, 4 succeeded" || e[2].Run != "3" || e[2].Serial != 2 {
			t.Errorf("run failed: %+v", e[2])
		}
		if e[3].Message != "run 3 stopped: stopped by an operator" || e[3].Severity != notify.Error {
			t.Errorf("run stopped: %+v", e[3])
		}
	}
}
