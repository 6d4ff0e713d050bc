package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/fuelsync/fuelsync/internal/benchutil"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// BenchmarkLoopCommit measures a serve/watch reconcile of one commit on the
// heavy generated repository (repogen.Heavy; FUELSYNC_BENCH_NODES nodes, 200
// by default), after a first apply:
//
//	readme         the commit edits README.md only: no input changed
//	input-comment  the commit adds a comment to a cluster file: an input
//	               changed, so it is loaded, rendered and planned (nothing to
//	               apply) — what every commit cost before input fingerprints;
//	               the other clusters are not rendered (their inputs are the
//	               applied ones)
//	one-node       the commits assign a tag to one node of that cluster and
//	               take it away, in turn: each is rendered (that cluster only),
//	               planned and applied
//
// Making the commit is not timed. Each reports, besides the time per reconcile:
//
//	median-ms     the median wall time of a reconcile
//	cpu-ms        the median CPU time of the process (user + system, every
//	              thread) during a reconcile: steadier than wall time on a
//	              shared machine
//	live-MB       the heap in use after the last reconcile and a collection:
//	              what the loop holds between reconciles (its model, caches)
//	peak-rss-MB   the process's peak RSS during the reconciles (VmHWM, reset
//	              before them; Linux)
//	decodes       the median number of files a reconcile decoded (the
//	              misses of the loop's loader cache)
func BenchmarkLoopCommit(b *testing.B) {
	nodes := 200
	if s := os.Getenv("FUELSYNC_BENCH_NODES"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			b.Fatal(err)
		}
		nodes = n
	}
	dir := b.TempDir()
	if err := repogen.WriteDir(repogen.Generate(repogen.Heavy(nodes)), dir); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# generated\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		b.Fatal(err)
	}
	benchCommit(b, repo)
	ctx := context.Background()
	loop := &Loop{Workdir: state.Open(filepath.Join(b.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "bench"}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		b.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	for _, c := range []struct{ name, file string }{
		{"readme", "README.md"},
		{"input-comment", repogen.ClusterFile(1)},
		{"one-node", repogen.ClusterFile(1)},
	} {
		b.Run(fmt.Sprintf("nodes=%d/%s", nodes, c.name), func(b *testing.B) {
			name := filepath.Join(dir, filepath.FromSlash(c.file))
			m := startReconcileMetrics()
			defer m.report(b)
			if c.name == "one-node" {
				benchOneNode(b, loop, repo, name, m)
				return
			}
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				f, err := os.OpenFile(name, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				fmt.Fprintf(f, "# edit %d\n", i)
				f.Close()
				benchCommit(b, repo)
				b.StartTimer()
				if o := m.reconcile(ctx, loop); o != operation.NoChange {
					b.Fatalf("reconcile: %s %q", o, loop.Status().Errors)
				}
			}
		})
	}
}

// benchOneNode reconciles commits that assign the tag cinder to one compute
// node of the cluster file name, and take it away again, in turn: each is
// applied.
func benchOneNode(b *testing.B, loop *Loop, repo *git.Repository, name string, m *reconcileMetrics) {
	src, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^  node-\d+:\n    id: \d+\n    roles: \[compute\]\n`)
	at := -1
	for _, m := range re.FindAllIndex(src, -1) {
		if !strings.HasPrefix(string(src[m[1]:]), "    tags:") {
			at = m[1]
			break
		}
	}
	if at < 0 {
		b.Fatalf("%s has no compute-only node without tags", name)
	}
	edited := append(append(append([]byte{}, src[:at]...), "    tags: {assign: [cinder]}\n"...), src[at:]...)
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		data := edited
		if i%2 == 1 {
			data = src
		}
		if err := os.WriteFile(name, data, 0o644); err != nil {
			b.Fatal(err)
		}
		benchCommit(b, repo)
		b.StartTimer()
		if o := m.reconcile(ctx, loop); o != operation.Applied {
			b.Fatalf("reconcile: %s %q", o, loop.Status().Errors)
		}
	}
}

func benchCommit(b *testing.B, repo *git.Repository) {
	b.Helper()
	wt, err := repo.Worktree()
	if err != nil {
		b.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		b.Fatal(err)
	}
	s := gittest.Sig
	if _, err := wt.Commit("bench", &git.CommitOptions{Author: &s, Committer: &s}); err != nil {
		b.Fatal(err)
	}
}

// reconcileMetrics are the wall and CPU times of the reconciles of a
// benchmark (BenchmarkLoopCommit's metrics).
type reconcileMetrics struct {
	wall, cpu, decodes []float64
}

// startReconcileMetrics resets the process's peak RSS (Linux: VmHWM := VmRSS).
func startReconcileMetrics() *reconcileMetrics {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	return &reconcileMetrics{}
}

// reconcile runs one reconcile of loop, timed.
func (m *reconcileMetrics) reconcile(ctx context.Context, loop *Loop) operation.Outcome {
	_, d0 := loop.cache.Stats()
	c0, _ := benchutil.ProcessCPU()
	t0 := time.Now()
	o := loop.ReconcileOnce(ctx)
	m.wall = append(m.wall, float64(time.Since(t0)))
	c1, _ := benchutil.ProcessCPU()
	m.cpu = append(m.cpu, float64(c1-c0))
	_, d1 := loop.cache.Stats()
	m.decodes = append(m.decodes, float64(d1-d0))
	return o
}

// report reports the medians, the live heap and the peak RSS.
func (m *reconcileMetrics) report(b *testing.B) {
	const mb = 1 << 20
	b.StopTimer()
	b.ReportMetric(benchutil.Median(m.wall)/1e6, "median-ms")
	b.ReportMetric(benchutil.Median(m.cpu)/1e6, "cpu-ms")
	b.ReportMetric(benchutil.Median(m.decodes), "decodes")
	if rss := vmHWM(); rss > 0 {
		b.ReportMetric(float64(rss)/mb, "peak-rss-MB")
	}
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	b.ReportMetric(float64(s[0].Value.Uint64())/mb, "live-MB")
}

// vmHWM is the peak resident set size of the process (Linux), in bytes; 0
// where it cannot be read.
func vmHWM() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			if f := strings.Fields(rest); len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
