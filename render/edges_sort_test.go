package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSortEdges: edges are ordered by the target's node rank, then task position,
// and of two edges to one target the first written wins (its origin is the one
// explain shows); a list already in order is returned as it is.
func TestSortEdges(t *testing.T) {
	n0, n1, sync := &NodeGraph{Node: "node-1", rank: 0}, &NodeGraph{Node: "node-2", rank: 1}, &NodeGraph{Node: SyncNode, rank: 3}
	a0 := &PlacedTask{ID: "a", idx: 0, node: n0}
	b0 := &PlacedTask{ID: "b", idx: 1, node: n0}
	a1 := &PlacedTask{ID: "a", idx: 0, node: n1}
	st := &PlacedTask{ID: "deploy_end", idx: 2, node: sync}
	edge := func(to *PlacedTask, origin string) Edge {
		return Edge{Task: to.ID, Node: to.node.Node, EdgeSource: &EdgeSource{Origin: origin}, to: to}
	}
	text := func(list []Edge) []string {
		var out []string
		for _, e := range list {
			out = append(out, e.Task+"@"+e.Node+" "+e.Origin)
		}
		return out
	}
	got := sortEdges([]Edge{edge(st, "requires"), edge(a1, "cross-depends"), edge(b0, "requires"), edge(a0, "requires"), edge(a1, "required_for of x"), edge(b0, "cross-depends")})
	want := []string{"a@node-1 requires", "b@node-1 requires", "a@node-2 cross-depends", "deploy_end@sync requires"}
	if diff := cmp.Diff(want, text(got)); diff != "" {
		t.Errorf("sortEdges (-want +got):\n%s", diff)
	}
	sorted := []Edge{edge(a0, "requires"), edge(a1, "requires")}
	if got := sortEdges(sorted); &got[0] != &sorted[0] || len(got) != 2 {
		t.Errorf("a sorted list was copied or changed: %q", text(got))
	}
}
