package decide

import (
	"testing"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// TestNextState: the state after applying a plan: the next serial, a
// rendered cluster's nodes, a kept cluster as it was, the records' statuses;
// a cluster gone dropped; the inputs recorded only by a plan of every
// cluster that waits for nothing, each cluster's while synced.
func TestNextState(t *testing.T) {
	st := &state.State{Lineage: "l", Serial: 4, Revision: "r1", Artifacts: map[string]string{"k/cluster.yaml": "k", "g/cluster.yaml": "g"},
		ClusterInputs: map[string]string{"h": "old-h"},
		Clusters: map[string]*state.ClusterState{
			"k": {Nodes: map[string]state.NodeState{"n": {ID: 1}}, Revision: "r1", Serial: 2},
			"g": {Nodes: map[string]state.NodeState{"n": {ID: 2}}},
			"h": {Nodes: map[string]state.NodeState{"n": {ID: 3}}, Revision: "r1"},
		}}
	model := &render.Model{Cluster: &loader.Cluster{Name: "a", File: "clusters/a.yaml"}}
	for _, tc := range []struct {
		name       string
		again      bool
		targets    []string
		wantInputs bool
	}{
		{name: "every cluster", wantInputs: true},
		{name: "a cluster waits", again: true},
		{name: "targeted", targets: []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Plan{Revision: "r2", ToolVersion: "v", Artifacts: map[string]string{"a/cluster.yaml": "a", "k/cluster.yaml": "k", "h/cluster.yaml": "h"},
				InputFiles: "files", ClusterFiles: map[string]string{"a": "fa", "k": "fk", "h": "fh"}, Again: tc.again, Targets: tc.targets,
				Clusters: []ClusterRecord{
					{Name: "a", Status: state.StatusSynced, Changed: true, Revision: "r2"},
					{Name: "k", Status: state.StatusSynced},
					{Name: "h", Status: state.StatusHeld, Problems: []string{"bad"}},
					{Name: "g", Gone: true},
				}}
			next := NextState(st, p, []*render.Model{model}, KeptClusters(p, []*render.Model{model}))
			if next.Serial != 5 || next.Lineage != "l" || next.Revision != "r2" {
				t.Errorf("serial %d, lineage %s, revision %s", next.Serial, next.Lineage, next.Revision)
			}
			if a := next.Clusters["a"]; a == nil || a.Serial != 5 || a.File != "clusters/a.yaml" || a.StatusOf() != state.StatusSynced {
				t.Errorf("cluster a: %+v", a)
			}
			if k := next.Clusters["k"]; k == nil || k.Serial != 2 || len(k.Nodes) != 1 || k.Revision != "r1" {
				t.Errorf("cluster k (kept): %+v", k)
			}
			if h := next.Clusters["h"]; h == nil || h.Status != state.StatusHeld || len(h.Problems) != 1 || h.Revision != "r1" {
				t.Errorf("cluster h (held): %+v", h)
			}
			if next.Clusters["g"] != nil {
				t.Errorf("cluster g (gone) kept")
			}
			if (next.Inputs != "") != tc.wantInputs {
				t.Errorf("inputs %q, want recorded %v", next.Inputs, tc.wantInputs)
			}
			if next.ClusterInputs["a"] == "" || next.ClusterInputs["k"] == "" || next.ClusterInputs["h"] != "old-h" {
				t.Errorf("cluster inputs %v: a and k (synced) of these inputs, h (held) its old ones", next.ClusterInputs)
			}
		})
	}
}
