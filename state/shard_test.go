package state

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A merge keeps every cluster of the stored state but the committer's, takes
// the committer's (removing one it no longer has), renumbers the serials the
// committer gave its clusters, and pins each cluster's revision.
func TestMergeShard(t *testing.T) {
	cur := &State{FormatVersion: "1", Lineage: "L", Serial: 7, Revision: "rev7", ToolVersion: "t", Inputs: "whole",
		Clusters: map[string]*ClusterState{
			"a": {Serial: 3, Status: StatusSynced},                 // another owner's, of the state's revision
			"b": {Serial: 6, Revision: "rev6", Status: StatusHeld}, // another owner's
			"c": {Serial: 2, Revision: "rev2"},                     // the committer's, changed below
			"d": {Serial: 2, Revision: "rev2"},                     // the committer's, gone in next
		},
		Artifacts:     map[string]string{"a/x": "a7", "b/x": "b6", "c/x": "c2", "d/x": "d2", "manifest.json": "m7"},
		ClusterInputs: map[string]string{"a": "ia", "c": "ic-old", "d": "id"},
	}
	next := &State{FormatVersion: "1", Lineage: "L", Serial: 6, Revision: "rev9", ToolVersion: "t2",
		Clusters: map[string]*ClusterState{
			"a": {Serial: 1},                   // stale: not the committer's
			"c": {Serial: 6},                   // changed by this commit
			"e": {Serial: 4, Revision: "rev4"}, // unchanged, new to the merge
		},
		Artifacts:     map[string]string{"a/x": "a1", "c/x": "c6", "e/x": "e4", "manifest.json": "m6"},
		ClusterInputs: map[string]string{"a": "ia-stale", "c": "ic"},
	}
	got := MergeShard(cur, next, []string{"c", "d", "e"})
	want := &State{FormatVersion: "1", Lineage: "L", Serial: 8, Revision: "rev9", ToolVersion: "t2",
		Clusters: map[string]*ClusterState{
			"a": {Serial: 3, Status: StatusSynced, Revision: "rev7"},
			"b": {Serial: 6, Revision: "rev6", Status: StatusHeld},
			"c": {Serial: 8, Revision: "rev9"},
			"e": {Serial: 4, Revision: "rev4"},
		},
		Artifacts:     map[string]string{"a/x": "a7", "b/x": "b6", "c/x": "c6", "e/x": "e4"},
		ClusterInputs: map[string]string{"a": "ia", "c": "ic"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("merge (-want +got):\n%s", d)
	}
}
