//go:build linux

package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/state"
)

// BenchmarkApplyStoreOneNode measures the disk a new applied set adds after a
// one-node change on the heavy repository (repogen.Heavy, FUELSYNC_BENCH_NODES
// nodes, 2,000 by default), in the repository of BenchmarkCommands: B, then C,
// which assigns the tag cinder to the last compute-only node of the first
// cluster as well (a change of that node alone), each applied by the CLI into
// one work directory. It reports the disk of a full set (the blocks of its
// inodes, through its node links, as du counts them) and what the second set
// adds: the blocks of its inodes the first set does not have.
func BenchmarkApplyStoreOneNode(b *testing.B) {
	nodes := 2000
	if s := os.Getenv("FUELSYNC_BENCH_NODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		nodes = n
	}
	repo := b.TempDir()
	_, revB, revC, _, node := commandsRepo(b, repo, repogen.Heavy(nodes))
	var full, added int64
	var applyTime [2]time.Duration
	for b.Loop() {
		wd := filepath.Join(b.TempDir(), "wd")
		for i, rev := range []string{revB, revC} {
			t0 := time.Now()
			if out, err := fuelsyncCmd("--repo", repo, "--rev", rev, "--workdir", wd, "-q", "apply", "--auto-approve").CombinedOutput(); err != nil {
				b.Fatalf("apply %.12s: %v\n%s", rev, err, out)
			}
			applyTime[i] += time.Since(t0)
		}
		b.StopTimer()
		w := state.Open(wd)
		set1 := map[int64]int64{}
		for _, v := range setInodes(b, w.SetDir(1)) {
			set1[v[0]] = v[1]
		}
		for _, bl := range set1 {
			full += bl
		}
		fresh := map[int64]int64{}
		for _, v := range setInodes(b, w.SetDir(2)) {
			if _, ok := set1[v[0]]; !ok {
				fresh[v[0]] = v[1]
			}
		}
		for _, bl := range fresh {
			added += bl
		}
		b.StartTimer()
	}
	b.Logf("%d nodes; C assigns cinder to %s; apply B (cold) %v, apply C %v", nodes, node, applyTime[0]/time.Duration(b.N), applyTime[1]/time.Duration(b.N))
	b.ReportMetric(float64(full)/float64(b.N), "full-set-disk-B")
	b.ReportMetric(float64(added)/float64(b.N), "new-disk-B/op")
	b.ReportMetric(100*float64(added)/float64(full), "new-disk-%")
}
