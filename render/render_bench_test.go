package render_test

// Rendering benchmarks on the generated repositories of internal/repogen.
//
//	BenchmarkResolve/entries=N  the resolve step alone (Model.RenderGraphs on models
//	                            already built) at three sizes; ns/entry stays flat
//	                            when it grows linearly in node-task entries
//	BenchmarkRenderLarge        Render + Files of the acceptance-size repository
//	                            (loaded once, not timed): median time, peak memory
//	BenchmarkRenderLargeFull    Load + Render + Files against its floor (yaml.v3
//	                            decoding the input and encoding the output, in
//	                            parallel over the cores), alternated in one run
//
// Each timed part starts after a GC, so it pays for collecting its own garbage and
// not for what the setup or the other side left behind. Times are medians over the
// iterations (ns/op is the mean the testing package prints).
//
// Peak memory is sampled, not computed: a goroutine reads runtime/metrics every
// millisecond during the timed part and keeps the maximum of
//
//	peak-heap-MB  /memory/classes/heap/objects:bytes: the bytes of heap objects,
//	              live or garbage not yet freed, i.e. the heap the process really
//	              holds at GOGC=100 (runtime.MemStats.HeapAlloc, without stopping
//	              the world as ReadMemStats does)
//	peak-go-MB    /memory/classes/total:bytes - /memory/classes/heap/released:bytes:
//	              everything the Go runtime has mapped and not returned to the OS
//	              (heap spans, stacks, GC metadata): the Go share of the RSS
//
// plus, on Linux, peak-rss-MB: the process's VmHWM, reset through
// /proc/self/clear_refs before the timed part. All three include what is live
// before the timed part starts (the loaded repository, the input files), which
// base-heap-MB reports (heap objects right after the GC that precedes the timed
// part): peak-heap-MB - base-heap-MB is what rendering itself adds. A millisecond
// between samples misses at most a millisecond of allocation at the peak, a few MB.
//
// The generated repositories are large and rendering currently needs far more
// memory than the 1.5 GiB target; a run that passes benchHeapCapGiB of heap is
// stopped (the whole test binary exits with a message) rather than left to exhaust
// a shared machine's memory; the setup outside the timers is watched the same way.
// FUELSYNC_BENCH_HEAP_CAP_GIB overrides the cap.

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hashicorp/hcl/v2"
	yaml "go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/internal/benchutil"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// renderLargeSpec is the acceptance size, the same as loader's largeSpec.
var renderLargeSpec = repogen.Spec{Plugins: 50, Tasks: 5000, Nodes: 2000, Clusters: 20, Seed: 1}

// resolveSpecs are the sizes of BenchmarkResolve: the tasks of the large spec, one
// cluster growing from 25 to 100 nodes, so that a cost growing with the cluster's
// size (not only with its entries) shows as a growing ns/entry. One cluster of 100
// nodes is the size of one cluster of the large spec. The sizes are kept small
// enough for the current resolve step (about 0.3 ms, 260 KB allocated and 40 KB
// kept per entry) to run in minutes and a few GB; once it meets its target, raise
// them (e.g. Nodes 250, 1000, 4000 over Clusters 20).
var resolveSpecs = []repogen.Spec{
	{Plugins: 50, Tasks: 5000, Nodes: 25, Clusters: 1, Seed: 1},
	{Plugins: 50, Tasks: 5000, Nodes: 50, Clusters: 1, Seed: 1},
	{Plugins: 50, Tasks: 5000, Nodes: 100, Clusters: 1, Seed: 1},
}

// benchHeapCapGiB is the heap size at which a rendering benchmark stops the test
// binary: over 5 times the 1.5 GiB target, well under the development machine's
// memory.
const benchHeapCapGiB = 8

// renderLarge is the large generated repository, built once per test binary.
var renderLarge struct {
	once sync.Once
	fsys fstest.MapFS
}

func renderLargeFS() fstest.MapFS {
	renderLarge.once.Do(func() { renderLarge.fsys = repogen.Generate(renderLargeSpec) })
	return renderLarge.fsys
}

// loadRepo loads fsys and fails on errors, printing them with their source.
func loadRepo(b *testing.B, fsys fstest.MapFS) *loader.Repo {
	b.Helper()
	repo, diags := loader.Load(fsys, loader.Options{})
	if diags.HasErrors() {
		b.Fatalf("the generated repository does not load:\n%s", diagsText(repo, diags))
	}
	return repo
}

// renderRepo renders every cluster of repo and fails on errors: the generator is
// meant to produce repositories render accepts.
func renderRepo(b *testing.B, repo *loader.Repo) []*render.Rendered {
	b.Helper()
	rs, diags := render.Render(repo, render.Options{})
	if diags.HasErrors() {
		b.Fatalf("render rejects the generated repository:\n%s", diagsText(repo, diags))
	}
	if len(rs) != len(repo.Clusters) {
		b.Fatalf("rendered %d clusters of %d", len(rs), len(repo.Clusters))
	}
	return rs
}

