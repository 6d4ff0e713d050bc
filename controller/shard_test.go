package controller

import (
	"fmt"
	"maps"
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

// Every cluster has one owner among the members, whatever the order of the
// names; each member owns its share, ceil(clusters/members), or one fewer;
// a member that joins or leaves, or a cluster added or removed, moves little
// more than it must.
func TestAssignBoundedLoads(t *testing.T) {
	if got := Assign(clusterNames(3), nil); len(got) != 0 {
		t.Fatalf("owners among no members: %v", got)
	}
	members := func(n int) []string {
		var out []string
		for i := 1; i <= n; i++ {
			out = append(out, fmt.Sprintf("r%d", i))
		}
		return out
	}
	moved := func(a, b map[string]string) int {
		n := 0
		for c, o := range a {
			if b[c] != o {
				n++
			}
		}
		return n
	}
	for _, nc := range []int{1, 6, 16, 24, 50, 1000} {
		for _, nm := range []int{1, 2, 3, 4, 8} {
			clusters, ms := clusterNames(nc), members(nm)
			got := Assign(clusters, ms)
			if len(got) != nc {
				t.Fatalf("%d clusters, %d members: %d owners", nc, nm, len(got))
			}
			load := map[string]int{}
			for _, c := range clusters {
				if !slices.Contains(ms, got[c]) {
					t.Fatalf("owner of %s: %q, not a member", c, got[c])
				}
				load[got[c]]++
			}
			share := (nc + nm - 1) / nm
			for _, m := range ms {
				if load[m] > share || load[m] < share-1 && nc >= nm {
					t.Errorf("%d clusters, %d members: %s owns %d (share %d): %v", nc, nm, m, load[m], share, load)
				}
			}
			// The same, whatever the order (and repeats) of the names.
			rc, rm := slices.Clone(clusters), slices.Clone(ms)
			slices.Reverse(rc)
			slices.Reverse(rm)
			if again := Assign(append(rc, clusters[0]), append(rm, ms[0])); !maps.Equal(again, got) {
				t.Fatalf("%d clusters, %d members: the owners depend on the order of the names", nc, nm)
			}
			// A member joins: it takes about its share, and few others move.
			joined := Assign(clusters, members(nm+1))
			took := 0
			for _, o := range joined {
				if o == fmt.Sprintf("r%d", nm+1) {
					took++
				}
			}
			if want := nc / (nm + 1); took < want {
				t.Errorf("%d clusters, %d members: the new member took %d, not its share %d", nc, nm, took, want)
			}
			if m, most := moved(got, joined), bound(nc/(nm+1)); m > most {
				t.Errorf("%d clusters, %d members: %d moved when one joined (at most %d)", nc, nm, m, most)
			}
			// A member leaves: its clusters move, and few others.
			if nm > 1 {
				left := Assign(clusters, ms[1:])
				if m, most := moved(got, left), bound(load["r1"]); m > most {
					t.Errorf("%d clusters, %d members: %d moved when r1 (%d clusters) left (at most %d)", nc, nm, m, load["r1"], most)
				}
			}
			// A cluster added moves few of the others.
			if nc > 1 {
				added := Assign(clusterNames(nc+1), ms)
				if m := moved(got, added); m > 3 {
					t.Errorf("%d clusters, %d members: %d moved when a cluster was added", nc, nm, m)
				}
			}
		}
	}
}

// bound is the most clusters a change that must move n may move: n and a
// fifth more, and 3 more where the shares change.
func bound(n int) int { return n + n/5 + 3 }

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
