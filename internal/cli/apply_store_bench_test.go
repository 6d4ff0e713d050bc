package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/reconcile"
)

// BenchmarkApplyStoreOneNode measures the disk a new applied set adds after a
// one-node change on the heavy repository (repogen.Heavy, FUELSYNC_BENCH_NODES
// nodes, 2,000 by default): A, then B, which assigns the tag cinder to the
// last compute-only node of the first cluster (a change of that node alone),
// each applied by the CLI into one work directory. It reports the disk of a
// full set (the blocks of its inodes, through its node links, as du counts
// them) and what the second set adds: the blocks of its inodes the first set
// does not have.
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
	if err := repogen.WriteDir(repogen.Generate(repogen.Heavy(nodes)), repo); err != nil {
		b.Fatal(err)
	}
	revA, err := gitCommit(repo, "generated")
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(repo, filepath.FromSlash(repogen.ClusterFile(1)))
	src, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^  (node-\d+):\n    id: \d+\n    roles: \[compute\]\n`)
	at, node := -1, ""
	for _, m := range re.FindAllSubmatchIndex(src, -1) {
		if !strings.HasPrefix(string(src[m[1]:]), "    tags:") {
			node, at = string(src[m[2]:m[3]]), m[1]
		}
	}
	if at < 0 {
		b.Fatalf("%s has no compute-only node without tags", file)
	}
	edited := append(append(append([]byte{}, src[:at]...), "    tags: {assign: [cinder]}\n"...), src[at:]...)
	if err := os.WriteFile(file, edited, 0o644); err != nil {
		b.Fatal(err)
	}
	revB, err := gitCommit(repo, node+" cinder")
	if err != nil {
		b.Fatal(err)
	}
	var full, added int64
	var applyTime [2]time.Duration
	for b.Loop() {
		wd := filepath.Join(b.TempDir(), "wd")
		for i, rev := range []string{revA.String(), revB.String()} {
			t0 := time.Now()
			if out, err := fuelsyncCmd("--repo", repo, "--rev", rev, "--workdir", wd, "-q", "apply", "--auto-approve").CombinedOutput(); err != nil {
				b.Fatalf("apply %.12s: %v\n%s", rev, err, out)
			}
			applyTime[i] += time.Since(t0)
		}
		b.StopTimer()
		w := reconcile.Open(wd)
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
	b.Logf("%d nodes; B assigns cinder to %s; apply A (cold) %v, apply B %v", nodes, node, applyTime[0]/time.Duration(b.N), applyTime[1]/time.Duration(b.N))
	b.ReportMetric(float64(full)/float64(b.N), "full-set-disk-B")
	b.ReportMetric(float64(added)/float64(b.N), "new-disk-B/op")
	b.ReportMetric(100*float64(added)/float64(full), "new-disk-%")
}