func diagsText(repo *loader.Repo, diags hcl.Diagnostics) string {
	var buf bytes.Buffer
	var files map[string]*hcl.File
	if repo != nil && repo.Sources != nil {
		files = repo.Sources.Files()
	}
	_ = hcl.NewDiagnosticTextWriter(&buf, files, 100, false).WriteDiagnostics(diags)
	return buf.String()
}

// graphEntries counts node-task entries: the tasks of every node (master and sync
// included) of every graph.
func graphEntries(gs []*render.Graph) int {
	n := 0
	for _, g := range gs {
		for _, ng := range g.Nodes {
			n += len(ng.Tasks)
		}
	}
	return n
}

func renderedEntries(rs []*render.Rendered) int {
	n := 0
	for _, r := range rs {
		n += graphEntries(r.Graphs)
	}
	return n
}

func filesBytes(files map[string][]byte) int64 {
	var n int64
	for _, data := range files {
		n += int64(len(data))
	}
	return n
}

// ---------------------------------------------------------------- peak memory

var memSamples = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/total:bytes",
	"/memory/classes/heap/released:bytes",
}

// memPeak samples the memory of the process until stop; see the file comment.
type memPeak struct {
	what       string
	capBytes   uint64
	start      time.Time
	stopc      chan struct{}
	done       chan struct{}
	heap, goMB uint64 // maxima, in bytes
}

func heapCapBytes() uint64 {
	gib := float64(benchHeapCapGiB)
	if s := os.Getenv("FUELSYNC_BENCH_HEAP_CAP_GIB"); s != "" {
		if v, err := strconv.ParseFloat(s, 64); err == nil && v > 0 {
			gib = v
		}
	}
	return uint64(gib * (1 << 30))
}

// startMemPeak resets the process's VmHWM and starts sampling.
func startMemPeak(what string) *memPeak {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) // Linux: VmHWM := VmRSS
	p := &memPeak{what: what, capBytes: heapCapBytes(), start: time.Now(), stopc: make(chan struct{}), done: make(chan struct{})}
	samples := make([]metrics.Sample, len(memSamples))
	for i, name := range memSamples {
		samples[i].Name = name
	}
	read := func() {
		metrics.Read(samples)
		heap := samples[0].Value.Uint64()
		mapped := samples[1].Value.Uint64() - samples[2].Value.Uint64()
		p.heap, p.goMB = max(p.heap, heap), max(p.goMB, mapped)
		if heap > p.capBytes {
			fmt.Fprintf(os.Stderr, "\n%s: the heap reached %.2f GiB after %v, over the benchmark cap of %.1f GiB (the target is 1.5 GiB);"+
				" stopping the test binary before the machine runs out of memory\n",
				p.what, float64(heap)/(1<<30), time.Since(p.start).Round(time.Millisecond), float64(p.capBytes)/(1<<30))
			os.Exit(3)
		}
	}
	read()
	go func() {
		defer close(p.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-p.stopc:
				read()
				return
			case <-t.C:
				read()
			}
		}
	}()
	return p
}

// stop ends sampling and returns the peaks in bytes; rss is 0 where VmHWM is not
// available.
func (p *memPeak) stop() (heap, goMapped, rss uint64) {
	close(p.stopc)
	<-p.done
	return p.heap, p.goMB, vmHWM()
}

// vmHWM is the peak resident set size of the process (Linux), in bytes.
func vmHWM() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				if kb, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}

// heapObjects is the heap in use now (after a GC: the live heap).
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: memSamples[0]}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

const mb = 1 << 20

// ---------------------------------------------------------------- benchmarks

