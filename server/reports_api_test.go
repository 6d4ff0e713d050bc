package server

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
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
	if got := reports.NodeState(st, "demo", "node-2", a.loop.Reports.Last("demo", "node-2")); got != reports.Progressing {
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
