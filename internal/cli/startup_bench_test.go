package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
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
// nothing, three times (floor-ms: fork, exec and the Go runtime). check-ms less
// version-ms is the checking itself; version-ms less floor-ms is what
// fuelsync's size and package initialisations add (GODEBUG=inittrace=1 lists
// them). fuel-plugin-builder is timed the same way where it is installed
// (FUELSYNC_FPB=path/to/fpb): fpb-ms and the ratio fpb-ms / check-ms.
func BenchmarkStartupPluginCheck(b *testing.B) {
	dir := b.TempDir()
	bin, _ := buildBinaries(b, dir)
	hello := filepath.Join(dir, "hello")
	if err := os.WriteFile(filepath.Join(dir, "hello.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	helloBuild := exec.Command("go", "build", "-o", hello, filepath.Join(dir, "hello.go"))
	helloBuild.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := helloBuild.CombinedOutput(); err != nil {
		b.Fatalf("go build hello: %v\n%s", err, out)
	}
	var plugins []string
	for _, p := range []string{"contrail", "detach-database", "lma_collector"} {
		abs, err := filepath.Abs(filepath.Join("..", "..", "examples", "fuel-mitaka", "plugins", p))
		if err != nil {
			b.Fatal(err)
		}
		plugins = append(plugins, abs)
	}
	fpb := os.Getenv("FUELSYNC_FPB")
	runAll := func(cmds [][]string) time.Duration {
		start := time.Now()
		for _, c := range cmds {
			if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				b.Fatalf("%v: %v\n%s", c, err, out)
			}
		}
		return time.Since(start)
	}
	var check, version, floor, fpbCmds [][]string
	for _, p := range plugins {
		check = append(check, []string{bin, "plugin", "check", "-q", p})
		version = append(version, []string{bin, "version"})
		floor = append(floor, []string{hello})
		if fpb != "" {
			fpbCmds = append(fpbCmds, []string{fpb, "--check", p})
		}
	}
	runAll(check) // the page cache
	var tc, tv, tf, tp []time.Duration
	b.ResetTimer()
	for range b.N {
		tc = append(tc, runAll(check))
		tv = append(tv, runAll(version))
		tf = append(tf, runAll(floor))
		if fpb != "" {
			tp = append(tp, runAll(fpbCmds))
		}
	}
	b.StopTimer()
	c := median(tc)
	b.ReportMetric(c, "check-ms")
	b.ReportMetric(median(tv), "version-ms")
	b.ReportMetric(median(tf), "floor-ms")
	if fpb != "" {
		p := median(tp)
		b.ReportMetric(p, "fpb-ms")
		b.ReportMetric(p/c, "fpb/check")
	}
}
