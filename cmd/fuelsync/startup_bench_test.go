package main

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
//	go test ./cmd/fuelsync -run '^$' -bench StartupVersion -benchtime 200x
//
// It reports the median (median-ms) besides the mean (ns/op).
func BenchmarkStartupVersion(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "fuelsync")
	build := exec.Command("go", "build", "-tags", buildTags, "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	if err := exec.Command(bin, "version").Run(); err != nil { // warm the page cache
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
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
}

// buildTags are the Makefile's TAGS.
const buildTags = "urfave_cli_no_docs"
