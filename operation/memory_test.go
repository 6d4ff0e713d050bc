package operation

import (
	"context"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// peakHeap runs f and returns the largest heap in use while it ran: the bytes
// of heap objects, live or not yet collected, read every 100 µs.
func peakHeap(f func()) uint64 {
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

// TestColdApplyMemoryFollowsLargestCluster: the peak heap of a cold apply of
// 16 clusters is within 1.5 times that of 4 clusters of the same size (the
// repogen heavy shape, 25 nodes a cluster): an apply holds a few clusters at
// a time, not the fleet. Holding every cluster's render until the publish
// made it 2.5 times.
func TestColdApplyMemoryFollowsLargestCluster(t *testing.T) {
	// The collector runs often, so that the heap read is close to what is
	// live rather than to when the collector last ran.
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	peaks := map[int]uint64{}
	for _, n := range []int{4, 16} {
		spec := repogen.Spec{Plugins: 11, Tasks: 1000, Nodes: n * 25, Clusters: n, Seed: 1, CrossDepends: 60, StageFanIn: true}
		fsys := repogen.Generate(spec)
		w := state.Open(filepath.Join(t.TempDir(), "wd"))
		op := &Operation{Workdir: w, ToolVersion: "test"}
		var res *Result
		var err error
		peaks[n] = peakHeap(func() {
			res, err = op.Run(context.Background(), Request{Revision: source.Revision{SHA: source.WorkingTree, FS: fsys}, Apply: true})
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Outcome != Applied || len(res.Next.Clusters) != n {
			t.Fatalf("%d clusters: outcome %s, %d clusters applied", n, res.Outcome, len(res.Next.Clusters))
		}
		t.Logf("%d clusters of 25 nodes: peak heap %.1f MB", n, float64(peaks[n])/1e6)
	}
	if ratio := float64(peaks[16]) / float64(peaks[4]); ratio > 1.5 {
		t.Errorf("the cold apply of 16 clusters peaks at %.1f MB of heap, %.2f times that of 4 clusters of the same size (%.1f MB): want at most 1.5",
			float64(peaks[16])/1e6, ratio, float64(peaks[4])/1e6)
	}
}
