//go:build linux

package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/base/failpoint"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/state"
)

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go builds for).
const clockTicks = 100

// cpuTime is the CPU time (user and system) the process pid has spent.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may hold spaces: the fields
	// after it start at state (field 3); utime and stime are 14 and 15.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(u+s) * time.Second / clockTicks, nil
}

func shardEnvInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// BenchmarkShards measures the CPU time each `serve --shard` process spends
// on a commit that changes the release (every cluster's files change), for
// N = 1, 2 and 3 replicas on loopback over one etcd (the sub-benchmarks
// replicas=N): each run starts the processes on a generated repository and
// waits until each serves the first commit; then the release change is
// committed, and each process's CPU time (utime + stime of /proc/<pid>/stat)
// is read before it and once every replica serves the new set. The time of
// an operation is that wall time; the metrics cpu-s/replica (the median over
// the runs and replicas), max-cpu-s/replica, cpu-s/all (all the replicas
// together) and, for N > 1, of-one (the median against the single
// replica's). It logs each run and, at the end, the clusters each replica
// owns and the ratios against the single replica. make bench-shards runs it
// (SHARD_NODES, SHARD_CLUSTERS; SHARD_RUNS is -benchtime's count of runs).
//
// The N replicas share this machine's cores, as they would not in
// production: with N×GOMAXPROCS threads on fewer cores, each Go runtime's
// preemption and garbage collector spend CPU time that is contention, not
// work (runtime.asyncPreempt alone was 0.3 s per replica at N=2 and 0.5 s at
// N=3 in profiles, none at N=1). SHARD_GOMAXPROCS=1 gives every replica,
// the single one too, one thread of Go code: the same comparison with less
// of that contention.
func BenchmarkShards(b *testing.B) {
	nodes, clusters := shardEnvInt("SHARD_NODES", 2000), shardEnvInt("SHARD_CLUSTERS", 12)
	spec := repogen.Spec{Plugins: 8, Tasks: 600, Nodes: nodes, Clusters: clusters, Seed: 1}
	if os.Getenv("SHARD_SHAPE") == "heavy" {
		// The heavy shape's plugins and tasks (make bench-fleet's): a render
		// that costs what a real release's does, rather than the light
		// shape's, whose per-file work weighs as much as the render.
		spec = repogen.Heavy(nodes)
		spec.Clusters = clusters
	}
	// The logs go in the sub-benchmarks' (go test prints no log of a
	// benchmark that has sub-benchmarks, and the first 10 lines of the
	// others'): the repository in the first, a line of each N's runs, the
	// summary in the last.
	var results []*shardResult
	var one time.Duration // the single replica's median
	ns := []int{1, 2, 3}
	for _, n := range ns {
		res := &shardResult{n: n}
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			res.cpu, res.wall = nil, nil
			if n == ns[0] {
				b.Logf("repository: %d nodes in %d clusters, %d plugins, %d tasks; load before: %s", nodes, clusters, spec.Plugins, spec.Tasks, loadavg())
			}
			var runs []string
			for run := 1; b.Loop(); run++ {
				cpus, wall := shardRun(b, spec, n, run)
				res.cpu = append(res.cpu, cpus...)
				res.wall = append(res.wall, wall)
				runs = append(runs, fmt.Sprintf("%v in %s (load %s)", cpus, wall.Round(time.Millisecond), loadavg()))
			}
			if len(res.cpu) == 0 {
				return
			}
			b.Logf("N=%d: clusters owned: %s; CPU per replica, wall: %s", n, shardOwners(n, clusters), strings.Join(runs, "; "))
			if n == 1 {
				one = durationMedian(res.cpu)
			}
			res.report(b, one)
			results = append(results, res)
			if n == ns[len(ns)-1] && one > 0 {
				b.Log("\n" + shardSummary(results, nodes, clusters, one))
			}
		})
	}
}

// shardResult is what the runs of N replicas measured: each replica's CPU
// time, per run (runs × n), and each run's wall time.
type shardResult struct {
	n    int
	cpu  []time.Duration
	wall []time.Duration
}

// report reports r's metrics, against the single replica's median one when
// known (not 0).
func (r *shardResult) report(b *testing.B, one time.Duration) {
	runs := len(r.wall)
	if runs == 0 {
		return
	}
	var sum time.Duration
	for _, d := range r.cpu {
		sum += d
	}
	b.ReportMetric(durationMedian(r.cpu).Seconds(), "cpu-s/replica")
	b.ReportMetric(slices.Max(r.cpu).Seconds(), "max-cpu-s/replica")
	b.ReportMetric(sum.Seconds()/float64(runs), "cpu-s/all")
	if one > 0 && r.n > 1 {
		b.ReportMetric(float64(durationMedian(r.cpu))/float64(one), "of-one")
	}
}

// shardOwners says how many of the clusters each of n replicas owns.
// Clusters divide evenly only when n divides their number: the share of the
// clusters each replica owns is the floor of its part.
func shardOwners(n, clusters int) string {
	var ids, names []string
	for i := 1; i <= n; i++ {
		ids = append(ids, fmt.Sprintf("r%d", i))
	}
	for i := 1; i <= clusters; i++ {
		names = append(names, fmt.Sprintf("c-%02d", i))
	}
	owners := controller.Assign(names, ids)
	var shares []string
	for _, id := range ids {
		owned := 0
		for _, c := range names {
			if owners[c] == id {
				owned++
			}
		}
		shares = append(shares, fmt.Sprintf("%s %d/%d", id, owned, clusters))
	}
	return strings.Join(shares, ", ")
}

