//go:build linux

package cli

// Benchmarks of the commands a reconciler runs, on the heavy shape of
// internal/repogen (repogen.Heavy: four clusters, heavy cross-node dependencies,
// stage fan-in), each command run as a child process of the real CLI (this test
// binary with FUELSYNC_RUN_MAIN=1) against a git repository of two commits: the
// generated one (A), and A with one tag assigned to one compute node (B).
//
//	validate      fuelsync --rev A validate
//	render        fuelsync --rev A render --out DIR
//	render-tmpfs  the same, DIR on /dev/shm (skipped where that is not a writable
//	              tmpfs): the command's own cost, without the disk's file system
//	apply-cold    fuelsync --rev A apply, into an empty work directory
//	plan-nochange fuelsync --rev A plan (the state is A's: nothing changes)
//	plan-onenode  fuelsync --rev B plan (one node gains a tag)
//	apply-onenode fuelsync --rev B apply (plans, then applies)
//	diff-onenode  fuelsync diff --base A --head B (the pull-request check, with
//	              the unified diff of every artifact that differs)
//	apply-disk    fuelsync --rev C apply, C being B with the same tag assigned to the
//	              last compute-only node of that cluster, which changes that node's
//	              graphs alone (it is not the first node of the tag)
//
// apply-disk also reports the disk of the work directory after the cold apply
// (workdir-MB: every inode under it counted once, as du counts) and what the
// apply of C added to it (disk-added-MB, and disk-added/workdir): with keep = 5,
// nothing is pruned by then, so that is what one more applied set costs.
//
// Each iteration runs the steps in this order with a new work directory. For each,
// the benchmark reports the median wall time over the iterations (<step>-ms), the
// median CPU time of its process (<step>-cpu-ms, user and system), the
// largest peak resident set of its process (<step>-rss-MB: the child's VmHWM,
// from getrusage), and the median time over render's (<step>/render). Right
// after each render, the benchmark times yaml.v3 decoding the input's YAML (the
// same bytes, from memory, on every core, as the loader's BenchmarkDecodeYAMLBaseline
// does): yaml-floor-ms, and render/yaml-floor, the median of the ratios of
// each pair.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/internal/benchutil"
	"github.com/fuelsync/fuelsync/internal/repogen"
)

// BenchmarkCommands runs the commands on the heavy shape at 200 nodes (50 a
// cluster): small enough for make bench.
func BenchmarkCommands(b *testing.B) {
	benchCommands(b, repogen.Heavy(200))
}

// BenchmarkCommandsLarge runs them at 2,000 and 8,000 nodes (500 and 2,000 a
// cluster): make bench-large. Run one size with -bench 'CommandsLarge/nodes=2000$'.
func BenchmarkCommandsLarge(b *testing.B) {
	for _, nodes := range []int{2000, 8000} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			benchCommands(b, repogen.Heavy(nodes))
		})
	}
}

// commandSteps are the commands of an iteration: name, arguments (WORK is the
// iteration's work directory, OUT its render directory, A and B the commits), and
// the exit code each must end with.
var commandSteps = []struct {
	name string
	args []string
	code int
}{
	{"validate", []string{"--rev", "A", "validate"}, 0},
	{"render", []string{"--rev", "A", "render", "--out", "OUT"}, 0},
	{"render-tmpfs", []string{"--rev", "A", "render", "--out", "SHM"}, 0},
	{"apply-cold", []string{"--rev", "A", "--workdir", "WORK", "--quiet", "apply", "--auto-approve"}, 0},
	{"plan-nochange", []string{"--rev", "A", "--workdir", "WORK", "plan", "--detailed-exitcode"}, 0},
	{"plan-onenode", []string{"--rev", "B", "--workdir", "WORK", "plan", "--detailed-exitcode"}, 2},
	{"apply-onenode", []string{"--rev", "B", "--workdir", "WORK", "--quiet", "apply", "--auto-approve"}, 0},
	{"diff-onenode", []string{"diff", "--base", "A", "--head", "B"}, 1},
	{"apply-disk", []string{"--rev", "C", "--workdir", "WORK", "--quiet", "apply", "--auto-approve"}, 0},
}

