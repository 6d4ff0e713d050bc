package render_test

// Rendering benchmarks on the generated repositories of internal/repogen.
//
//	BenchmarkResolve/entries=N  the resolve step alone (Model.RenderGraphs on models
//	                            already built) at three sizes; ns/entry stays flat
//	                            when it grows linearly in node-task entries
//	BenchmarkRenderLarge        Render + Stream of the acceptance-size repository
//	                            (loaded once, not timed): median time, peak memory
//	BenchmarkRenderLargeFull    Load + Render + Stream against its floor (yaml.v3
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
// The generated repositories are large; a run that passes benchHeapCapGiB of heap
// is stopped (the whole test binary exits with a message) rather than left to
// exhaust a shared machine's memory; the setup outside the timers is watched the
// same way. FUELSYNC_BENCH_HEAP_CAP_GIB overrides the cap.

import (
	"bytes"
	"errors"
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

// resolveSpecs are the sizes of BenchmarkResolve: the tasks of the large spec in one
// cluster growing from 125 to 2,000 nodes (16 times the entries), so that a cost
// growing faster than the cluster (per node pair, or per node and task of the whole
// graph) shows as a growing ns/entry. The largest has as many node-task entries as
// the whole acceptance-size repository, in a single cluster.
var resolveSpecs = []repogen.Spec{
	{Plugins: 50, Tasks: 5000, Nodes: 125, Clusters: 1, Seed: 1},
	{Plugins: 50, Tasks: 5000, Nodes: 500, Clusters: 1, Seed: 1},
	{Plugins: 50, Tasks: 5000, Nodes: 2000, Clusters: 1, Seed: 1},
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

// streamBytes encodes the artifacts of rs as the render command does, without
// writing them anywhere, and returns their size.
func streamBytes(b *testing.B, rs []*render.Rendered) int64 {
	var n atomic.Int64
	err := render.Stream(rs, "bench", "bench", func(_ string, data []byte) error {
		n.Add(int64(len(data)))
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return n.Load()
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

// BenchmarkRenderLarge times Render + Stream (the artifacts encoded and hashed as the
// render command does, but not written) on the acceptance-size repository, loaded
// once outside the timer. It reports
//
//	median-ms     median time of Render + Stream
//	cpu-ms        median process CPU time (user + system, every thread) of the
//	              same: steadier than wall time on a shared machine
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
	var cpu []float64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		baseHeap = max(baseHeap, heapObjects())
		mp := startMemPeak("BenchmarkRenderLarge")
		b.StartTimer()
		c0, _ := benchutil.ProcessCPU()
		t0 := time.Now()
		rs := renderRepo(b, repo)
		n := streamBytes(b, rs)
		elapsed := time.Since(t0)
		c1, _ := benchutil.ProcessCPU()
		cpu = append(cpu, float64(c1-c0))
		b.StopTimer()
		h, g, r := mp.stop()
		peakHeap, peakGo, peakRSS = max(peakHeap, h), max(peakGo, g), max(peakRSS, r)
		times = append(times, float64(elapsed))
		entries, outBytes = renderedEntries(rs), n
		b.StartTimer()
	}
	med := benchutil.Median(times)
	b.ReportMetric(med/1e6, "median-ms")
	b.ReportMetric(benchutil.Median(cpu)/1e6, "cpu-ms")
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

// renderFloor is what BenchmarkRenderLargeFull measures Load + Render + Stream
// against: the input's YAML and JSON files decoded with yaml.v3 into yaml.Node (what
// the loader starts from, as loader's decodeYAMLBaseline), and the produced YAML
// artifacts encoded with yaml.v3 as the encoder writes them (an Encoder with 2-space
// indent) from plain trees. The DOT graphs and manifest.json are not YAML and are
// left out.
//
// The artifacts decoded into plain trees take several times their size in memory
// (over 8 GiB for the acceptance size), so they wait on disk and are decoded a chunk
// of floorChunkBytes at a time, outside the timer; only the encoding of each chunk
// is timed, every chunk spread over the cores.
type renderFloor struct {
	inputs  [][]byte
	outDir  string
	chunks  [][]string // artifact files, relative to outDir
	inMB    float64
	outMB   float64
	workers int
}

const floorChunkBytes = 32 << 20

func newRenderFloor(b *testing.B, fsys fstest.MapFS, rs []*render.Rendered) *renderFloor {
	b.Helper()
	fl := &renderFloor{outDir: b.TempDir(), workers: runtime.GOMAXPROCS(0)}
	fl.inputs = benchutil.YAMLInputs(fsys)
	for _, in := range fl.inputs {
		fl.inMB += float64(len(in)) / mb
	}
	var mu sync.Mutex
	sizes := map[string]int{}
	err := render.Stream(rs, "bench", "bench", func(name string, data []byte) error {
		if path.Ext(name) != ".yaml" {
			return nil
		}
		flat := strings.ReplaceAll(name, "/", "__")
		mu.Lock()
		sizes[flat] = len(data)
		mu.Unlock()
		return os.WriteFile(path.Join(fl.outDir, flat), data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
	names := make([]string, 0, len(sizes))
	for name := range sizes {
		names = append(names, name)
	}
	slices.Sort(names)
	size := 0
	for _, name := range names {
		if len(fl.chunks) == 0 || size >= floorChunkBytes {
			fl.chunks = append(fl.chunks, nil)
			size = 0
		}
		fl.chunks[len(fl.chunks)-1] = append(fl.chunks[len(fl.chunks)-1], name)
		size += sizes[name]
		fl.outMB += float64(sizes[name]) / mb
	}
	return fl
}

// each calls f(i) for i in [0, n) on the floor's goroutines.
func (fl *renderFloor) each(n int, f func(i int) error) error {
	var next atomic.Int64
	errs := make([]error, fl.workers)
	var wg sync.WaitGroup
	for w := range min(fl.workers, n) {
		wg.Go(func() {
			for errs[w] == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				errs[w] = f(i)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// run decodes every input and encodes every output, each phase on GOMAXPROCS
// goroutines, and returns the wall-clock and CPU time of the timed phases.
func (fl *renderFloor) run() (wall float64, cpu time.Duration, cpuOK bool, err error) {
	cpuOK = true
	timed := func(f func() error) error {
		c0, ok0 := benchutil.ProcessCPU()
		t0 := time.Now()
		err := f()
		wall += float64(time.Since(t0))
		c1, ok1 := benchutil.ProcessCPU()
		cpu += c1 - c0
		cpuOK = cpuOK && ok0 && ok1
		return err
	}
	err = timed(func() error {
		return fl.each(len(fl.inputs), func(i int) error {
			var n yaml.Node
			return yaml.Unmarshal(fl.inputs[i], &n)
		})
	})
	if err != nil {
		return 0, 0, false, err
	}
	for _, chunk := range fl.chunks {
		docs := make([]any, len(chunk))
		err := fl.each(len(chunk), func(i int) error {
			data, err := os.ReadFile(path.Join(fl.outDir, chunk[i]))
			if err != nil {
				return err
			}
			return yaml.Unmarshal(data, &docs[i])
		})
		if err != nil {
			return 0, 0, false, err
		}
		runtime.GC() // the decoding's garbage is not the encoding's to collect
		err = timed(func() error {
			return fl.each(len(docs), func(i int) error {
				var buf bytes.Buffer
				enc := yaml.NewEncoder(&buf)
				enc.SetIndent(2)
				if err := enc.Encode(docs[i]); err != nil {
					return err
				}
				return enc.Close()
			})
		})
		if err != nil {
			return 0, 0, false, err
		}
	}
	return wall, cpu, cpuOK, nil
}

// BenchmarkRenderLargeFull times Load (from the MapFS) + Render + Stream and its
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
//	                      file comment; the floor keeps its artifacts on disk)
//	MB-in, MB-out         the YAML decoded and encoded by the floor
func BenchmarkRenderLargeFull(b *testing.B) {
	fsys := renderLargeFS()
	// The floor's outputs: the artifacts of one full run, on disk.
	var fl *renderFloor
	{
		setup := startMemPeak("BenchmarkRenderLargeFull (setup)")
		fl = newRenderFloor(b, fsys, renderRepo(b, loadRepo(b, fsys)))
		setup.stop()
	}
	full := func() {
		repo := loadRepo(b, fsys)
		streamBytes(b, renderRepo(b, repo))
	}
	var fullT, floorT, ratios []float64
	var fullCPU, floorCPU time.Duration
	cpuOK := true
	var peakHeap, peakGo, peakRSS, baseHeap uint64
	// timedFull runs the full side after a GC and returns its wall-clock and CPU
	// time, keeping its memory peaks.
	timedFull := func() (float64, time.Duration) {
		runtime.GC()
		baseHeap = max(baseHeap, heapObjects())
		mp := startMemPeak("BenchmarkRenderLargeFull")
		c0, ok0 := benchutil.ProcessCPU()
		t0 := time.Now()
		full()
		wall := float64(time.Since(t0))
		c1, ok1 := benchutil.ProcessCPU()
		h, g, r := mp.stop()
		peakHeap, peakGo, peakRSS = max(peakHeap, h), max(peakGo, g), max(peakRSS, r)
		cpuOK = cpuOK && ok0 && ok1
		return wall, c1 - c0
	}
	timedFloor := func() (float64, time.Duration) {
		runtime.GC()
		wall, cpu, ok, err := fl.run()
		if err != nil {
			b.Fatal(err)
		}
		cpuOK = cpuOK && ok
		return wall, cpu
	}
	i := 0
	for b.Loop() {
		var fw, lw float64
		var fc, lc time.Duration
		if i%2 == 0 {
			fw, fc = timedFull()
			lw, lc = timedFloor()
		} else {
			lw, lc = timedFloor()
			fw, fc = timedFull()
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

// BenchmarkValidateLarge times what `fuelsync validate` runs on the acceptance-size
// repository: Load (from the MapFS) and the checks of every cluster, graphs
// included (render.Validate), nothing encoded. It reports median-ms, cpu-ms (as
// BenchmarkRenderLarge) and the
// peak-heap-MB, peak-go-MB, peak-rss-MB and base-heap-MB of the file comment.
func BenchmarkValidateLarge(b *testing.B) {
	fsys := renderLargeFS()
	var times, cpu []float64
	var peakHeap, peakGo, peakRSS, baseHeap uint64
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		baseHeap = max(baseHeap, heapObjects())
		mp := startMemPeak("BenchmarkValidateLarge")
		b.StartTimer()
		c0, _ := benchutil.ProcessCPU()
		t0 := time.Now()
		repo := loadRepo(b, fsys)
		if diags := validateRepo(repo); diags.HasErrors() {
			b.Fatalf("validate rejects the generated repository:\n%s", diagsText(repo, diags))
		}
		elapsed := time.Since(t0)
		c1, _ := benchutil.ProcessCPU()
		b.StopTimer()
		h, g, r := mp.stop()
		peakHeap, peakGo, peakRSS = max(peakHeap, h), max(peakGo, g), max(peakRSS, r)
		times, cpu = append(times, float64(elapsed)), append(cpu, float64(c1-c0))
		b.StartTimer()
	}
	b.ReportMetric(benchutil.Median(times)/1e6, "median-ms")
	b.ReportMetric(benchutil.Median(cpu)/1e6, "cpu-ms")
	b.ReportMetric(float64(peakHeap)/mb, "peak-heap-MB")
	b.ReportMetric(float64(peakGo)/mb, "peak-go-MB")
	if peakRSS > 0 {
		b.ReportMetric(float64(peakRSS)/mb, "peak-rss-MB")
	}
	b.ReportMetric(float64(baseHeap)/mb, "base-heap-MB")
}

func validateRepo(repo *loader.Repo) hcl.Diagnostics {
	return render.Validate(repo, render.Options{})
}

// ---------------------------------------------------------------- shapes against the YAML floor

// renderShapes are the generated shapes BenchmarkRenderShapes and
// TestRenderWithinYAMLFloor measure: the heavy one (generated release and
// plugins, heavy cross-node dependencies and stage fan-in) and the real-data one
// (the Fuel 9.x release and the example plugins, several roles per node). Both
// put nodes nodes in 4 clusters.
var renderShapes = []struct {
	name string
	spec func(nodes int) repogen.Spec
}{
	{"heavy", repogen.Heavy},
	{"mitaka", repogen.Mitaka},
}

// renderFloorRatioMax is the goal: Load + Render + Stream at most 30 times the
// YAML decode floor of the same input, on every shape, up to
// renderFloorGoalNodes nodes (4 clusters of 500). The input grows little with
// the nodes (the release and plugins do not), so the ratio grows with the
// clusters: BenchmarkRenderShapes checks the goal at that size and reports the
// ratio at larger ones.
const (
	renderFloorRatioMax  = 30
	renderFloorGoalNodes = 2000
)

// decodeFloor decodes the input again and again for at least floorMinTime and
// floorMinCPU of the process's CPU time, so that a floor of a few milliseconds
// is measured to well under a percent, its CPU time (in 10 ms ticks) to about
// two.
const (
	floorMinTime = 300 * time.Millisecond
	floorMinCPU  = 500 * time.Millisecond
)

// decodeFloor decodes every file into yaml.Node (what the loader starts from) on
// GOMAXPROCS goroutines, as internal/cli's yamlFloor and loader's
// decodeYAMLBaseline do, repeated (see floorMinTime) after a GC, and
// returns the wall-clock and CPU time of one decoding: the least time reading
// the input costs.
func decodeFloor(files [][]byte) (wall, cpu float64, err error) {
	runtime.GC()
	c0, _ := benchutil.ProcessCPU()
	t0 := time.Now()
	n := 0
	for c := c0; n == 0 || time.Since(t0) < floorMinTime || c-c0 < floorMinCPU; c, _ = benchutil.ProcessCPU() {
		var next atomic.Int64
		errs := make([]error, runtime.GOMAXPROCS(0))
		var wg sync.WaitGroup
		for w := range errs {
			wg.Go(func() {
				for errs[w] == nil {
					i := int(next.Add(1) - 1)
					if i >= len(files) {
						return
					}
					var node yaml.Node
					errs[w] = yaml.Unmarshal(files[i], &node)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return 0, 0, err
		}
		n++
	}
	elapsed := time.Since(t0)
	c1, _ := benchutil.ProcessCPU()
	return float64(elapsed) / float64(n), float64(c1-c0) / float64(n), nil
}

// shapeRun is one pair: Load + Render + Stream of a repository and its floor.
type shapeRun struct {
	wall, cpu           float64 // Load + Render + Stream, ns
	floorWall, floorCPU float64 // one decoding of the input, ns
	entries             int
	heap, rss           uint64 // peaks of the render side, bytes
}

// runShape times Load + Render + Stream of fsys after a GC, then its floor.
func runShape(tb testing.TB, fsys fstest.MapFS, inputs [][]byte) shapeRun {
	tb.Helper()
	var r shapeRun
	runtime.GC()
	mp := startMemPeak(tb.Name())
	c0, _ := benchutil.ProcessCPU()
	t0 := time.Now()
	repo, diags := loader.Load(fsys, loader.Options{})
	rs, more := render.Render(repo, render.Options{})
	if diags = append(diags, more...); diags.HasErrors() {
		tb.Fatalf("the generated repository does not render:\n%s", diagsText(repo, diags))
	}
	err := render.Stream(rs, "bench", "bench", func(string, []byte) error { return nil })
	r.wall = float64(time.Since(t0))
	c1, _ := benchutil.ProcessCPU()
	r.cpu = float64(c1 - c0)
	r.heap, _, r.rss = mp.stop()
	if err != nil {
		tb.Fatal(err)
	}
	r.entries = renderedEntries(rs)
	rs, repo = nil, nil
	if r.floorWall, r.floorCPU, err = decodeFloor(inputs); err != nil {
		tb.Fatal(err)
	}
	return r
}

// shapeNodes are the sizes of BenchmarkRenderShapes: 4 clusters of 500 and of
// 2,000 nodes; FUELSYNC_BENCH_SHAPE_NODES (a comma-separated list) overrides.
func shapeNodes(b *testing.B) []int {
	s := os.Getenv("FUELSYNC_BENCH_SHAPE_NODES")
	if s == "" {
		return []int{2000, 8000}
	}
	var ns []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 4 {
			b.Fatalf("FUELSYNC_BENCH_SHAPE_NODES: %q is not a node count of at least 4", f)
		}
		ns = append(ns, n)
	}
	return ns
}

// BenchmarkRenderShapes times Load + Render + Stream (as BenchmarkRenderLargeFull's
// full side: what the render command does but write the files) on each shape of
// renderShapes at each size of shapeNodes, each iteration followed by the
// floor: yaml.v3 decoding the same input into nodes on every core. It reports
//
//	render/yaml-floor      median over iterations of the pair's wall-time ratio
//	                       (the goal is ≤ 30)
//	render/yaml-floor-cpu  the same with process CPU time: steadier on a busy
//	                       machine, blind to how well each side uses the cores
//	render-ms, render-cpu-ms, floor-ms, floor-cpu-ms   medians of each side
//	ns/entry               render-ms per node-task entry; entries, MB-in
//	peak-heap-MB, peak-rss-MB   of the render side (see the file comment; the
//	                       largest over the iterations)
//
// Run one with -bench 'RenderShapes/shape=mitaka/nodes=2000$'.
func BenchmarkRenderShapes(b *testing.B) {
	for _, nodes := range shapeNodes(b) {
		for _, sh := range renderShapes {
			b.Run(fmt.Sprintf("shape=%s/nodes=%d", sh.name, nodes), func(b *testing.B) {
				fsys := repogen.Generate(sh.spec(nodes))
				inputs := benchutil.YAMLInputs(fsys)
				var runs []shapeRun
				for b.Loop() {
					runs = append(runs, runShape(b, fsys, inputs))
				}
				if ratio := reportShape(b, runs, inputs); nodes <= renderFloorGoalNodes && ratio > renderFloorRatioMax {
					b.Errorf("render takes %.1f times the YAML floor's CPU time at %d nodes, over %d", ratio, nodes, renderFloorRatioMax)
				}
			})
		}
	}
}

// reportShape reports the metrics of runs and returns the median CPU-time ratio.
func reportShape(b *testing.B, runs []shapeRun, inputs [][]byte) float64 {
	med := func(f func(r shapeRun) float64) float64 {
		xs := make([]float64, len(runs))
		for i, r := range runs {
			xs[i] = f(r)
		}
		return benchutil.Median(xs)
	}
	var heap, rss uint64
	for _, r := range runs {
		heap, rss = max(heap, r.heap), max(rss, r.rss)
	}
	in := 0
	for _, f := range inputs {
		in += len(f)
	}
	ratio := med(func(r shapeRun) float64 { return r.cpu / r.floorCPU })
	b.ReportMetric(med(func(r shapeRun) float64 { return r.wall / r.floorWall }), "render/yaml-floor")
	b.ReportMetric(ratio, "render/yaml-floor-cpu")
	b.ReportMetric(med(func(r shapeRun) float64 { return r.wall })/1e6, "render-ms")
	b.ReportMetric(med(func(r shapeRun) float64 { return r.cpu })/1e6, "render-cpu-ms")
	b.ReportMetric(med(func(r shapeRun) float64 { return r.floorWall })/1e6, "floor-ms")
	b.ReportMetric(med(func(r shapeRun) float64 { return r.floorCPU })/1e6, "floor-cpu-ms")
	b.ReportMetric(med(func(r shapeRun) float64 { return r.wall / float64(r.entries) }), "ns/entry")
	b.ReportMetric(float64(runs[0].entries), "entries")
	b.ReportMetric(float64(in)/mb, "MB-in")
	b.ReportMetric(float64(heap)/mb, "peak-heap-MB")
	if rss > 0 {
		b.ReportMetric(float64(rss)/mb, "peak-rss-MB")
	}
	// Also logged: a benchmark that fails prints no metrics.
	b.Logf("render/yaml-floor %.1f, CPU %.1f; render %.0f ms, %.0f ms CPU; floor %.1f ms, %.1f ms CPU; peak heap %.0f MB, RSS %.0f MB",
		med(func(r shapeRun) float64 { return r.wall / r.floorWall }), ratio,
		med(func(r shapeRun) float64 { return r.wall })/1e6, med(func(r shapeRun) float64 { return r.cpu })/1e6,
		med(func(r shapeRun) float64 { return r.floorWall })/1e6, med(func(r shapeRun) float64 { return r.floorCPU })/1e6,
		float64(heap)/mb, float64(rss)/mb)
	return ratio
}

// TestRenderWithinYAMLFloor renders each shape of renderShapes at a small size
// (4 clusters of 50 nodes) three times, each followed by its floor, and fails
// when the median CPU-time ratio exceeds renderFloorRatioMax.
func TestRenderWithinYAMLFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("renders two generated repositories three times")
	}
	for _, sh := range renderShapes {
		t.Run(sh.name, func(t *testing.T) {
			fsys := repogen.Generate(sh.spec(200))
			inputs := benchutil.YAMLInputs(fsys)
			var cpu, wall []float64
			for range 3 {
				r := runShape(t, fsys, inputs)
				cpu, wall = append(cpu, r.cpu/r.floorCPU), append(wall, r.wall/r.floorWall)
			}
			c, w := benchutil.Median(cpu), benchutil.Median(wall)
			t.Logf("render/yaml-floor: CPU %.1f (%.1f–%.1f), wall %.1f (%.1f–%.1f)", c, slices.Min(cpu), slices.Max(cpu), w, slices.Min(wall), slices.Max(wall))
			if c > renderFloorRatioMax {
				t.Errorf("render takes %.1f times the YAML floor's CPU time, over %d", c, renderFloorRatioMax)
			}
		})
	}
}