// BenchmarkResolve times the resolve step alone: Model.RenderGraphs on the models
// of every cluster, built once outside the timer. It reports
//
//	ns/entry  median over iterations of the step's time / node-task entries (the
//	          target is ≤ 2 µs; flat over the sizes = linear growth)
//	B/entry   bytes allocated by the step / node-task entries
//	entries   node-task entries (also in the name), nodes the cluster's nodes
func BenchmarkResolve(b *testing.B) {
	for _, spec := range resolveSpecs {
		setup := startMemPeak("BenchmarkResolve (setup)")
		repo := loadRepo(b, repogen.Generate(spec))
		rs := renderRepo(b, repo)
		entries := renderedEntries(rs)
		models := make([]*render.Model, len(rs))
		for i, r := range rs {
			models[i] = r.Model
		}
		setup.stop()
		b.Run(fmt.Sprintf("entries=%d", entries), func(b *testing.B) {
			mp := startMemPeak(b.Name())
			var perEntry []float64
			var alloc uint64
			var ms runtime.MemStats
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				alloc0 := ms.TotalAlloc
				b.StartTimer()
				t0 := time.Now()
				graphs := make([][]*render.Graph, len(models))
				for i, m := range models {
					gs, diags := m.RenderGraphs()
					if diags.HasErrors() {
						b.Fatalf("cluster %s:\n%s", m.Cluster.Name, diagsText(repo, diags))
					}
					graphs[i] = gs
				}
				elapsed := time.Since(t0)
				b.StopTimer()
				runtime.ReadMemStats(&ms)
				alloc += ms.TotalAlloc - alloc0
				n := 0
				for _, gs := range graphs {
					n += graphEntries(gs)
				}
				if n != entries {
					b.Fatalf("RenderGraphs gave %d entries, Render %d", n, entries)
				}
				perEntry = append(perEntry, float64(elapsed)/float64(entries))
				b.StartTimer()
			}
			mp.stop()
			b.ReportMetric(benchutil.Median(perEntry), "ns/entry")
			b.ReportMetric(float64(alloc)/float64(b.N)/float64(entries), "B/entry")
			b.ReportMetric(float64(entries), "entries")
			b.ReportMetric(float64(spec.Nodes), "nodes")
		})
	}
}

// BenchmarkRenderLarge times Render + Files on the acceptance-size repository,
// loaded once outside the timer. It reports
//
//	median-ms     median time of Render + Files
//	ns/entry      median-ms per node-task entry
//	entries       node-task entries; MB-out the artifacts' size
//	peak-heap-MB, peak-go-MB, peak-rss-MB, base-heap-MB   see the file comment
//	              (maxima over the iterations; the target is ≤ 1.5 GiB)
func BenchmarkRenderLarge(b *testing.B) {
	setup := startMemPeak("BenchmarkRenderLarge (setup)")
	repo := loadRepo(b, renderLargeFS())
	setup.stop()
	var times []float64
	var peakHeap, peakGo, peakRSS, baseHeap uint64
	var entries int
	var outBytes int64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		baseHeap = max(baseHeap, heapObjects())
		mp := startMemPeak("BenchmarkRenderLarge")
		b.StartTimer()
		t0 := time.Now()
		rs := renderRepo(b, repo)
		files, err := render.Files(rs, "bench", "bench")
		if err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(t0)
		b.StopTimer()
		h, g, r := mp.stop()
		peakHeap, peakGo, peakRSS = max(peakHeap, h), max(peakGo, g), max(peakRSS, r)
		times = append(times, float64(elapsed))
		entries, outBytes = renderedEntries(rs), filesBytes(files)
		b.StartTimer()
	}
	med := benchutil.Median(times)
	b.ReportMetric(med/1e6, "median-ms")
	b.ReportMetric(med/float64(entries), "ns/entry")
	b.ReportMetric(float64(entries), "entries")
	b.ReportMetric(float64(outBytes)/mb, "MB-out")
	b.ReportMetric(float64(peakHeap)/mb, "peak-heap-MB")
	b.ReportMetric(float64(peakGo)/mb, "peak-go-MB")
	if peakRSS > 0 {
		b.ReportMetric(float64(peakRSS)/mb, "peak-rss-MB")
	}
	b.ReportMetric(float64(baseHeap)/mb, "base-heap-MB")
}

// renderFloor is what BenchmarkRenderLargeFull measures Load + Render + Files
// against: the input's YAML and JSON files decoded with yaml.v3 into yaml.Node (what
// the loader starts from, as loader's decodeYAMLBaseline), and the produced YAML
// artifacts encoded with yaml.v3 as Files encodes them (an Encoder with 2-space
// indent) from plain trees (the artifacts decoded into any once, outside the
// timer). The DOT graphs and manifest.json are not YAML and are left out.
type renderFloor struct {
	inputs  [][]byte
	outputs []any
	inMB    float64
	outMB   float64
}

