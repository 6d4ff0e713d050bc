//go:build linux

package server

import (
	"context"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/runs"
	"github.com/fuelsync/fuelsync/state"
)

// BenchmarkDeploy (make bench-deploy): serve's coordinator and its HTTP
// API in this process, simulated agents in another (one goroutine a node,
// over real HTTP on loopback, each task taking 0 to 50 ms (DEPLOY_TASK_MS), a fixed function
// of its node and id), on a generated repository of DEPLOY_NODES nodes
// (default 2,000) in DEPLOY_CLUSTERS clusters (default 1), every cluster
// deployed at once, nothing limiting concurrency (max nodes above the nodes,
// no strategy). It reports the time from a task becoming runnable (its
// requirements met and its node idle) to its dispatch (median, p99), the
// tasks dispatched a second, this process's CPU and peak RSS over the runs,
// and each run's wall time against its ideal: the longest of its dependency
// chain and its busiest node's work, at the tasks' durations.
func BenchmarkDeploy(b *testing.B) {
	nodes, clusters := envInt("DEPLOY_NODES", 2000), envInt("DEPLOY_CLUSTERS", 1)
	set := benchSet(b, nodes, clusters)
	for range b.N {
		benchDeployOnce(b, set, nodes)
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// benchSet renders the generated repository into a directory (kept in
// $TMPDIR between runs, keyed by its shape), in a child process, so that
// this process's peak RSS is the deployment's.
func benchSet(b *testing.B, nodes, clusters int) string {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("fuelsync-bench-deploy-%d-%d", nodes, clusters))
	if _, err := os.Stat(filepath.Join(dir, "manifest.json")); err == nil {
		return dir
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestBenchDeployRender$")
	cmd.Env = append(os.Environ(), "FUELSYNC_BENCH_RENDER="+dir, fmt.Sprintf("DEPLOY_NODES=%d", nodes), fmt.Sprintf("DEPLOY_CLUSTERS=%d", clusters))
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("rendering the benchmark's repository: %v\n%s", err, out)
	}
	return dir
}

// deploySpec is the generated shape: about 125 tasks a node, 30% of the
// puppet tasks with cross-node dependencies, every task before two stages.
func deploySpec(nodes, clusters int) repogen.Spec {
	return repogen.Spec{Plugins: 6, Tasks: 600, Nodes: nodes, Clusters: clusters, Seed: 1, CrossDepends: 30, StageFanIn: true}
}

// TestBenchDeployRender is BenchmarkDeploy's child that renders the set.
func TestBenchDeployRender(t *testing.T) {
	dir := os.Getenv("FUELSYNC_BENCH_RENDER")
	if dir == "" {
		t.Skip("a child of BenchmarkDeploy")
	}
	repo, diags := loader.Load(repogen.Generate(deploySpec(envInt("DEPLOY_NODES", 2000), envInt("DEPLOY_CLUSTERS", 1))), loader.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rs, diags := render.Render(repo, render.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	err := render.Stream(rs, "bench", "bench", func(name string, data []byte) error {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, data, 0o644)
	})
	if err == nil {
		err = os.Rename(tmp, dir)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// taskDuration is a simulated task's duration: 0 to DEPLOY_TASK_MS (default
// 50) ms, from its node and id.
func taskDuration(node, task string) time.Duration {
	h := fnv.New32a()
	h.Write([]byte(node + "\x00" + task))
	return time.Duration(h.Sum32()%uint32(maxTaskMS+1)) * time.Millisecond
}

var maxTaskMS = envInt("DEPLOY_TASK_MS", 50)

// TestBenchDeployAgents is BenchmarkDeploy's child that simulates the
// agents: FUELSYNC_BENCH_AGENTS is serve's URL, then the clusters and their
// nodes ("c1=n1,n2;c2=...").
func TestBenchDeployAgents(t *testing.T) {
	spec := os.Getenv("FUELSYNC_BENCH_AGENTS")
	if spec == "" {
		t.Skip("a child of BenchmarkDeploy")
	}
	base, rest, _ := strings.Cut(spec, " ")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{MaxIdleConns: 0, MaxIdleConnsPerHost: 100000, MaxConnsPerHost: 0, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for _, c := range strings.Split(rest, ";") {
		cluster, list, _ := strings.Cut(c, "=")
		for _, node := range strings.Split(list, ",") {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cl := &api.Client{Base: u, Token: reports.Token([]byte("bench"), cluster, node), HTTP: hc}
				var a *api.Assignment
				for {
					if a == nil {
						var err error
						if a, err = cl.NextTask(context.Background(), cluster, node, 30*time.Second); err != nil {
							time.Sleep(100 * time.Millisecond)
						}
						if a == nil {
							continue
						}
					}
					start := time.Now()
					time.Sleep(taskDuration(node, a.Task.ID))
					end := time.Now()
					for {
						ans, err := cl.ReportTask(context.Background(), cluster, node, a.Run, &api.TaskReport{Task: a.Task.ID, Attempt: a.Attempt,
							Status: api.TaskSucceeded, StartedAt: &start, FinishedAt: &end, Next: true})
						if err == nil {
							a = ans.Next
							break
						}
						time.Sleep(100 * time.Millisecond)
					}
				}
			}()
		}
	}
	wg.Wait()
}

// benchDeployOnce deploys every cluster of the set at once and reports.
func benchDeployOnce(b *testing.B, dir string, nodes int) {
	b.StopTimer()
	wd := b.TempDir()
	if err := os.WriteFile(filepath.Join(wd, state.MarkerName), []byte("fuelsync work directory, format 1\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	store := &runs.Workdir{Dir: wd}
	ended := make(chan *runs.Header, 64)
	coord := &runs.Coordinator{Store: store, MaxNodes: nodes + 100, OnEnd: func(h *runs.Header, _ *runs.Summary) { ended <- h }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := coord.Resume(ctx); err != nil {
		b.Fatal(err)
	}
	srv := New(&controller.Loop{}, nil)
	srv.AgentSecret, srv.Runs, srv.MaxWait, srv.MaxWaiting = []byte("bench"), coord, time.Minute, 2*nodes+100
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	set := os.DirFS(dir)
	clusters := clustersOf(b, set)
	var agents []string
	for _, c := range clusters {
		var names []string
		ents, _ := fs.ReadDir(set, c+"/nodes")
		for _, e := range ents {
			if e.Name() != render.SyncNode {
				names = append(names, e.Name())
			}
		}
		agents = append(agents, c+"="+strings.Join(names, ","))
	}
	child := exec.Command(os.Args[0], "-test.run", "^TestBenchDeployAgents$", "-test.timeout", "0")
	child.Env = append(os.Environ(), "FUELSYNC_BENCH_AGENTS="+ts.URL+" "+strings.Join(agents, ";"))
	if err := child.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { child.Process.Kill(); child.Wait() }()
	cpu0 := cpuTime()
	b.StartTimer()
	start := time.Now()
	var headers []*runs.Header
	for _, c := range clusters {
		h, err := coord.Start(ctx, runs.StartRequest{Cluster: c, Graph: "default", Set: set, Trigger: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		headers = append(headers, h)
	}
	for range clusters {
		<-ended
	}
	wall := time.Since(start)
	b.StopTimer()
	cpu := cpuTime() - cpu0
	report(b, store, headers, wall, cpu)
}

func clustersOf(b *testing.B, set fs.FS) []string {
	ents, err := fs.ReadDir(set, ".")
	if err != nil {
		b.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// cpuTime is this process's user and system time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS is this process's peak resident set, in bytes.
func peakRSS() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss * 1024
}

// report reads each run back and reports the dispatch latencies, the rate,
// the CPU and memory, and the wall time against the ideal.
func report(b *testing.B, store *runs.Workdir, headers []*runs.Header, wall, cpu time.Duration) {
	var lat []int64
	var tasks int
	var ideal time.Duration
	for _, h := range headers {
		rec, err := store.Read(context.Background(), h.Cluster, h.ID)
		if err != nil {
			b.Fatal(err)
		}
		g, err := runs.GraphOf(rec.Snapshot, h.Cluster, h.Graph)
		if err != nil {
			b.Fatal(err)
		}
		s, err := runs.Replay(rec, g)
		if err != nil {
			b.Fatal(err)
		}
		l, n := latencies(g, s)
		lat, tasks = append(lat, l...), tasks+n
		ideal = max(ideal, idealTime(g))
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		if len(lat) == 0 {
			return 0
		}
		return float64(lat[int(math.Min(float64(len(lat)-1), p*float64(len(lat))))])
	}
	b.ReportMetric(pct(0.5), "dispatch-p50-ms")
	b.ReportMetric(pct(0.99), "dispatch-p99-ms")
	b.ReportMetric(float64(tasks)/wall.Seconds(), "tasks/s")
	b.ReportMetric(cpu.Seconds(), "cpu-s")
	b.ReportMetric(float64(peakRSS())/(1<<20), "peak-rss-MB")
	b.ReportMetric(wall.Seconds(), "wall-s")
	b.ReportMetric(ideal.Seconds(), "ideal-s")
	b.ReportMetric(wall.Seconds()/ideal.Seconds(), "wall/ideal")
}

// latencies are the dispatch latencies of a run's dispatched tasks, in ms:
// from when the task was runnable (its requirements met, its node idle) to
// its start.
func latencies(g *runs.Graph, s *runs.State) ([]int64, int) {
	var out []int64
	n := 0
	for _, node := range g.Nodes {
		var prevEnd int64
		var ts []runs.TaskView
		for t := node.First; t < node.End; t++ {
			if v := s.Task(t); v.Attempt > 0 {
				ts = append(ts, v)
			}
		}
		slices.SortFunc(ts, func(a, b runs.TaskView) int { return int(a.Start - b.Start) })
		for _, v := range ts {
			out = append(out, v.Start-max(v.Ready, prevEnd))
			prevEnd = v.End
			n++
		}
	}
	return out, n
}

// idealTime is the longest of a graph's dependency chain and its busiest
// node's work, at the simulated durations.
func idealTime(g *runs.Graph) time.Duration {
	n := len(g.Tasks)
	indeg := make([]int, n)
	var order []int32
	for t := range n {
		if indeg[t] = len(g.Requires(int32(t))); indeg[t] == 0 {
			order = append(order, int32(t))
		}
	}
	for i := 0; i < len(order); i++ {
		for _, d := range g.Dependents(order[i]) {
			if indeg[d]--; indeg[d] == 0 {
				order = append(order, d)
			}
		}
	}
	finish := make([]time.Duration, n)
	work := make([]time.Duration, len(g.Nodes))
	var chain, busiest time.Duration
	for _, t := range order {
		var ready time.Duration
		for _, r := range g.Requires(t) {
			ready = max(ready, finish[r])
		}
		tk := g.Tasks[t]
		var d time.Duration
		if !tk.Noop {
			d = taskDuration(g.Nodes[tk.Node].Name, tk.ID)
			work[tk.Node] += d
		}
		finish[t] = ready + d
		chain = max(chain, finish[t])
	}
	for _, w := range work {
		busiest = max(busiest, w)
	}
	return max(chain, busiest)
}
