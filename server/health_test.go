package server

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
)

// TestHealthFollowsOwnGraph: a commit that gives one node a task no other node
// has changes the cluster's task catalogue, but not the other nodes' graphs:
// they stay converged (their agents rightly do not run again), the changed
// node alone is progressing, and the automatic deployment picks it alone.
// (Health used to compare a digest that covers the whole catalogue, so every
// node stayed progressing for ever.)
func TestHealthFollowsOwnGraph(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) { s.AgentSecret = agentSecret })
	a.reconcile(t, operation.Applied)
	nodes := []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6"}
	etags := map[string]string{}
	for _, n := range nodes {
		etags[n] = a.get(t, "/api/v1/clusters/demo/nodes/"+n+"/graphs/default", nil).h.Get("ETag")
		if r := a.post(t, "demo", n, reports.Token(agentSecret, "demo", n), reportBody(etags[n], reports.Success)); r.code != 200 {
			t.Fatalf("%s's report: %d %s", n, r.code, r.body)
		}
	}
	st, _ := a.srv.applied()
	if h := a.loop.Reports.Health(st, "demo"); h.Health != reports.Healthy {
		t.Fatalf("after every node succeeded: %+v, want healthy", h)
	}

	// A task for monitor nodes only: node-6's graph changes, the others' do not.
	tasks := filepath.Join(a.dir, "plugins", "monitoring", "deployment_tasks.yaml")
	data, err := os.ReadFile(tasks)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, `
- id: monitoring-probe
  type: shell
  version: 2.1.0
  roles: [monitor]
  requires: [monitoring-dashboard]
  required_for: [deploy_end]
  parameters: {cmd: /bin/true, timeout: 60}
`...)
	if err := os.WriteFile(tasks, data, 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Commit(t, a.repo, "a task for monitor nodes")
	a.reconcile(t, operation.Applied)
	for _, n := range nodes {
		got := a.get(t, "/api/v1/clusters/demo/nodes/"+n+"/graphs/default", nil).h.Get("ETag")
		if (got != etags[n]) != (n == "node-6") {
			t.Fatalf("%s's graph: ETag %s before, %s after the commit", n, etags[n], got)
		}
	}
	st, _ = a.srv.applied()
	for _, n := range nodes {
		want := reports.Converged
		if n == "node-6" {
			want = reports.Progressing
		}
		if got := a.loop.Reports.NodeState(st, "demo", n, a.loop.Reports.Last("demo", n)); got != want {
			t.Errorf("after the commit: %s is %s, want %s", n, got, want)
		}
	}
	if h := a.loop.Reports.Health(st, "demo"); h.Health != reports.Progressing || h.Converged != 5 || h.Progressing != 1 {
		t.Errorf("after the commit: %+v, want progressing with 5 nodes converged and 1 progressing", h)
	}
	targets, due := controller.DeployTargets(st, "demo", "default", a.loop.Reports, controller.LastRun{Exists: true, Serial: 1})
	if !due || !slices.Equal(targets, []string{"node-6"}) {
		t.Errorf("the automatic run after the commit: %v (due %v), want node-6 alone", targets, due)
	}

	// node-6 runs its new graph: the cluster is healthy again.
	etag6 := a.get(t, "/api/v1/clusters/demo/nodes/node-6/graphs/default", nil).h.Get("ETag")
	if r := a.post(t, "demo", "node-6", reports.Token(agentSecret, "demo", "node-6"), reportBody(etag6, reports.Success)); r.code != 200 {
		t.Fatalf("node-6's report: %d %s", r.code, r.body)
	}
	if h := a.loop.Reports.Health(st, "demo"); h.Health != reports.Healthy {
		t.Errorf("after node-6 ran its new graph: %+v, want healthy", h)
	}
}
