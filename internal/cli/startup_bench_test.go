package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// BenchmarkStartupVersion builds fuelsync as make build does and measures the
// wall time of `fuelsync version`, what shell completion pays on every Tab:
//
//	go test ./internal/cli -run '^$' -bench StartupVersion -benchtime 500x
//
// It reports the median (median-ms) besides the mean (ns/op), and, for the
// record, the median of fuelsync-server (server-median-ms), which links the
// etcd and Prometheus clients besides.
func BenchmarkStartupVersion(b *testing.B) {
	dir := b.TempDir()
	bin, server := buildBinaries(b, dir)
	if err := exec.Command(server, "version").Run(); err != nil { // warm the page cache
		b.Fatal(err)
	}
	serverTimes := make([]time.Duration, 0, b.N)
	for range b.N {
		start := time.Now()
		if err := exec.Command(server, "version").Run(); err != nil {
			b.Fatal(err)
		}
		serverTimes = append(serverTimes, time.Since(start))
	}
	if err := exec.Command(bin, "version").Run(); err != nil {
		b.Fatal(err)
	}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := exec.Command(bin, "version").Run(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	b.ReportMetric(median(times), "median-ms")
	b.ReportMetric(median(serverTimes), "server-median-ms")
}

// median is the median of times in milliseconds.
func median(times []time.Duration) float64 {
	return float64(durationMedian(times).Microseconds()) / 1000
}

// durationMedian is the median of ds (left as they are).
func durationMedian(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// buildBinaries builds fuelsync and fuelsync-server into dir as make build
// does, and returns their paths.
func buildBinaries(tb testing.TB, dir string) (bin, server string) {
	tb.Helper()
	bin, server = filepath.Join(dir, "fuelsync"), filepath.Join(dir, ServerBinary)
	for out, pkg := range map[string]string{bin: "../../cmd/fuelsync", server: "../../cmd/fuelsync-server"} {
		build := exec.Command("go", "build", "-tags", buildTags, "-o", out, pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if msg, err := build.CombinedOutput(); err != nil {
			tb.Fatalf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	return bin, server
}

// buildTags are the Makefile's TAGS (and its build sets CGO_ENABLED=0).
const buildTags = "urfave_cli_no_docs"

// BenchmarkStartupPluginCheck measures `fuelsync plugin check` on three real
// plugins (examples/fuel-mitaka: contrail, detach-database, lma_collector), the
// command compared with fuel-plugin-builder's --check, and splits its time:
//
//	go test ./internal/cli -run '^$' -bench StartupPluginCheck -benchtime 300x
//
// Every round runs each command once, interleaved, so that the machine's load
// weighs on all alike. It reports the median wall time of the three checks
// together (check-ms), of fuelsync version three times (version-ms: the
// start-up every command pays, and little else), and of a Go program that does
// nothing, three times (floor-ms: fork, exec and the Go runtime), and the
// median CPU time (user and system) of the three checks (check-cpu-ms).
// check-ms less version-ms is the checking itself; version-ms less floor-ms is
// what fuelsync's size and package initialisations add (GODEBUG=inittrace=1
// lists them). fuel-plugin-builder is timed the same way where it is installed
// (FUELSYNC_FPB: its command, e.g. path/to/fpb, split at spaces): fpb-ms,
// fpb-cpu-ms and the ratios fpb/check (wall) and fpb/check-cpu. Both check
// copies of the plugins (pluginCopies), which fuel-plugin-builder passes.
func BenchmarkStartupPluginCheck(b *testing.B) {
	dir := b.TempDir()
	bin, _ := buildBinaries(b, dir)
	hello := buildHello(b, dir)
	plugins := pluginCopies(b, filepath.Join(dir, "plugins"), "contrail", "detach-database", "lma_collector")
	fpb := strings.Fields(os.Getenv("FUELSYNC_FPB"))
	var check, version, floor, fpbCmds [][]string
	for _, p := range plugins {
		check = append(check, []string{bin, "plugin", "check", "-q", p})
		version = append(version, []string{bin, "version"})
		floor = append(floor, []string{hello})
		if len(fpb) > 0 {
			fpbCmds = append(fpbCmds, append(slices.Clone(fpb), "--check", p))
		}
	}
	runAll(b, check) // the page cache
	runAll(b, fpbCmds)
	var tc, cc, tv, tf, tp, cp []time.Duration
	b.ResetTimer()
	for range b.N {
		wall, cpu := runAll(b, check)
		tc, cc = append(tc, wall), append(cc, cpu)
		wall, _ = runAll(b, version)
		tv = append(tv, wall)
		wall, _ = runAll(b, floor)
		tf = append(tf, wall)
		if len(fpb) > 0 {
			wall, cpu = runAll(b, fpbCmds)
			tp, cp = append(tp, wall), append(cp, cpu)
		}
	}
	b.StopTimer()
	b.ReportMetric(median(tc), "check-ms")
	b.ReportMetric(median(cc), "check-cpu-ms")
	b.ReportMetric(median(tv), "version-ms")
	b.ReportMetric(median(tf), "floor-ms")
	if len(fpb) > 0 {
		b.ReportMetric(median(tp), "fpb-ms")
		b.ReportMetric(median(cp), "fpb-cpu-ms")
		b.ReportMetric(median(tp)/median(tc), "fpb/check")
		b.ReportMetric(median(cp)/median(cc), "fpb/check-cpu")
	}
}

// runAll runs the commands one after the other; each must succeed (fpb
// --check exits non-zero when a plugin is invalid). It returns their wall time
// and the CPU time (user and system) of their processes.
func runAll(b *testing.B, cmds [][]string) (wall, cpu time.Duration) {
	start := time.Now()
	for _, c := range cmds {
		cmd := exec.Command(c[0], c[1:]...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %v\n%s", c, err, out)
		}
		cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return time.Since(start), cpu
}

// buildHello builds a Go program that does nothing into dir.
func buildHello(b *testing.B, dir string) string {
	hello := filepath.Join(dir, "hello")
	if err := os.WriteFile(filepath.Join(dir, "hello.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", hello, filepath.Join(dir, "hello.go"))
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}
	return hello
}

// pluginCopies copies the named plugins of examples/fuel-mitaka into dir and
// returns the copies' paths. The examples hold a plugin's YAML files only;
// fuel-plugin-builder also wants the directories each release of
// metadata.yaml names (deployment_scripts_path, repository_path: "Cannot find
// directories ..."), so each copy has them, empty. fuelsync does not look at
// them: both tools check the same copies.
func pluginCopies(b *testing.B, dir string, names ...string) []string {
	var out []string
	for _, name := range names {
		src := filepath.Join("..", "..", "examples", "fuel-mitaka", "plugins", name)
		dst := filepath.Join(dir, name)
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			b.Fatal(err)
		}
		for _, d := range releaseDirs(b, filepath.Join(src, "metadata.yaml")) {
			if err := os.MkdirAll(filepath.Join(dst, d), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		out = append(out, dst)
	}
	return out
}

// releaseDirs are the directories the releases of a plugin's metadata.yaml
// name (local paths only).
func releaseDirs(b *testing.B, metadata string) []string {
	data, err := os.ReadFile(metadata)
	if err != nil {
		b.Fatal(err)
	}
	var meta struct {
		Releases []struct {
			Scripts string `yaml:"deployment_scripts_path"`
			Repo    string `yaml:"repository_path"`
		}
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		b.Fatal(err)
	}
	var dirs []string
	for _, r := range meta.Releases {
		for _, d := range []string{r.Scripts, r.Repo} {
			if d != "" && filepath.IsLocal(d) {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}