func benchCommands(b *testing.B, spec repogen.Spec) {
	repo := b.TempDir()
	revA, revB, revC, node, last := commandsRepo(b, repo, spec)
	input := yamlInput(spec)
	var floor, overFloor []float64
	b.Logf("%d nodes in %d clusters; B assigns tag cinder to %s, C to %s too", spec.Nodes, spec.Clusters, node, last)
	times, cpu := make([][]float64, len(commandSteps)), make([][]float64, len(commandSteps))
	rss := make([]int64, len(commandSteps))
	var workdirDisk, added []float64
	shm := tmpfsDir(b)
	for b.Loop() {
		iter := b.TempDir()
		for i, st := range commandSteps {
			if st.name == "render-tmpfs" && shm == "" {
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
				case "WORK":
					a = filepath.Join(iter, "work")
				case "OUT":
					a = filepath.Join(iter, "rendered")
				case "SHM":
					a = filepath.Join(shm, "rendered")
				}
				args = append(args, a)
			}
			var before int64
			if st.name == "apply-disk" {
				before = diskUsage(b, filepath.Join(iter, "work"))
			}
			wall, maxRSS, used := runCommand(b, st.name, st.code, args)
			times[i], cpu[i] = append(times[i], float64(wall)), append(cpu[i], float64(used))
			rss[i] = max(rss[i], maxRSS)
			switch st.name {
			case "render":
				// The floor, right after the render it is compared with.
				f := yamlFloor(b, input)
				floor, overFloor = append(floor, float64(f)), append(overFloor, float64(wall)/float64(f))
			case "apply-cold":
				workdirDisk = append(workdirDisk, float64(diskUsage(b, filepath.Join(iter, "work"))))
			case "apply-disk":
				added = append(added, float64(diskUsage(b, filepath.Join(iter, "work"))-before))
			}
		}
		b.StopTimer()
		if shm != "" {
			if err := os.RemoveAll(filepath.Join(shm, "rendered")); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.RemoveAll(iter); err != nil { // gigabytes of artifacts at 8,000 nodes
			b.Fatal(err)
		}
		b.StartTimer()
	}
	render := benchutil.Median(times[1])
	for i, st := range commandSteps {
		if len(times[i]) == 0 {
			continue
		}
		med := benchutil.Median(times[i])
		b.ReportMetric(med/1e6, st.name+"-ms")
		b.ReportMetric(benchutil.Median(cpu[i])/1e6, st.name+"-cpu-ms")
		b.ReportMetric(float64(rss[i])/(1<<20), st.name+"-rss-MB")
		if i != 1 {
			b.ReportMetric(med/render, st.name+"/render")
		}
	}
	b.ReportMetric(benchutil.Median(floor)/1e6, "yaml-floor-ms")
	b.ReportMetric(benchutil.Median(overFloor), "render/yaml-floor")
	b.ReportMetric(benchutil.Median(workdirDisk)/1e6, "workdir-MB")
	b.ReportMetric(benchutil.Median(added)/1e6, "disk-added-MB")
	b.ReportMetric(benchutil.Median(added)/benchutil.Median(workdirDisk), "disk-added/workdir")
}

// yamlInput is the YAML of the repository spec generates (its .yaml files; the
// HCL cluster files are not YAML).
func yamlInput(spec repogen.Spec) [][]byte {
	var files [][]byte
	for name, f := range repogen.Generate(spec) {
		if strings.HasSuffix(name, ".yaml") {
			files = append(files, f.Data)
		}
	}
	return files
}

