package state

import (
	"slices"
	"testing"
)

// TestReusable: a cluster is reusable only with the same fingerprint, tool
// version and applied nodes and primaries, when its artifacts were applied.
func TestReusable(t *testing.T) {
	cs := &ClusterState{Nodes: map[string]NodeState{"n1": {ID: 1}}, Primary: map[string]string{"controller": "n1"}}
	st := &State{Serial: 1, Clusters: map[string]*ClusterState{"a": cs, "b": cs},
		Artifacts:     map[string]string{"a/cluster.yaml": "x", "b/cluster.yaml": "y"},
		ClusterInputs: map[string]string{"a": ClusterInputsKey("fa", "v1", cs), "b": ClusterInputsKey("fb", "v1", cs)}}
	for _, tc := range []struct {
		name  string
		files map[string]string
		tool  string
		want  []string
	}{
		{"same", map[string]string{"a": "fa", "b": "fb"}, "v1", []string{"a", "b"}},
		{"b changed", map[string]string{"a": "fa", "b": "fb2"}, "v1", []string{"a"}},
		{"another tool", map[string]string{"a": "fa", "b": "fb"}, "v2", nil},
		{"b unfingerprinted", map[string]string{"a": "fa"}, "v1", []string{"a"}},
	} {
		if got := st.Reusable(tc.files, tc.tool); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	moved := *st
	moved.Clusters = map[string]*ClusterState{"a": {Nodes: cs.Nodes, Primary: map[string]string{"controller": "n2"}}, "b": cs}
	if got := moved.Reusable(map[string]string{"a": "fa", "b": "fb"}, "v1"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("another primary in a: %v", got)
	}
	noSet := *st
	noSet.Artifacts = map[string]string{"b/cluster.yaml": "y"}
	if got := noSet.Reusable(map[string]string{"a": "fa", "b": "fb"}, "v1"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("a not applied: %v", got)
	}
	old := *st
	old.ClusterInputs = nil
	if got := old.Reusable(map[string]string{"a": "fa", "b": "fb"}, "v1"); got != nil {
		t.Errorf("a state without cluster fingerprints: %v", got)
	}
}
