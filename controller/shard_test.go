package controller

import (
	"fmt"
	"math"
	"slices"
	"testing"
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
