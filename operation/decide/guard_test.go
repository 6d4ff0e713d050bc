package decide

import (
	"testing"

	"github.com/fuelsync/fuelsync/state"
)

// TestEmptying: which changes of the applied nodes hold a revision back.
func TestEmptying(t *testing.T) {
	state := func(clusters map[string]int) *state.State {
		st := &state.State{Clusters: map[string]*state.ClusterState{}}
		for name, n := range clusters {
			cs := &state.ClusterState{Nodes: map[string]state.NodeState{}}
			for i := range n {
				cs.Nodes[string(rune('a'+i))] = state.NodeState{ID: i}
			}
			st.Clusters[name] = cs
		}
		return st
	}
	for _, tc := range []struct {
		name            string
		applied, render map[string]int
		want            string
	}{
		{"nothing applied", nil, nil, ""},
		{"first apply", map[string]int{}, map[string]int{"a": 2}, ""},
		{"every cluster gone", map[string]int{"a": 2, "b": 1}, nil, "removes every cluster's nodes (applied: a, b)"},
		{"every cluster empty", map[string]int{"a": 2}, map[string]int{"a": 0}, "removes every cluster's nodes (applied: a)"},
		{"one cluster emptied", map[string]int{"a": 2, "b": 1}, map[string]int{"a": 0, "b": 1}, "removes every node of cluster a (2 applied)"},
		{"two clusters emptied", map[string]int{"a": 2, "b": 1, "c": 1}, map[string]int{"a": 0, "b": 0, "c": 1}, "removes every node of cluster a (2 applied), cluster b (1 applied)"},
		{"one cluster removed, one kept", map[string]int{"a": 2, "b": 1}, map[string]int{"b": 1}, ""},
		{"nodes removed, one kept", map[string]int{"a": 3}, map[string]int{"a": 1}, ""},
		{"an empty cluster stays empty", map[string]int{"a": 0, "b": 1}, map[string]int{"a": 0, "b": 1}, ""},
	} {
		if got := Emptying(state(tc.applied), tc.render, nil); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
