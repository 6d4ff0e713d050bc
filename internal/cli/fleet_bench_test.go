//go:build linux

package cli

// BenchmarkCommandsFleet runs the commands of a reconciler on a fleet: the
// heavy shape of internal/repogen (repogen.Heavy's plugins and tasks) with
// FUELSYNC_FLEET_NODES nodes (default 20,000) in FUELSYNC_FLEET_CLUSTERS
// clusters (default 40: 500 nodes a cluster), each command a child process of
// the real CLI, as BenchmarkCommands runs them (make bench-fleet; never part of
// make test). Its git repository has four commits: the generated one (A), A
// with one compute node given the tag cinder (B), B with another (C), and C
// with a change to the release every cluster uses (D: the timeouts of one of
// its graph files).
//
//	validate        fuelsync --rev A validate
//	render          fuelsync --rev A render --out DIR
//	apply-cold      fuelsync --rev A apply, into an empty work directory
//	state-show      fuelsync state show
//	plan-nochange   fuelsync --rev A plan
//	plan-onenode    fuelsync --rev B plan
//	apply-onenode   fuelsync --rev B apply
//	diff-onenode    fuelsync diff --base A --head B
//	plan-release    fuelsync --rev D plan (every cluster renders again)
//	diff-release    fuelsync diff --base C --head D
//	apply-release   fuelsync --rev D apply
//
// FUELSYNC_FLEET_STEPS, a list of step names separated by commas, runs those
// only (apply-cold first for the steps that read its work directory; a plan
// or apply of D then compares with A, not B).
//
// For each step it reports the median wall time over the iterations
// (<step>-ms), the median CPU time of its process (<step>-cpu-ms: user and
// system, which other work on the machine disturbs less) and the largest peak resident set of its process
// (<step>-rss-MB, the child's VmHWM); and artifacts-MB, the render's output,
// workdir-MB, the work directory after the cold apply (every inode counted
// once, as du counts), and state-MB, its state.json. Set TMPDIR=/dev/shm (make
// bench-fleet does) to measure fuelsync rather than the disk.

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/benchutil"
	"github.com/fuelsync/fuelsync/internal/repogen"
)

var fleetSteps = []struct {
	name string
	args []string
	code int
}{
	{"validate", []string{"--rev", "A", "validate"}, 0},
	{"render", []string{"--rev", "A", "render", "--out", "OUT"}, 0},
	{"apply-cold", []string{"--rev", "A", "--workdir", "WORK", "--quiet", "apply", "--auto-approve"}, 0},
	{"state-show", []string{"--workdir", "WORK", "state", "show"}, 0},
	{"plan-nochange", []string{"--rev", "A", "--workdir", "WORK", "plan", "--detailed-exitcode"}, 0},
	{"plan-onenode", []string{"--rev", "B", "--workdir", "WORK", "plan", "--detailed-exitcode"}, 2},
	{"apply-onenode", []string{"--rev", "B", "--workdir", "WORK", "--quiet", "apply", "--auto-approve"}, 0},
	{"diff-onenode", []string{"diff", "--base", "A", "--head", "B"}, 1},
	{"plan-release", []string{"--rev", "D", "--workdir", "WORK", "plan", "--detailed-exitcode"}, 2},
	{"diff-release", []string{"diff", "--base", "C", "--head", "D"}, 1},
	{"apply-release", []string{"--rev", "D", "--workdir", "WORK", "--quiet", "apply", "--auto-approve"}, 0},
}

func BenchmarkCommandsFleet(b *testing.B) {
	nodes, clusters := envInt(b, "FUELSYNC_FLEET_NODES", 20000), envInt(b, "FUELSYNC_FLEET_CLUSTERS", 40)
	spec := repogen.Heavy(nodes)
	spec.Clusters = clusters
	repo := b.TempDir()
	revA, revB, revC, node, _ := commandsRepo(b, repo, spec)
	// D: C with the timeouts of one of the release's graph files changed.
	file := filepath.Join(repo, "plugins", repogen.ReleasePlugin, "graphs", "09-nova.yaml")
	src, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	changed := bytes.ReplaceAll(src, []byte("timeout: 120\n"), []byte("timeout: 121\n"))
	if bytes.Equal(changed, src) {
		b.Fatalf("%s has no timeout: 120", file)
	}
	if err := os.WriteFile(file, changed, 0o644); err != nil {
		b.Fatal(err)
	}
	hashD, err := gitCommit(repo, "release: timeouts")
	if err != nil {
		b.Fatal(err)
	}
	revD := hashD.String()
	b.Logf("%d nodes in %d clusters; B assigns tag cinder to %s; D changes the release", nodes, clusters, node)
	times, cpu := make([][]float64, len(fleetSteps)), make([][]float64, len(fleetSteps))
	rss := make([]int64, len(fleetSteps))
	var artifacts, workdir, stateSize []float64
	only := map[string]bool{}
	if v := os.Getenv("FUELSYNC_FLEET_STEPS"); v != "" {
		for _, s := range strings.Split(v, ",") {
			only[strings.TrimSpace(s)] = true
		}
	}
	for b.Loop() {
		iter := b.TempDir()
		for i, st := range fleetSteps {
			if len(only) > 0 && !only[st.name] {
				continue
			}
			args := []string{"--repo", repo, "--color", "never"}
			for _, a := range st.args {
				switch a {
				case "A":
					a = revA
				case "B":
					a = revB
				case "C":
					a = revC
				case "D":
					a = revD
				case "WORK":
					a = filepath.Join(iter, "work")
				case "OUT":
					a = filepath.Join(iter, "rendered")
				}
				args = append(args, a)
			}
			wall, maxRSS, used := runCommand(b, st.name, st.code, args)
			times[i], cpu[i] = append(times[i], float64(wall)), append(cpu[i], float64(used))
			rss[i] = max(rss[i], maxRSS)
			switch st.name {
			case "render":
				artifacts = append(artifacts, float64(diskUsage(b, filepath.Join(iter, "rendered"))))
				b.StopTimer()
				if err := os.RemoveAll(filepath.Join(iter, "rendered")); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			case "apply-cold":
				workdir = append(workdir, float64(diskUsage(b, filepath.Join(iter, "work"))))
				fi, err := os.Stat(filepath.Join(iter, "work", "state.json"))
				if err != nil {
					b.Fatal(err)
				}
				stateSize = append(stateSize, float64(fi.Size()))
			}
		}
		b.StopTimer()
		if err := os.RemoveAll(iter); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	for i, st := range fleetSteps {
		if len(times[i]) == 0 {
			continue
		}
		b.ReportMetric(benchutil.Median(times[i])/1e6, st.name+"-ms")
		b.ReportMetric(benchutil.Median(cpu[i])/1e6, st.name+"-cpu-ms")
		b.ReportMetric(float64(rss[i])/(1<<20), st.name+"-rss-MB")
	}
	b.ReportMetric(benchutil.Median(artifacts)/1e6, "artifacts-MB")
	b.ReportMetric(benchutil.Median(workdir)/1e6, "workdir-MB")
	b.ReportMetric(benchutil.Median(stateSize)/1e6, "state-MB")
}

// envInt is the integer in the environment variable name, or def when unset.
func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
