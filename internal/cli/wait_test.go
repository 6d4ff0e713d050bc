package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/server"
)

// TestJudgeWait: every rule of fuelsync wait, for each of synced, healthy
// and deployed: what is reached, what fails at once (and says why), what is
// waited for.
func TestJudgeWait(t *testing.T) {
	const head, old = "aaaa1111bbbb2222", "cccc3333dddd4444"
	line := func(status, health string, run *api.Run) *server.ClusterLine {
		return &server.ClusterLine{ClusterInfo: operation.ClusterInfo{Name: "demo", Status: status, AppliedRevision: head, HeadRevision: head,
			Serial: 4, Nodes: 6, NodesConverged: 4, Health: health, Problems: []string{"clusters/demo.yaml:3:1: error: bad", "another"},
			HealthProblems: []string{"node node-3 failed graph default: task keystone failed"}}, LastRun: run}
	}
	run := func(status string, serial int64) *api.Run {
		return &api.Run{ID: "7", Status: status, Serial: serial, Reason: "group primary-controller: 1 failed node, tolerates 0", FailedNodes: []string{"node-1"}}
	}
	for name, tc := range map[string]struct {
		line           *server.ClusterLine
		cond, revision string
		want           string // done, or "fail: …" / "wait: …" (a part of the reason)
	}{
		"unknown cluster":                 {nil, waitSynced, "", "wait: serve has no cluster demo"},
		"synced":                          {line("synced", "unknown", nil), waitSynced, "", "done"},
		"synced at the revision":          {line("synced", "unknown", nil), waitSynced, "aaaa111", "done"},
		"synced, revision not reconciled": {line("synced", "unknown", nil), waitSynced, "eeee", "wait: serve has not reconciled revision eeee yet (its head is aaaa1111bbbb)"},
		"out of sync":                     {line("out_of_sync", "unknown", nil), waitSynced, "", "wait: out_of_sync"},
		"awaiting approval":               {line("awaiting_approval", "unknown", nil), waitSynced, "", "wait: awaiting approval (sync: manual): fuelsync approve --cluster demo"},
		"held":                            {line("held", "unknown", nil), waitSynced, "", "fail: it is held: clusters/demo.yaml:3:1: error: bad (and 1 more)"},
		"held at the revision":            {line("held", "unknown", nil), waitHealthy, "aaaa", "fail: it is held"},
		"held, revision not reconciled":   {line("held", "unknown", nil), waitSynced, "eeee", "wait: it is held"},
		"suspended":                       {line("suspended", "unknown", nil), waitDeployed, "", "fail: it is suspended"},
		"healthy":                         {line("synced", "healthy", nil), waitHealthy, "", "done"},
		"progressing":                     {line("synced", "progressing", nil), waitHealthy, "", "wait: progressing, 4 of 6 nodes converged"},
		"health unknown":                  {line("synced", "unknown", nil), waitHealthy, "", "wait: unknown"},
		"degraded":                        {line("synced", "degraded", nil), waitHealthy, "", "fail: it is degraded: node node-3 failed graph default: task keystone failed"},
		"healthy but out of sync":         {line("out_of_sync", "healthy", nil), waitHealthy, "", "wait: out_of_sync"},
		"no run":                          {line("synced", "healthy", nil), waitDeployed, "", "wait: no deployment run of serial 4 yet"},
		"a run of an older serial":        {line("synced", "healthy", run("succeeded", 3)), waitDeployed, "", "wait: no deployment run of serial 4 yet"},
		"a run running":                   {line("synced", "progressing", run("running", 4)), waitDeployed, "", "wait: run 7 is running"},
		"a run stopping":                  {line("synced", "degraded", run("stopping", 4)), waitDeployed, "", "wait: run 7 is stopping"},
		"the run failed":                  {line("synced", "degraded", run("failed", 4)), waitDeployed, "", "fail: run 7 failed: group primary-controller: 1 failed node, tolerates 0 (failed nodes: node-1)"},
		"the run succeeded":               {line("synced", "degraded", run("succeeded", 4)), waitDeployed, "", "done"},
		"the run succeeded, out of sync":  {line("out_of_sync", "healthy", run("succeeded", 4)), waitDeployed, "", "wait: out_of_sync"},
	} {
		t.Run(name, func(t *testing.T) {
			v := judgeWait("demo", tc.line, tc.cond, tc.revision)
			got := "done"
			switch {
			case v.failure != "":
				got = "fail: " + v.failure
			case !v.done:
				got = "wait: " + v.waiting
			}
			if got != tc.want && !(tc.want != "done" && strings.HasPrefix(got, tc.want)) {
				t.Errorf("%q, want %q", got, tc.want)
			}
			if v.done && (v.failure != "" || v.waiting != "") {
				t.Errorf("done with %+v", v)
			}
		})
	}
}

