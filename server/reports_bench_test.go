package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
)

// BenchmarkReportAPI: reports per second one serve accepts over loopback,
// with the state (and so the reports) in a work directory: each report is a
// POST with its node's token, checked, written whole through a synced file,
// and answered 200. 8 clients post for the 6 nodes of demo, each report a new
// run (its own started_at), so that the history is trimmed as it goes.
func BenchmarkReportAPI(b *testing.B) {
	a := startAPI(b, func(s *Server, _ *Limits) { s.AgentSecret = agentSecret })
	if o := a.loop.ReconcileOnce(b.Context()); o != operation.Applied {
		b.Fatalf("reconcile: %s", o)
	}
	nodes := []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6"}
	etags := map[string]string{}
	for _, n := range nodes {
		resp, err := http.Get(a.base + "/api/v1/clusters/demo/nodes/" + n + "/graphs/default")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		etags[n] = resp.Header.Get("ETag")
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	var seq atomic.Int64
	start := time.Now()
	b.SetParallelism(4) // 8 clients on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := seq.Add(1)
			n := nodes[i%int64(len(nodes))]
			began := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
			end := began.Add(time.Second)
			body, _ := json.Marshal(map[string]any{"graph": "default", "etag": etags[n], "status": reports.Success,
				"started_at": began, "finished_at": end, "tasks": []map[string]string{{"id": "hiera", "status": "success"}}})
			req, _ := http.NewRequest(http.MethodPost, a.base+"/api/v1/clusters/demo/nodes/"+n+"/reports", bytes.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+reports.Token(agentSecret, "demo", n))
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Error(fmt.Sprintf("%s: %s", n, resp.Status))
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "reports/s")
}
