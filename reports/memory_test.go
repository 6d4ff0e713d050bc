package reports

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// BenchmarkLastReportsMemory measures what a Store holds in memory for
// 10,000 nodes: each node's last report, summarized (without its tasks: their
// counts and the first failed ids), as serve holds it; the history stays in
// the backend. Reported as bytes per node and MiB per 10,000 nodes (heap in
// use after a GC, less before).
func BenchmarkLastReportsMemory(b *testing.B) {
	const nodes = 10000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		s := NewStore(nil)
		end := time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
		for i := range nodes {
			r := &Report{Cluster: fmt.Sprintf("cluster-%d", i/500), Node: fmt.Sprintf("node-%d", i), Graph: "default",
				ETag: strings.Repeat("e", 64), Status: Failed, StartedAt: end.Add(-time.Minute), FinishedAt: &end, ReceivedAt: end,
				Message: "puppet exited 1 (the command exited with status 1)", Serial: 7, Revision: strings.Repeat("a", 40), View: strings.Repeat("v", 64), Seq: 20}
			for j := range 150 {
				st := Success
				if j == 40 {
					st = Failed
				}
				r.Tasks = append(r.Tasks, Task{ID: fmt.Sprintf("task-%d", j), Status: st, StartedAt: &end, FinishedAt: &end})
			}
			s.set(Summarize(r))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := float64(after.HeapAlloc-before.HeapAlloc) / nodes
		b.ReportMetric(per, "B/node")
		b.ReportMetric(per*nodes/(1<<20), "MiB/10k-nodes")
		runtime.KeepAlive(s)
	}
}
