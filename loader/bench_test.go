package loader_test

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fuelsync/fuelsync/internal/benchutil"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/hashicorp/hcl/v2"
	yaml "go.yaml.in/yaml/v3"
)

// largeSpec is the acceptance size: 50 plugins, 5,000 tasks, 2,000 nodes, 20 clusters.
var largeSpec = repogen.Spec{Plugins: 50, Tasks: 5000, Nodes: 2000, Clusters: 20, Seed: 1}

// large is the generated repository, built and checked once per test binary.
var large struct {
	once  sync.Once
	fsys  fstest.MapFS
	yaml  [][]byte // every .yaml/.yml/.json file, by path
	bytes int64
	err   string
}

func largeRepo(b *testing.B) (fstest.MapFS, [][]byte, int64) {
	b.Helper()
	large.once.Do(func() {
		fsys := repogen.Generate(largeSpec)
		repo, diags := loader.Load(fsys, loader.Options{})
		if diags.HasErrors() {
			var buf bytes.Buffer
			_ = hcl.NewDiagnosticTextWriter(&buf, repo.Sources.Files(), 100, false).WriteDiagnostics(diags)
			large.err = "the generated repository does not load:\n" + buf.String()
			return
		}
		got := repogen.Count(repo, largeSpec.Seed)
		if got != largeSpec {
			large.err = fmt.Sprintf("the generated repository loads as %+v, want %+v", got, largeSpec)
			return
		}
		large.yaml = benchutil.YAMLInputs(fsys)
		for _, data := range large.yaml {
			large.bytes += int64(len(data))
		}
		large.fsys = fsys
	})
	if large.err != "" {
		b.Fatal(large.err)
	}
	return large.fsys, large.yaml, large.bytes
}

// decodeYAMLBaseline decodes every file with the yaml library alone, into yaml.Node
// (what the loader's DecodeYAML starts from), on GOMAXPROCS goroutines.
func decodeYAMLBaseline(files [][]byte) error {
	workers := min(runtime.GOMAXPROCS(0), len(files))
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				var n yaml.Node
				if err := yaml.Unmarshal(files[i], &n); err != nil {
					errs[w] = err
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkLoadLarge loads and validates the generated acceptance-size repository.
func BenchmarkLoadLarge(b *testing.B) {
	fsys, _, n := largeRepo(b)
	b.ReportAllocs()
	b.SetBytes(n)
	for b.Loop() {
		if _, diags := loader.Load(fsys, loader.Options{}); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
	}
}

// BenchmarkDecodeYAMLBaseline decodes the same YAML bytes with the yaml library
// alone, in parallel over the cores: the floor BenchmarkLoadLarge is measured against.
func BenchmarkDecodeYAMLBaseline(b *testing.B) {
	_, files, n := largeRepo(b)
	b.ReportAllocs()
	b.SetBytes(n)
	for b.Loop() {
		if err := decodeYAMLBaseline(files); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadLargeRatio times Load and the yaml-only baseline in the same run,
// alternating them so they share the machine's noise, and reports
//
//	load/yaml-ratio      median over iterations of load time / baseline time of the
//	                     adjacent pair (wall clock; the acceptance target is ≤ 1.5)
//	load/yaml-cpu-ratio  the same with process CPU time (Linux only), which a busy
//	                     machine disturbs less; it ignores how well each side
//	                     spreads over the cores
//	load-ms, yaml-ms     the medians of each side
//	MB-yaml              the size of the YAML/JSON decoded
//
// Each timed part starts after a GC, so that it pays for collecting its own garbage
// and not the other's.
func BenchmarkLoadLargeRatio(b *testing.B) {
	fsys, files, n := largeRepo(b)
	var loadT, yamlT, ratios []float64
	var loadCPU, yamlCPU time.Duration
	cpuOK := true
	// timed runs f after a GC and returns its wall-clock and CPU time.
	timed := func(f func()) (float64, time.Duration) {
		runtime.GC()
		c0, ok0 := benchutil.ProcessCPU()
		t0 := time.Now()
		f()
		wall := float64(time.Since(t0))
		c1, ok1 := benchutil.ProcessCPU()
		cpuOK = cpuOK && ok0 && ok1
		return wall, c1 - c0
	}
	load := func() {
		if _, diags := loader.Load(fsys, loader.Options{}); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
	}
	base := func() {
		if err := decodeYAMLBaseline(files); err != nil {
			b.Fatal(err)
		}
	}
	i := 0
	for b.Loop() {
		var l, y float64
		var lc, yc time.Duration
		if i%2 == 0 {
			l, lc = timed(load)
			y, yc = timed(base)
		} else {
			y, yc = timed(base)
			l, lc = timed(load)
		}
		loadCPU += lc
		yamlCPU += yc
		loadT, yamlT, ratios = append(loadT, l), append(yamlT, y), append(ratios, l/y)
		i++
	}
	b.ReportMetric(benchutil.Median(ratios), "load/yaml-ratio")
	if cpuOK && yamlCPU > 0 {
		b.ReportMetric(float64(loadCPU)/float64(yamlCPU), "load/yaml-cpu-ratio")
	}
	b.ReportMetric(benchutil.Median(loadT)/1e6, "load-ms")
	b.ReportMetric(benchutil.Median(yamlT)/1e6, "yaml-ms")
	b.ReportMetric(float64(n)/1e6, "MB-yaml")
}

// BenchmarkLoadLargeDisk loads the same repository from a directory (os.DirFS), as
// the CLI reads a working tree: the loader's file-system calls cost what they really
// cost, not what fstest.MapFS's linear directory scans cost.
func BenchmarkLoadLargeDisk(b *testing.B) {
	fsys, _, n := largeRepo(b)
	dir := b.TempDir()
	if err := repogen.WriteDir(fsys, dir); err != nil {
		b.Fatal(err)
	}
	dfs := os.DirFS(dir)
	b.ReportAllocs()
	b.SetBytes(n)
	for b.Loop() {
		if _, diags := loader.Load(dfs, loader.Options{}); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
	}
}

// BenchmarkLoadFuelMitaka loads the real upstream data of examples/fuel-mitaka.
func BenchmarkLoadFuelMitaka(b *testing.B) {
	fsys := os.DirFS("../examples/fuel-mitaka")
	if _, err := os.Stat("../examples/fuel-mitaka/plugins"); err != nil {
		b.Skip("examples/fuel-mitaka is missing:", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		loader.Load(fsys, loader.Options{})
	}
}
