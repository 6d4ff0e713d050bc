package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
)

// TestNodeBuckets: a node's bucket gives its burst at once, then refills at
// its rate, never above the burst; a take it cannot give takes nothing and
// says how long until it could; each node has its own; the nodes
// remembered are bounded (two generations), a node forgotten starting full.
func TestNodeBuckets(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	b := newNodeBuckets(Rate{Burst: 3, PerSecond: 0.5})
	b.now = func() time.Time { return now }
	a, c := nodeKey{"demo", "node-1"}, nodeKey{"demo", "node-2"}
	steps := []struct {
		advance time.Duration
		key     nodeKey
		n       float64
		ok      bool
		wait    time.Duration
	}{
		{0, a, 1, true, 0},
		{0, a, 1, true, 0},
		{0, a, 1, true, 0},
		{0, a, 1, false, 2 * time.Second}, // empty: one more in 2 s
		{0, c, 3, true, 0},                // another node's own bucket
		{time.Second, a, 1, false, time.Second},
		{time.Second, a, 1, true, 0},
		{time.Hour, a, 3, true, 0}, // refilled to the burst, no more
		{0, a, 1, false, 2 * time.Second},
		{0, a, 4, false, 24 * time.Hour}, // over the burst: never
		{4 * time.Second, a, 1.5, true, 0},
	}
	for i, st := range steps {
		now = now.Add(st.advance)
		ok, wait := b.take(st.key, st.n)
		if ok != st.ok || wait != st.wait {
			t.Errorf("step %d (take %g of %v): %t, wait %v; want %t, %v", i, st.n, st.key, ok, wait, st.ok, st.wait)
		}
	}
	// The nodes remembered: at most maxNodeBuckets, a node seen recently
	// kept (its bucket empty), one not seen for a generation forgotten.
	for i := range maxNodeBuckets {
		b.take(nodeKey{"fleet", fmt.Sprint("n-", i)}, 1)
		if i%1000 == 0 {
			b.take(a, 0)
		}
	}
	if n := len(b.cur) + len(b.prev); n > maxNodeBuckets {
		t.Errorf("%d nodes remembered, over %d", n, maxNodeBuckets)
	}
	if ok, _ := b.take(a, 1); ok {
		t.Error("node-1, seen in every generation, was forgotten (its bucket full again)")
	}
	if ok, _ := b.take(c, 3); !ok {
		t.Error("node-2, not seen for a generation, is remembered")
	}
}

