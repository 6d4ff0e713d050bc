package operation

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"

	"github.com/fuelsync/fuelsync/internal/benchutil"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// BenchmarkReleaseChange runs, in this process, the cold apply of
// repogen.Heavy(FUELSYNC_BENCH_NODES) (default 2,000) from git, then the plan
// and the apply of a release change (hiera's timeout: every node changes),
// and reports each one's wall and CPU time (the process's, user and system).
// FUELSYNC_BENCH_PROFILE=DIR writes a CPU profile of each step there.
func BenchmarkReleaseChange(b *testing.B) {
	nodes := 2000
	if v := os.Getenv("FUELSYNC_BENCH_NODES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		nodes = n
	}
	dir := b.TempDir()
	if err := repogen.WriteDir(repogen.Generate(repogen.Heavy(nodes)), dir); err != nil {
		b.Fatal(err)
	}
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		b.Fatal(err)
	}
	revA := gittest.Commit(b, repo, "generated")
	gittest.EditFile(b, filepath.Join(dir, "plugins", repogen.ReleasePlugin, "graphs", "00-stages.yaml"), "timeout: 120\n", "timeout: 121\n")
	revD := gittest.Commit(b, repo, "release: hiera's timeout")
	open := func(rev string) (fs.FS, error) {
		fsys, _, err := loader.OpenRevision(dir, rev)
		return fsys, err
	}
	profile := os.Getenv("FUELSYNC_BENCH_PROFILE")
	steps := []struct {
		name  string
		rev   string
		apply bool
	}{{"apply-cold", revA, true}, {"plan-release", revD, false}, {"apply-release", revD, true}}
	wall, cpu := make([][]float64, len(steps)), make([][]float64, len(steps))
	for b.Loop() {
		op := &Operation{Workdir: state.Open(filepath.Join(b.TempDir(), "wd")), ToolVersion: "test", OpenRevision: open}
		for i, st := range steps {
			fsys, err := open(st.rev)
			if err != nil {
				b.Fatal(err)
			}
			if profile != "" {
				f, err := os.Create(filepath.Join(profile, st.name+".prof"))
				if err != nil {
					b.Fatal(err)
				}
				if err := pprof.StartCPUProfile(f); err != nil {
					b.Fatal(err)
				}
				defer f.Close()
			}
			c0, _ := benchutil.ProcessCPU()
			t0 := time.Now()
			res, err := op.Run(context.Background(), Request{Revision: source.Revision{SHA: st.rev, FS: fsys}, Apply: st.apply})
			wall[i] = append(wall[i], float64(time.Since(t0)))
			c1, _ := benchutil.ProcessCPU()
			cpu[i] = append(cpu[i], float64(c1-c0))
			if profile != "" {
				pprof.StopCPUProfile()
			}
			if err != nil {
				b.Fatalf("%s: %v", st.name, err)
			}
			if want := map[bool]Outcome{true: Applied, false: Planned}[st.apply]; res.Outcome != want {
				b.Fatalf("%s: outcome %s, want %s", st.name, res.Outcome, want)
			}
		}
	}
	for i, st := range steps {
		b.ReportMetric(benchutil.Median(wall[i])/1e6, st.name+"-ms")
		b.ReportMetric(benchutil.Median(cpu[i])/1e6, st.name+"-cpu-ms")
	}
}
