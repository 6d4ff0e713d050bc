package cli

import (
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

func median(times []time.Duration) float64 {
	slices.Sort(times)
	return float64(times[len(times)/2].Microseconds()) / 1000
}

// buildBinaries builds fuelsync and fuelsync-server into dir as make build
// does, and returns their paths.
func buildBinaries(tb testing.TB, dir string) (bin, server string) {
	tb.Helper()
	bin, server = filepath.Join(dir, "fuelsync"), filepath.Join(dir, ServerBinary)
	for out, pkg := range map[string]string{bin: "../../cmd/fuelsync", server: "../../cmd/fuelsync-server"} {
		build := exec.Command("go", "build", "-tags", buildTags, "-o", out, pkg)
		if msg, err := build.CombinedOutput(); err != nil {
			tb.Fatalf("go build %s: %v\n%s", pkg, err, msg)
		}
	}
	return bin, server
}

// buildTags are the Makefile's TAGS.
const buildTags = "urfave_cli_no_docs"
