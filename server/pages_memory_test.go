package server

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
)

// bigReport is a report of node-2 of about 1 MiB: 900 tasks with a message
// of 1,000 bytes each.
func bigReport(seq int, etag string) *reports.Report {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(seq) * time.Hour)
	end := start.Add(time.Minute)
	r := &reports.Report{Cluster: "demo", Node: "node-2", Graph: "default", ETag: etag, Status: reports.Failed,
		StartedAt: start, FinishedAt: &end, ReceivedAt: end, Message: "run " + fmt.Sprint(seq), Serial: 1}
	for i := range 900 {
		r.Tasks = append(r.Tasks, reports.Task{ID: fmt.Sprintf("task-%03d", i), Status: reports.Failed, Message: strings.Repeat("m", 1000)})
	}
	return r
}

// TestNodePageMemoryBounded: a node whose history holds 20 reports of 1 MiB
// each: its page (and its API) reads the history's summaries and one
// report's tasks, not 20 reports whole (64 concurrent views of such a node
// took serve to 3.7 GB and 22 s pages). Measured as the bytes the process
// allocates for one view; and the page itself is bounded.
func TestNodePageMemoryBounded(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) { s.AgentSecret = agentSecret })
	a.reconcile(t, operation.Applied)
	etag := strings.Trim(a.get(t, node2Graph, nil).h.Get("ETag"), `"`)
	for i := range reports.DefaultHistoryKeep {
		if err := a.loop.Reports.Put(t.Context(), bigReport(i, etag)); err != nil {
			t.Fatal(err)
		}
	}
	view := func(path string) (int, uint64) {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		resp, err := http.Get(a.base + path)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		runtime.ReadMemStats(&after)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		return int(n), after.TotalAlloc - before.TotalAlloc
	}
	// The first view reads the last report whole; the next ones (while it
	// is the last) find it read.
	for i, path := range []string{"/clusters/demo/nodes/node-2", "/clusters/demo/nodes/node-2", "/api/v1/clusters/demo/nodes/node-2"} {
		size, alloc := view(path)
		t.Logf("%s: %d bytes, %.1f MiB allocated", path, size, float64(alloc)/(1<<20))
		if want := uint64(12 << 20); alloc > want || i > 0 && alloc > want/2 {
			t.Errorf("%s (view %d): one view allocates %.1f MiB; want at most 12 MiB, 6 once read (one report's tasks, the history's summaries)", path, i+1, float64(alloc)/(1<<20))
		}
		// The page shows at most maxPageTasks tasks, their messages cut;
		// the API every task whole.
		if want := 1 << 20; size > 3*want || strings.HasPrefix(path, "/clusters") && size > want/2 {
			t.Errorf("%s: %d bytes", path, size)
		}
	}
}
