package state

import "testing"

// TestUnchangedNeedsSameState: the fingerprint folds in what the render reads
// of the applied state, and the tool version.
func TestUnchangedNeedsSameState(t *testing.T) {
	st := &State{Serial: 1, Clusters: map[string]*ClusterState{"c": {Nodes: map[string]NodeState{"n1": {ID: 1}}, Primary: map[string]string{"controller": "n1"}}}}
	st.Inputs = InputsKey("files", "v1", st)
	if !st.Unchanged("files", "v1") {
		t.Fatal("the same inputs are not unchanged")
	}
	for name, ok := range map[string]bool{
		"other files":                 st.Unchanged("other", "v1"),
		"other tool":                  st.Unchanged("files", "v2"),
		"no fingerprint of the files": st.Unchanged("", "v1"),
	} {
		if ok {
			t.Errorf("%s: unchanged", name)
		}
	}
	moved := *st
	moved.Clusters = map[string]*ClusterState{"c": {Nodes: map[string]NodeState{"n1": {ID: 1}}, Primary: map[string]string{"controller": "n2"}}}
	if moved.Unchanged("files", "v1") {
		t.Error("another primary: unchanged")
	}
	var empty State
	if empty.Unchanged("files", "v1") {
		t.Error("nothing applied: unchanged")
	}
}