// shardSummary says, for each N measured, the CPU time per replica against
// one's (the single replica's median).
func shardSummary(results []*shardResult, nodes, clusters int, one time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CPU time per replica for a release change (%d nodes, %d clusters; median of the runs):\n", nodes, clusters)
	for _, r := range results {
		m, most := durationMedian(r.cpu), slices.Max(r.cpu)
		var sum time.Duration
		for _, d := range r.cpu {
			sum += d
		}
		fmt.Fprintf(&b, "  N=%d: per replica median %6s = %.2f of one replica's (1/N = %.2f), max %6s = %.2f; all replicas together %.2f; wall median %s\n",
			r.n, m.Round(10*time.Millisecond), float64(m)/float64(one), 1/float64(r.n), most.Round(10*time.Millisecond), float64(most)/float64(one),
			float64(sum)/float64(len(r.wall))/float64(one), durationMedian(r.wall).Round(10*time.Millisecond))
	}
	fmt.Fprintf(&b, "  load after: %s", loadavg())
	return b.String()
}

// loadavg is /proc/loadavg's first three fields.
func loadavg() string {
	data, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// shardRun starts n shard replicas on a fresh etcd and repository, waits
// until they serve the first commit, commits a release change, and returns
// each replica's CPU time from the commit until every replica serves it,
// and that wall time: b's timer runs only then.
func shardRun(t *testing.B, spec repogen.Spec, n, run int) ([]time.Duration, time.Duration) {
	t.Helper()
	t.StopTimer()
	defer t.StartTimer() // b.Loop wants it running
	c := etcdtest.Start(t, 1)
	url := c.URL(fmt.Sprintf("fuelsync/bench-%d-%d", n, run))
	dir := t.TempDir()
	if err := repogen.WriteDir(repogen.Generate(spec), dir); err != nil {
		t.Fatal(err)
	}
	head, err := gitCommit(dir, "generated")
	if err != nil {
		t.Fatal(err)
	}
	_, e := openEtcdState(t, url, 10*time.Second)
	ctx := context.Background()
	args := []string{"--state", url, "--etcd-lock-ttl", "10s", "--repo", dir}
	var reps []*serveReplica
	for i := 1; i <= n; i++ {
		r := &serveReplica{id: fmt.Sprintf("r%d", i), wd: filepath.Join(t.TempDir(), "wd"), args: args, shard: true}
		if dir := os.Getenv("SHARD_PROFILE"); dir != "" {
			r.env = append(r.env, failpoint.EnvVar+"="+failpoint.ServeShard+"=cpuprofile("+dir+")")
		}
		if p := os.Getenv("SHARD_GOMAXPROCS"); p != "" {
			r.env = append(r.env, "GOMAXPROCS="+p)
		}
		r.start(t)
		reps = append(reps, r)
	}
	defer func() {
		for _, r := range reps {
			r.kill()
		}
	}()
	// served waits until every cluster is synced at rev and every replica
	// serves the committed serial.
	served := func(rev string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Minute)
		for {
			st, err := e.ReadState(ctx)
			ok := err == nil && len(st.Clusters) == spec.Clusters
			if ok {
				for _, cs := range st.Clusters {
					ok = ok && cs.Revision == rev && cs.StatusOf() == state.StatusSynced
				}
			}
			for _, r := range reps {
				if !ok {
					break
				}
				rs, err := r.status()
				ok = err == nil && rs.Serving == st.Serial && len(rs.Members) == n
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("N=%d: not every replica serves %.12s after 10 minutes (%v)", n, rev, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	served(head.String())
	time.Sleep(3 * time.Second) // the replicas idle
	profile := os.Getenv("SHARD_PROFILE") != ""
	before := make([]time.Duration, n)
	for i, r := range reps {
		if profile {
			r.cmd.Process.Signal(syscall.SIGUSR1)
		}
		if before[i], err = cpuTime(r.cmd.Process.Pid); err != nil {
			t.Fatal(err)
		}
	}
	// The release change: a task every cluster's controllers run.
	name := filepath.Join(dir, "plugins", repogen.ReleasePlugin, "graphs", "01-netconfig.yaml")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(data), "timeout: ")
	if i < 0 {
		t.Fatalf("%s has no timeout", name)
	}
	j := i + strings.Index(string(data[i:]), "\n")
	data = append(append(append([]byte{}, data[:i]...), "timeout: 3601"...), data[j:]...)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.StartTimer()
	start := time.Now()
	h, err := gitCommit(dir, "release change")
	if err != nil {
		t.Fatal(err)
	}
	served(h.String())
	wall := time.Since(start)
	t.StopTimer()
	cpus := make([]time.Duration, n)
	for i, r := range reps {
		after, err := cpuTime(r.cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		cpus[i] = after - before[i]
		if profile {
			r.cmd.Process.Signal(syscall.SIGUSR2)
		}
	}
	for _, r := range reps {
		if !profile {
			break
		}
		prof := filepath.Join(os.Getenv("SHARD_PROFILE"), fmt.Sprintf("%d.prof", r.cmd.Process.Pid))
		deadline := time.Now().Add(30 * time.Second)
		for _, err := os.Stat(prof); err != nil; _, err = os.Stat(prof) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no complete profile %s 30 s after SIGUSR2", r.id, prof)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if os.Getenv("SHARD_DEBUG") != "" {
		for _, r := range reps {
			r.logMu.Lock()
			for _, l := range r.logs {
				if strings.Contains(l, "shard:") || strings.Contains(l, "reconcile") || strings.Contains(l, "render") || strings.Contains(l, "replica: serving") {
					t.Logf("%s: %.400s", r.id, l)
				}
			}
			r.logMu.Unlock()
		}
	}
	return cpus, wall
}
