package cli

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/benchutil"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// BenchmarkDiffLarge times `fuelsync diff` between two commits of the generated
// large repository (50 plugins, 5,000 tasks, 2,000 nodes, 20 clusters) that differ
// in one node's tags, and one render of the head commit (load from git objects,
// resolve, encode and hash every artifact: the render command without the disk),
// alternately in one run. It reports both medians and the median of the pairwise
// ratio diff / render (the target is ≤ 1.2).
func BenchmarkDiffLarge(b *testing.B) {
	dir := b.TempDir()
	fsys := repogen.Generate(repogen.Spec{Plugins: 50, Tasks: 5000, Nodes: 2000, Clusters: 20, Seed: 1})
	if err := repogen.WriteDir(fsys, dir); err != nil {
		b.Fatal(err)
	}
	if _, err := gitCommit(dir, "generated"); err != nil {
		b.Fatal(err)
	}
	// One node's tags: node-5 of the first YAML cluster gets the tag backup.
	files, _ := filepath.Glob(filepath.Join(dir, "clusters", "*.yaml"))
	if len(files) == 0 {
		b.Fatal("no YAML cluster")
	}
	src, err := os.ReadFile(files[0])
	if err != nil {
		b.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(  node-5:\n    id: 5\n    roles: [^\n]*\n)(    tags: \{assign: \[)?`)
	m := re.FindSubmatchIndex(src)
	if m == nil {
		b.Fatalf("%s has no node-5", files[0])
	}
	var edited []byte
	if m[4] >= 0 { // already assigns tags: add backup first
		edited = append(append(append([]byte{}, src[:m[5]]...), "backup, "...), src[m[5]:]...)
	} else {
		edited = append(append(append([]byte{}, src[:m[3]]...), "    tags: {assign: [backup]}\n"...), src[m[3]:]...)
	}
	if err := os.WriteFile(files[0], edited, 0o644); err != nil {
		b.Fatal(err)
	}
	if _, err := gitCommit(dir, "node-5 backup"); err != nil {
		b.Fatal(err)
	}
	g := &globals{repo: dir, color: "never", stdout: io.Discard, stderr: io.Discard}

	diffOnce := func() {
		res, err := diffRevisions(g, "HEAD~1", "HEAD", 3)
		if err != nil {
			b.Fatal(err)
		}
		if res.changes.Empty() {
			b.Fatal("the diff found no change")
		}
	}
	renderOnce := func() {
		fs, _, err := loader.OpenRevision(dir, "HEAD")
		if err != nil {
			b.Fatal(err)
		}
		repo, diags := loader.Load(fs, loader.Options{})
		if diags.HasErrors() {
			b.Fatal(diags.Errs())
		}
		rs, diags := render.Render(repo, render.Options{})
		if diags.HasErrors() {
			b.Fatal(diags.Errs())
		}
		if err := render.Stream(rs, "bench", "bench", func(string, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	timed := func(f func()) float64 {
		t0 := time.Now()
		f()
		return float64(time.Since(t0))
	}
	var diffT, renderT, ratios []float64
	i := 0
	for b.Loop() {
		var d, r float64
		if i%2 == 0 {
			d, r = timed(diffOnce), timed(renderOnce)
		} else {
			r, d = timed(renderOnce), timed(diffOnce)
		}
		diffT, renderT, ratios = append(diffT, d), append(renderT, r), append(ratios, d/r)
		i++
	}
	b.ReportMetric(benchutil.Median(diffT)/1e6, "diff-ms")
	b.ReportMetric(benchutil.Median(renderT)/1e6, "render-ms")
	b.ReportMetric(benchutil.Median(ratios), "diff/render")
}
