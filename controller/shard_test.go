package controller

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"
)

func clusterNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("env-%03d", i))
	}
	return out
}

// Every cluster has one owner among the members, whatever their order; the
// clusters spread about evenly; a member that joins takes about 1/N of the
// clusters, only from the others and only for itself; one that leaves gives
// away only its own.
func TestOwnerRendezvous(t *testing.T) {
	clusters := clusterNames(3000)
	if got := Owner("env-001", nil); got != "" {
		t.Fatalf("owner among no members: %q", got)
	}
	members := []string{"r1", "r2", "r3"}
	owners := map[string]string{}
	count := map[string]int{}
	for _, c := range clusters {
		o := Owner(c, members)
		if !slices.Contains(members, o) {
			t.Fatalf("owner of %s: %q, not a member", c, o)
		}
		if other := Owner(c, []string{"r3", "r1", "r2"}); other != o {
			t.Fatalf("owner of %s depends on the members' order: %s, %s", c, o, other)
		}
		owners[c] = o
		count[o]++
	}
	for _, m := range members {
		if share := float64(count[m]) / float64(len(clusters)); math.Abs(share-1.0/3) > 0.04 {
			t.Errorf("%s owns %d of %d clusters (%.2f), not about a third", m, count[m], len(clusters), share)
		}
	}
	// r4 joins: only clusters moving to r4, about a quarter.
	joined := append(slices.Clone(members), "r4")
	moved := 0
	for _, c := range clusters {
		o := Owner(c, joined)
		if o != owners[c] {
			if o != "r4" {
				t.Fatalf("cluster %s moved from %s to %s when r4 joined", c, owners[c], o)
			}
			moved++
		}
	}
	if share := float64(moved) / float64(len(clusters)); math.Abs(share-0.25) > 0.04 {
		t.Errorf("%d of %d clusters moved when a fourth member joined (%.2f), not about a quarter", moved, len(clusters), share)
	}
	// r2 leaves: only r2's clusters move.
	left := []string{"r1", "r3"}
	for _, c := range clusters {
		o := Owner(c, left)
		if owners[c] != "r2" && o != owners[c] {
			t.Fatalf("cluster %s moved from %s to %s when r2 left", c, owners[c], o)
		}
	}
}

func TestOwnerScoreNoConcatenation(t *testing.T) {
	if score("ab", "c") == score("a", "bc") {
		t.Fatal("score(ab, c) == score(a, bc)")
	}
}

// settle returns once no serial has come for the quiet time, or at the
// bound, whatever keeps coming; false when the serials end.
func TestShardSettle(t *testing.T) {
	serials := make(chan int64)
	go func() {
		for i := range 5 { // one every 20ms: not quiet for 50ms until the last
			serials <- int64(i)
			time.Sleep(20 * time.Millisecond)
		}
	}()
	start := time.Now()
	if !settle(t.Context(), serials, 50*time.Millisecond, time.Second) {
		t.Fatal("settle said the serials ended")
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 600*time.Millisecond {
		t.Errorf("settled after %s; want after the last serial (80ms) and 50ms of quiet", d)
	}
	busy := make(chan int64)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case busy <- 1:
			case <-stop:
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	start = time.Now()
	if !settle(t.Context(), busy, 50*time.Millisecond, 200*time.Millisecond) {
		t.Fatal("settle said the serials ended")
	}
	if d := time.Since(start); d < 190*time.Millisecond || d > 800*time.Millisecond {
		t.Errorf("settled after %s with serials every 10ms; want at the bound, 200ms", d)
	}
	closed := make(chan int64)
	close(closed)
	if settle(t.Context(), closed, 50*time.Millisecond, time.Second) {
		t.Error("settle on closed serials said true")
	}
}
