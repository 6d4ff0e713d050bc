// Package benchutil holds what the benchmarks and the memory tests of several
// packages share: medians, the process's CPU time and the peak heap of a call.
package benchutil

import (
	"bytes"
	"os"
	"path"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing/fstest"
	"time"
)

// Median returns the median of xs (0 for none).
func Median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// ProcessCPU returns the CPU time (user + system, all threads) this process has
// used, from /proc/self/stat; ok is false where that file does not exist.
func ProcessCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the command name (in parentheses, may hold spaces): utime and
	// stime are fields 14 and 15 of the line, in clock ticks.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	const ticksPerSecond = 100 // USER_HZ, fixed at 100 in the Linux ABI
	return time.Duration(ut+st) * time.Second / ticksPerSecond, true
}

// YAMLInputs is the YAML (and JSON) of fsys in the order of their names:
// every file the loader decodes with yaml.v3 (HCL files aside), the input a
// benchmark's decode floor decodes.
func YAMLInputs(fsys fstest.MapFS) [][]byte {
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
	files := make([][]byte, len(names))
	for i, name := range names {
		files[i] = fsys[name].Data
	}
	return files
}

// PeakHeap runs f and returns the largest heap in use while it ran: the bytes
// of heap objects, live or not yet collected, read every 100 µs.
func PeakHeap(f func()) uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(100 * time.Microsecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(stop)
	wg.Wait()
	return peak
}