// TestReportRateAndBudget: a node's reports within its rate and budget are
// kept whole; beyond its budget of bytes, kept without their tasks (their
// counts and first failed ones, tasks_dropped in the API); beyond both, and
// beyond its rate of requests, 429 with Retry-After and nothing kept. Another
// node is not affected.
func TestReportRateAndBudget(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) {
		s.AgentSecret = agentSecret
		s.ReportRate = Rate{Burst: 6, PerSecond: 1.0 / 3600}
		s.ReportBytes = Rate{Burst: 40_000, PerSecond: 1.0 / 3600}
	})
	a.reconcile(t, operation.Applied)
	etag := a.get(t, node2Graph, nil).h.Get("ETag")
	tok := reports.Token(agentSecret, "demo", "node-2")
	body := func(run, tasks int) []byte {
		var ts []map[string]string
		for i := range tasks {
			ts = append(ts, map[string]string{"id": fmt.Sprintf("t-%d", i), "status": "failed", "message": strings.Repeat("m", 100)})
		}
		start := time.Date(2026, 3, 1, 10, run, 0, 0, time.UTC).Format(time.RFC3339)
		b, _ := json.Marshal(map[string]any{"graph": "default", "etag": etag, "status": "failed", "started_at": start, "finished_at": start, "tasks": ts})
		return b
	}
	for i, st := range []struct {
		tasks    int
		code     int
		dropped  bool
		contains string
	}{
		{100, 200, false, ""}, // about 18 KB with its summaries: kept whole
		{100, 200, false, ""}, // 18 KB more
		{100, 200, true, ""},  // over the 40,000 bytes: kept without its tasks
		{100, 429, false, "wrote over its budget of bytes (39.06 KiB at once, then 1 bytes an hour): not kept"}, // not even its summary
		{1, 429, false, "wrote over its budget of bytes"},
		{1, 429, false, "wrote over its budget of bytes"}, // the 6th request of the burst
		{1, 429, false, "sends too many requests: at most 6 at once, then one every 1h0m0s"},
	} {
		r := a.post(t, "demo", "node-2", tok, body(i, st.tasks))
		if r.code != st.code || !strings.Contains(r.body, st.contains) || r.code == 429 && r.h.Get("Retry-After") == "" {
			t.Fatalf("report %d: %d %s (Retry-After %q); want %d %q", i, r.code, r.body, r.h.Get("Retry-After"), st.code, st.contains)
		}
		if r.code != 200 {
			continue
		}
		w, err := a.loop.Reports.Whole(t.Context(), "demo", "node-2")
		if err != nil {
			t.Fatal(err)
		}
		if w.TasksDropped != st.dropped || st.dropped != (len(w.Tasks) == 0) || w.TaskCounts[reports.Failed] != st.tasks || len(w.FailedTasks) != min(st.tasks, 5) {
			t.Errorf("report %d kept with %d tasks, dropped %t, counts %v, failed %v; want dropped %t", i, len(w.Tasks), w.TasksDropped, w.TaskCounts, w.FailedTasks, st.dropped)
		}
	}
	if d := a.get(t, "/api/v1/clusters/demo/nodes/node-2", nil); !strings.Contains(d.body, `"tasks_dropped": true`) {
		t.Errorf("the API does not say which report's tasks were dropped:\n%s", d.body)
	}
	if p := a.get(t, "/clusters/demo/nodes/node-2", nil); !strings.Contains(p.body, "Its tasks were not kept (the node wrote over its budget); their counts: failed 100; failed: <code>t-0</code>, <code>t-1</code>") {
		t.Errorf("the node page does not say its last report's tasks were not kept:\n%s", p.body)
	}
	// Another node has its own bounds.
	etag3 := a.get(t, "/api/v1/clusters/demo/nodes/node-3/graphs/default", nil).h.Get("ETag")
	if r := a.post(t, "demo", "node-3", reports.Token(agentSecret, "demo", "node-3"), reportBody(etag3, reports.Success)); r.code != 200 {
		t.Errorf("node-3's report: %d %s", r.code, r.body)
	}
	// A request refused for its token takes nothing from the node's rate.
	tok3 := reports.Token(agentSecret, "demo", "node-3")
	for range 10 {
		if r := a.post(t, "demo", "node-3", tok, reportBody(etag3, reports.Success)); r.code != 403 {
			t.Fatalf("node-3's report with node-2's token: %d %s", r.code, r.body)
		}
	}
	for i := range 5 {
		if r := a.post(t, "demo", "node-3", tok3, reportBody(etag3, reports.Success)); r.code != 200 {
			t.Errorf("node-3's report %d after 10 with another node's token: %d %s", i+2, r.code, r.body)
		}
	}
}

// TestRunRate: a node's requests to the runs API (its next task, its task
// reports) come out of a bucket of their own, checked after the node's
// token and before anything else: 429 with Retry-After once it is empty,
// while another node, and the node's graph reports, are not held back.
func TestRunRate(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) {
		s.AgentSecret = agentSecret
		s.RunRate = Rate{Burst: 3, PerSecond: 1.0 / 3600}
	})
	a.reconcile(t, operation.Applied)
	bearer := func(node string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + reports.Token(agentSecret, "demo", node)}
	}
	next := "/api/v1/clusters/demo/nodes/node-2/tasks/next?wait=0s"
	for range 5 { // another node's token takes nothing from node-2's bucket
		if r := a.get(t, next, bearer("node-3")); r.code != 403 {
			t.Fatalf("node-2's next task with node-3's token: %d %s", r.code, r.body)
		}
	}
	for i := range 3 { // this serve runs no deployments: 503, each one counted
		if r := a.get(t, next, bearer("node-2")); r.code != 503 {
			t.Fatalf("request %d of the burst: %d %s", i, r.code, r.body)
		}
	}
	r := a.get(t, next, bearer("node-2"))
	if r.code != 429 || r.h.Get("Retry-After") == "" || !strings.Contains(r.body, "node node-2 of cluster demo sends too many requests: at most 3 at once") {
		t.Fatalf("the 4th request: %d %s (Retry-After %q); want 429", r.code, r.body, r.h.Get("Retry-After"))
	}
	req, _ := http.NewRequest(http.MethodPost, a.base+"/api/v1/clusters/demo/nodes/node-2/runs/0000000000000001/tasks", strings.NewReader(`{}`))
	req.Header.Set("Authorization", bearer("node-2")["Authorization"])
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 429 {
		t.Fatalf("a task report past the burst: %v %v; want 429", resp, err)
	} else {
		resp.Body.Close()
	}
	rep := a.post(t, "demo", "node-2", reports.Token(agentSecret, "demo", "node-2"), []byte("{}"))
	if rep.code == 429 {
		t.Errorf("node-2's graph report was held back by its runs bucket: %s", rep.body)
	}
	if r := a.get(t, "/api/v1/clusters/demo/nodes/node-3/tasks/next?wait=0s", bearer("node-3")); r.code != 503 {
		t.Errorf("node-3 was held back by node-2's bucket: %d %s", r.code, r.body)
	}
}