// yamlFloor is the time yaml.v3 takes to decode files into nodes (its node
// API, as the loader uses it), on every core: what reading the input costs
// at the least.
func yamlFloor(b *testing.B, files [][]byte) time.Duration {
	b.Helper()
	runtime.GC()
	t0 := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, runtime.GOMAXPROCS(0))
	for w := range errs {
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
	d := time.Since(t0)
	if err := errors.Join(errs...); err != nil {
		b.Fatal(err)
	}
	return d
}

// tmpfsDir returns a new directory on /dev/shm, removed at the end of the
// benchmark, or "" when /dev/shm is not a writable tmpfs.
func tmpfsDir(b *testing.B) string {
	var st syscall.Statfs_t
	const tmpfsMagic = 0x01021994
	if err := syscall.Statfs("/dev/shm", &st); err != nil || st.Type != tmpfsMagic {
		return ""
	}
	dir, err := os.MkdirTemp("/dev/shm", "fuelsync-bench-")
	if err != nil {
		return ""
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// diskUsage is the disk the tree under dir takes: the blocks of every inode in it
// (files, directories, symbolic links, not followed), each inode counted once.
func diskUsage(b *testing.B, dir string) int64 {
	b.Helper()
	seen := map[uint64]bool{}
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || seen[st.Ino] {
			return nil
		}
		seen[st.Ino] = true
		total += st.Blocks * 512
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}

// runCommand runs the CLI in a child process and returns its wall time, peak
// resident set (bytes) and CPU time (user and system, which other work on the
// machine disturbs less than wall time); the exit code must be code.
func runCommand(b *testing.B, name string, code int, args []string) (time.Duration, int64, time.Duration) {
	b.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "FUELSYNC_RUN_MAIN=1")
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if got := cmd.ProcessState.ExitCode(); got != code {
		b.Fatalf("%s: fuelsync %s: exit code %d, want %d (%v)\n%s", name, strings.Join(args, " "), got, code, err, stderr.String())
	}
	var maxRSS int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		maxRSS = ru.Maxrss << 10 // kilobytes on Linux
	}
	return wall, maxRSS, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// commandsRepo writes the generated repository of spec to dir and commits it
// (A), then assigns the release tag cinder to the first compute-only node of the
// first YAML cluster and commits that (B), then to the last one too (C).
func commandsRepo(b *testing.B, dir string, spec repogen.Spec) (revA, revB, revC, node, last string) {
	b.Helper()
	if err := repogen.WriteDir(repogen.Generate(spec), dir); err != nil {
		b.Fatal(err)
	}
	a, err := gitCommit(dir, "generated")
	if err != nil {
		b.Fatal(err)
	}
	file := filepath.Join(dir, filepath.FromSlash(repogen.ClusterFile(1)))
	src, err := os.ReadFile(file)
	if err != nil {
		b.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^  (node-\d+):\n    id: \d+\n    roles: \[compute\]\n`)
	var at []int
	var nodes []string
	for _, m := range re.FindAllSubmatchIndex(src, -1) {
		if !strings.HasPrefix(string(src[m[1]:]), "    tags:") {
			nodes, at = append(nodes, string(src[m[2]:m[3]])), append(at, m[1])
		}
	}
	if len(nodes) < 2 {
		b.Fatalf("%s has fewer than two compute-only nodes without tags", file)
	}
	assign := func(src []byte, at int) []byte {
		return append(append(append([]byte{}, src[:at]...), "    tags: {assign: [cinder]}\n"...), src[at:]...)
	}
	commit := func(data []byte, msg string) string {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			b.Fatal(err)
		}
		h, err := gitCommit(dir, msg)
		if err != nil {
			b.Fatal(err)
		}
		return h.String()
	}
	withB := assign(src, at[0])
	revB = commit(withB, nodes[0]+" cinder")
	// The last node's insertion point moved by the length of B's line.
	revC = commit(assign(withB, at[len(at)-1]+len(withB)-len(src)), nodes[len(nodes)-1]+" cinder")
	return a.String(), revB, revC, nodes[0], nodes[len(nodes)-1]
}