func newRenderFloor(b *testing.B, fsys fstest.MapFS, files map[string][]byte) *renderFloor {
	b.Helper()
	fl := &renderFloor{}
	var names []string
	for name, f := range fsys {
		switch path.Ext(name) {
		case ".yaml", ".yml", ".json":
			if f.Mode.IsRegular() {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	for _, name := range names {
		fl.inputs = append(fl.inputs, fsys[name].Data)
		fl.inMB += float64(len(fsys[name].Data)) / mb
	}
	names = names[:0]
	for name := range files {
		if path.Ext(name) == ".yaml" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		var doc any
		if err := yaml.Unmarshal(files[name], &doc); err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		fl.outputs = append(fl.outputs, doc)
		fl.outMB += float64(len(files[name])) / mb
	}
	return fl
}

// run decodes every input and encodes every output on GOMAXPROCS goroutines.
func (fl *renderFloor) run() error {
	jobs := len(fl.inputs) + len(fl.outputs)
	workers := min(runtime.GOMAXPROCS(0), jobs)
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= jobs {
					return
				}
				if i < len(fl.inputs) {
					var n yaml.Node
					if err := yaml.Unmarshal(fl.inputs[i], &n); err != nil {
						errs[w] = err
						return
					}
					continue
				}
				var buf bytes.Buffer
				enc := yaml.NewEncoder(&buf)
				enc.SetIndent(2)
				if err := enc.Encode(fl.outputs[i-len(fl.inputs)]); err != nil {
					errs[w] = err
					return
				}
				if err := enc.Close(); err != nil {
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

// BenchmarkRenderLargeFull times Load (from the MapFS) + Render + Files and its
// floor (renderFloor) in the same run, alternating which goes first so they share
// the machine's noise, and reports
//
//	full/floor-ratio      median over iterations of full time / floor time of the
//	                      adjacent pair (wall clock; the target is ≤ 1.5)
//	full/floor-cpu-ratio  the same with process CPU time (Linux), summed over the
//	                      run: less disturbed by a busy machine, blind to how well
//	                      each side spreads over the cores
//	full-ms, floor-ms     the medians of each side
//	peak-heap-MB, peak-go-MB, peak-rss-MB, base-heap-MB   of the full side (see the
//	                      file comment; the base includes the floor's decoded trees)
//	MB-in, MB-out         the YAML decoded and encoded by the floor
func BenchmarkRenderLargeFull(b *testing.B) {
	fsys := renderLargeFS()
	// The floor's inputs: the artifacts of one full run, decoded.
	var fl *renderFloor
	{
		setup := startMemPeak("BenchmarkRenderLargeFull (setup)")
		rs := renderRepo(b, loadRepo(b, fsys))
		files, err := render.Files(rs, "bench", "bench")
		if err != nil {
			b.Fatal(err)
		}
		fl = newRenderFloor(b, fsys, files)
		setup.stop()
	}
	full := func() {
		repo := loadRepo(b, fsys)
		rs := renderRepo(b, repo)
		if _, err := render.Files(rs, "bench", "bench"); err != nil {
			b.Fatal(err)
		}
	}
	floor := func() {
		if err := fl.run(); err != nil {
			b.Fatal(err)
		}
	}
	var fullT, floorT, ratios []float64
	var fullCPU, floorCPU time.Duration
	cpuOK := true
	var peakHeap, peakGo, peakRSS, baseHeap uint64
	// timed runs f after a GC and returns its wall-clock and CPU time; the memory
	// peaks of the full side are kept.
	timed := func(f func(), isFull bool) (float64, time.Duration) {
		runtime.GC()
		if isFull {
			baseHeap = max(baseHeap, heapObjects())
		}
		mp := startMemPeak("BenchmarkRenderLargeFull")
		c0, ok0 := benchutil.ProcessCPU()
		t0 := time.Now()
		f()
		wall := float64(time.Since(t0))
		c1, ok1 := benchutil.ProcessCPU()
		h, g, r := mp.stop()
		if isFull {
			peakHeap, peakGo, peakRSS = max(peakHeap, h), max(peakGo, g), max(peakRSS, r)
		}
		cpuOK = cpuOK && ok0 && ok1
		return wall, c1 - c0
	}
	i := 0
	for b.Loop() {
		var fw, lw float64
		var fc, lc time.Duration
		if i%2 == 0 {
			fw, fc = timed(full, true)
			lw, lc = timed(floor, false)
		} else {
			lw, lc = timed(floor, false)
			fw, fc = timed(full, true)
		}
		fullCPU += fc
		floorCPU += lc
		fullT, floorT, ratios = append(fullT, fw), append(floorT, lw), append(ratios, fw/lw)
		i++
	}
	b.ReportMetric(benchutil.Median(ratios), "full/floor-ratio")
	if cpuOK && floorCPU > 0 {
		b.ReportMetric(float64(fullCPU)/float64(floorCPU), "full/floor-cpu-ratio")
	}
	b.ReportMetric(benchutil.Median(fullT)/1e6, "full-ms")
	b.ReportMetric(benchutil.Median(floorT)/1e6, "floor-ms")
	b.ReportMetric(float64(peakHeap)/mb, "peak-heap-MB")
	b.ReportMetric(float64(peakGo)/mb, "peak-go-MB")
	if peakRSS > 0 {
		b.ReportMetric(float64(peakRSS)/mb, "peak-rss-MB")
	}
	b.ReportMetric(float64(baseHeap)/mb, "base-heap-MB")
	b.ReportMetric(fl.inMB, "MB-in")
	b.ReportMetric(fl.outMB, "MB-out")
}