// TestClusterProblem: status --exit-code fails for a cluster held, degraded
// or whose last run failed, and for nothing else.
func TestClusterProblem(t *testing.T) {
	for name, tc := range map[string]struct {
		info operation.ClusterInfo
		run  *api.Run
		want string
	}{
		"synced, healthy":              {operation.ClusterInfo{Status: "synced", Health: "healthy"}, &api.Run{ID: "2", Status: "succeeded"}, ""},
		"out of sync, progressing":     {operation.ClusterInfo{Status: "out_of_sync", Health: "progressing"}, nil, ""},
		"suspended":                    {operation.ClusterInfo{Status: "suspended", Health: "unknown"}, nil, ""},
		"awaiting approval":            {operation.ClusterInfo{Status: "awaiting_approval", Health: "healthy"}, nil, ""},
		"a run running":                {operation.ClusterInfo{Status: "synced", Health: "progressing"}, &api.Run{ID: "2", Status: "running"}, ""},
		"held":                         {operation.ClusterInfo{Status: "held", Health: "healthy", Problems: []string{"x.yaml:1:1: error: e"}}, nil, "cluster demo is held: x.yaml:1:1: error: e"},
		"degraded":                     {operation.ClusterInfo{Status: "synced", Health: "degraded", HealthProblems: []string{"node n failed"}}, nil, "cluster demo is degraded: node n failed"},
		"last run failed":              {operation.ClusterInfo{Status: "synced", Health: "healthy"}, &api.Run{ID: "3", Status: "failed", Reason: "stopped"}, "cluster demo: its last run 3 failed: stopped"},
		"held, with an escape in name": {operation.ClusterInfo{Status: "held", Problems: []string{"a\x1b[31mb"}}, nil, `cluster demo is held: a\x1b[31mb`},
	} {
		t.Run(name, func(t *testing.T) {
			tc.info.Name = "demo"
			if got := clusterProblem(&server.ClusterLine{ClusterInfo: tc.info, LastRun: tc.run}); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

// TestWaitTimeoutDuringPoll: when the wait's time runs out while serve is
// answering a poll, the wait says what serve's last answer said (the run is
// running), not that the cut request got no answer.
func TestWaitTimeoutDuringPoll(t *testing.T) {
	line := server.ClusterLine{ClusterInfo: operation.ClusterInfo{Name: "demo", Status: "synced", AppliedRevision: "aaaa1111", HeadRevision: "aaaa1111",
		Serial: 4, Nodes: 6, Health: "progressing"}, LastRun: &api.Run{ID: "7", Status: api.RunRunning, Serial: 4}}
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/clusters" {
			http.NotFound(w, r)
			return
		}
		if polls.Add(1) > 1 { // the second poll: no answer before the wait's time is up
			<-r.Context().Done()
			return
		}
		json.NewEncoder(w).Encode([]server.ClusterLine{line})
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := Main([]string{"fuelsync", "wait", "--cluster", "demo", "--for", "deployed", "--timeout", "500ms", "--interval", "10ms", "--server", srv.URL},
		&stdout, &stderr, "test", "")
	if want := "fuelsync: timed out after 500ms waiting for cluster demo to be deployed: run 7 is running\n"; code != 1 || stderr.String() != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr.String(), want)
	}
	if polls.Load() < 2 {
		t.Errorf("%d polls: the test wants the wait's time to end during the second", polls.Load())
	}
}
