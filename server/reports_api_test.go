package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
)

var agentSecret = []byte("agent-s3cret-0123456789")

// post sends a report (body) for node of cluster with token ("" for none).
func (a *apiServer) post(t *testing.T, cluster, node, token string, body []byte) apiResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, a.base+"/api/v1/clusters/"+cluster+"/nodes/"+node+"/reports", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return apiResponse{resp.StatusCode, resp.Header, string(b)}
}

// reportBody is a report of graph default with etag and status; failed
// reports fail task keystone.
func reportBody(etag, status string) []byte {
	r := map[string]any{"graph": "default", "etag": etag, "status": status, "started_at": "2026-03-01T10:00:00Z", "message": "run by the test"}
	if status != reports.Running {
		r["finished_at"] = "2026-03-01T10:05:00Z"
		taskStatus := reports.Success
		if status == reports.Failed {
			taskStatus = reports.Failed
		}
		r["tasks"] = []map[string]string{{"id": "netconfig", "status": "success"}, {"id": "keystone", "status": taskStatus, "message": "exit 1"}}
	}
	b, _ := json.Marshal(r)
	return b
}

// syncLog is a log the tests read.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestReportAPI: a node reports on the ETag it was served, with its own token:
// 200 and the report kept; each malformed or unauthorized report is refused
// with its own status and a body that says why, and nothing is kept; an ETag
// served before a new apply is still accepted (a kept set), one never served
// is 409. No token or secret reaches the log.
func TestReportAPI(t *testing.T) {
	var log syncLog
	a := startAPI(t, func(s *Server, _ *Limits) {
		s.AgentSecret = agentSecret
		s.Loop.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	tok := reports.Token(agentSecret, "demo", "node-2")
	if r := a.post(t, "demo", "node-2", tok, reportBody(strings.Repeat("a", 64), reports.Running)); r.code != 503 {
		t.Errorf("before any apply: %d %q, want 503", r.code, r.body)
	}
	a.reconcile(t, operation.Applied)
	g := a.get(t, node2Graph, nil)
	etag := g.h.Get("ETag")
	j := a.get(t, node2Graph, map[string]string{"Accept": "application/json"})

	r := a.post(t, "demo", "node-2", tok, reportBody(etag, reports.Running))
	if r.code != 200 || !strings.Contains(r.body, `"state": "progressing"`) || !strings.Contains(r.body, `"seq": 1`) {
		t.Fatalf("a running report: %d %s", r.code, r.body)
	}
	r = a.post(t, "demo", "node-2", tok, reportBody(etag, reports.Success))
	if r.code != 200 || !strings.Contains(r.body, `"state": "converged"`) || !strings.Contains(r.body, `"seq": 1`) {
		t.Fatalf("its result: %d %s (want seq 1: the run's result replaces its running report)", r.code, r.body)
	}
	// The JSON variant's ETag is one served too.
	if r := a.post(t, "demo", "node-2", tok, reportBody(j.h.Get("ETag"), reports.Success)); r.code != 200 {
		t.Errorf("a report on the JSON graph's ETag: %d %s", r.code, r.body)
	}

	big := append([]byte(`{"graph":"default","message":"`), bytes.Repeat([]byte("x"), reports.MaxBody)...)
	for name, tc := range map[string]struct {
		cluster, node, token string
		body                 []byte
		code                 int
		want                 string
	}{
		"no token":            {"demo", "node-2", "", reportBody(etag, reports.Success), 401, "needs Authorization: Bearer"},
		"another node's":      {"demo", "node-2", reports.Token(agentSecret, "demo", "node-3"), reportBody(etag, reports.Success), 403, "is not the token of node node-2 of cluster demo"},
		"another secret's":    {"demo", "node-2", reports.Token([]byte("other"), "demo", "node-2"), reportBody(etag, reports.Success), 403, "a node reports only for itself"},
		"the API's secret":    {"demo", "node-2", string(agentSecret), reportBody(etag, reports.Success), 403, "not the token"},
		"bad node name":       {"demo", "..%2Fnode-2", tok, reportBody(etag, reports.Success), 400, "is not a valid node name"},
		"not json":            {"demo", "node-2", tok, []byte("status=success"), 400, "refusing the report: the body is not a report"},
		"bad status":          {"demo", "node-2", tok, bytes.Replace(reportBody(etag, reports.Success), []byte(`"status":"success"`), []byte(`"status":"done"`), 1), 400, `status: "done" is not running, success or failed`},
		"too large":           {"demo", "node-2", tok, big, 413, "over 1048576 bytes"},
		"unknown node":        {"demo", "node-9", reports.Token(agentSecret, "demo", "node-9"), reportBody(etag, reports.Success), 404, `has no node "node-9"`},
		"unknown cluster":     {"nosuch", "node-2", reports.Token(agentSecret, "nosuch", "node-2"), reportBody(etag, reports.Success), 404, `no cluster "nosuch"`},
		"never served":        {"demo", "node-2", tok, reportBody(strings.Repeat("b", 64), reports.Success), 409, "is not one this server served for graph default of node node-2"},
		"another node's etag": {"demo", "node-3", reports.Token(agentSecret, "demo", "node-3"), reportBody(`"`+sha(expandedApplied(t, a, "demo", "node-4", "default"))+`"`, reports.Success), 409, "not one this server served"},
	} {
		t.Run(name, func(t *testing.T) {
			r := a.post(t, tc.cluster, tc.node, tc.token, tc.body)
			if r.code != tc.code || !strings.Contains(r.body, tc.want) {
				t.Errorf("%d %q; want %d with %q", r.code, r.body, tc.code, tc.want)
			}
		})
	}
	if h, _ := a.loop.Reports.History(t.Context(), "demo", "node-2"); len(h) != 2 || h[0].Seq != 2 {
		t.Errorf("node-2's history after the refusals: %d reports", len(h))
	}
	if h, _ := a.loop.Reports.History(t.Context(), "demo", "node-3"); len(h) != 0 {
		t.Errorf("node-3's history: %d reports, want none", len(h))
	}

	// A new commit changes node-2's graph: its last report is on an older
	// artifact (progressing); a report on the old ETag is still taken (the
	// set is kept), and one on the new ETag converges it.
	gittest.EditFile(t, filepath.Join(a.dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	gittest.Commit(t, a.repo, "node-2 without rabbitmq")
	a.reconcile(t, operation.Applied)
	st, _ := a.srv.applied()
	if got := a.loop.Reports.NodeState(st, "demo", "node-2", a.loop.Reports.Last("demo", "node-2")); got != reports.Progressing {
		t.Errorf("after a new graph: node-2 %s, want progressing", got)
	}
	if r := a.post(t, "demo", "node-2", tok, reportBody(etag, reports.Failed)); r.code != 200 || !strings.Contains(r.body, `"serial": 1`) || !strings.Contains(r.body, `"state": "progressing"`) {
		t.Errorf("a report on the previous graph: %d %s; want 200, serial 1, progressing", r.code, r.body)
	}
	etag2 := a.get(t, node2Graph, nil).h.Get("ETag")
	if etag2 == etag {
		t.Fatal("the commit did not change node-2's graph")
	}
	if r := a.post(t, "demo", "node-2", tok, reportBody(etag2, reports.Success)); r.code != 200 || !strings.Contains(r.body, `"serial": 2`) || !strings.Contains(r.body, `"state": "converged"`) {
		t.Errorf("a report on the new graph: %d %s", r.code, r.body)
	}

	// No secret, no report.
	a.srv.AgentSecret = nil
	if r := a.post(t, "demo", "node-2", tok, reportBody(etag2, reports.Success)); r.code != 403 || !strings.Contains(r.body, "--agent-secret-file") {
		t.Errorf("without an agent secret: %d %q", r.code, r.body)
	}
	logged := log.String()
	for _, secret := range []string{string(agentSecret), tok, reports.Token(agentSecret, "demo", "node-3")} {
		if strings.Contains(logged, secret) {
			t.Errorf("the log holds a secret or token %q", secret)
		}
	}
	for _, want := range []string{`msg="node report" cluster=demo node=node-2 result=accepted status=200`, `result=forbidden status=403 why="the bearer token is not the token of node node-2`, "result=conflict status=409"} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log lacks %q:\n%s", want, logged)
		}
	}
}

// TestAgentTokenReadsItsGraph: with --api-token-file, a node's token reads
// that node's graphs, and no other's.
func TestAgentTokenReadsItsGraph(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) {
		s.AgentSecret = agentSecret
		s.APIToken = []byte("api-token")
	})
	a.reconcile(t, operation.Applied)
	auth := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	if r := a.get(t, node2Graph, auth(reports.Token(agentSecret, "demo", "node-2"))); r.code != 200 {
		t.Errorf("node-2's token on node-2's graph: %d %q", r.code, r.body)
	}
	if r := a.get(t, node2Graph, auth(reports.Token(agentSecret, "demo", "node-3"))); r.code != 401 {
		t.Errorf("node-3's token on node-2's graph: %d, want 401", r.code)
	}
	if r := a.get(t, "/api/v1/clusters/demo", auth(reports.Token(agentSecret, "demo", "node-2"))); r.code != 401 {
		t.Errorf("a node's token on the cluster: %d, want 401", r.code)
	}
	if r := a.get(t, node2Graph, auth("api-token")); r.code != 200 {
		t.Errorf("the API token: %d", r.code)
	}
}

// reportAll reports status for every node of demo on the graph it is served
// now.
func (a *apiServer) reportAll(t *testing.T, status string, except ...string) {
	t.Helper()
	for _, n := range []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6"} {
		if slices.Contains(except, n) {
			continue
		}
		etag := a.get(t, "/api/v1/clusters/demo/nodes/"+n+"/graphs/default", nil).h.Get("ETag")
		if r := a.post(t, "demo", n, reports.Token(agentSecret, "demo", n), reportBody(etag, status)); r.code != 200 {
			t.Fatalf("%s's report: %d %s", n, r.code, r.body)
		}
	}
}

// clusterInfo is demo's line of GET /api/v1/clusters.
func (a *apiServer) clusterInfo(t *testing.T, name string) operation.ClusterInfo {
	t.Helper()
	var infos []operation.ClusterInfo
	if err := json.Unmarshal([]byte(a.get(t, "/api/v1/clusters", nil).body), &infos); err != nil {
		t.Fatal(err)
	}
	for _, i := range infos {
		if i.Name == name {
			return i
		}
	}
	t.Fatalf("no cluster %s in GET /api/v1/clusters", name)
	return operation.ClusterInfo{}
}

// TestClusterHealthAPI: unknown before any report; healthy once every node
// reported a success on the applied graph; degraded with one failure, the node
// and task named; progressing after a commit that changes a node's graph,
// healthy again once it reports on it. The cluster's API shows each node's
// state and last report, and its reconciles; the node's, its last report with
// tasks and its history.
func TestClusterHealthAPI(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) { s.AgentSecret = agentSecret })
	a.reconcile(t, operation.Applied)
	check := func(what, health string, converged, progressing, failed int, problem string) {
		t.Helper()
		i := a.clusterInfo(t, "demo")
		if i.Health != health || i.NodesConverged != converged || i.NodesProgressing != progressing || i.NodesFailed != failed ||
			(problem == "") != (len(i.HealthProblems) == 0) || problem != "" && !strings.Contains(i.HealthProblems[0], problem) {
			t.Errorf("%s: %s %d/%d/%d %q; want %s %d/%d/%d %q", what, i.Health, i.NodesConverged, i.NodesProgressing, i.NodesFailed, i.HealthProblems,
				health, converged, progressing, failed, problem)
		}
	}
	check("before any report", reports.Unknown, 0, 6, 0, "")
	if i := a.clusterInfo(t, "demo-hcl"); i.Health != reports.Unknown {
		t.Errorf("demo-hcl: %s", i.Health)
	}
	a.reportAll(t, reports.Success, "node-3")
	check("five converged", reports.Progressing, 5, 1, 0, "")
	a.reportAll(t, reports.Failed, "node-1", "node-2", "node-4", "node-5", "node-6")
	check("node-3 failed", reports.Degraded, 5, 0, 1, "node node-3 failed graph default: task keystone failed: run by the test")

	var sum ClusterSummary
	if err := json.Unmarshal([]byte(a.get(t, "/api/v1/clusters/demo", nil).body), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Health != reports.Degraded || sum.NodesFailed != 1 || len(sum.Reconciles) != 1 || sum.Reconciles[0].NodesAdded != 6 {
		t.Errorf("GET /api/v1/clusters/demo: %s, %d failed, reconciles %+v", sum.Health, sum.NodesFailed, sum.Reconciles)
	}
	for _, n := range sum.Nodes {
		want := reports.Converged
		if n.Name == "node-3" {
			want = reports.Failed
		}
		if n.State != want || n.Report == nil || n.Report.Tasks != nil {
			t.Errorf("node %s: %s, report %+v; want %s, its report without tasks", n.Name, n.State, n.Report, want)
		}
	}
	var d NodeDetail
	r := a.get(t, "/api/v1/clusters/demo/nodes/node-3", nil)
	if err := json.Unmarshal([]byte(r.body), &d); err != nil {
		t.Fatalf("%d %s: %v", r.code, r.body, err)
	}
	if d.State != reports.Failed || d.Last == nil || len(d.Last.Tasks) != 2 || d.Last.FailedTasks[0] != "keystone" || len(d.History) != 1 || d.History[0].Tasks != nil {
		t.Errorf("GET node-3: %+v", d)
	}
	if r := a.get(t, "/api/v1/clusters/demo/nodes/node-9", nil); r.code != 404 {
		t.Errorf("an unknown node: %d", r.code)
	}

	gittest.EditFile(t, filepath.Join(a.dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	gittest.Commit(t, a.repo, "node-2 without rabbitmq")
	a.reconcile(t, operation.Applied)
	i := a.clusterInfo(t, "demo")
	if i.Health != reports.Degraded || i.NodesProgressing == 0 || i.NodesConverged == 5 {
		t.Errorf("after a commit changing graphs: %+v", i)
	}
	a.reportAll(t, reports.Success)
	check("every node on the new graphs", reports.Healthy, 6, 0, 0, "")
	if err := json.Unmarshal([]byte(a.get(t, "/api/v1/clusters/demo/nodes/node-3", nil).body), &d); err != nil {
		t.Fatal(err)
	}
	if d.State != reports.Converged || len(d.History) != 2 || d.History[0].Serial != 2 || d.History[1].Serial != 1 {
		t.Errorf("node-3's history: %+v", d.History)
	}
}
