package decide

import (
	"maps"
	"slices"

	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// KeptClusters lists the clusters of the plan's artifacts that models (the
// clusters rendered) do not have.
func KeptClusters(p *Plan, models []*render.Model) []string {
	rendered := map[string]bool{}
	for _, m := range models {
		rendered[m.Cluster.Name] = true
	}
	set := map[string]bool{}
	for name := range p.Artifacts {
		if c := state.ClusterOf(name); c != "" && !rendered[c] {
			set[c] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// NextState is the state after applying p: the next serial, the plan's revision
// and digests, every node of the clusters rendered (models) as deployed with its
// roles, the primary tags; a kept cluster's as st has it.
func NextState(st *state.State, p *Plan, models []*render.Model, kept []string) *state.State {
	next := &state.State{
		FormatVersion: "1",
		Lineage:       st.Lineage,
		Serial:        st.Serial + 1,
		Revision:      p.SetRev(),
		ToolVersion:   p.ToolVersion,
		Clusters:      map[string]*state.ClusterState{},
		Artifacts:     p.Artifacts,
	}
	if next.Lineage == "" {
		next.Lineage = state.NewLineage()
	}
	for _, c := range kept {
		if cs := st.Clusters[c]; cs != nil {
			copied := *cs
			next.Clusters[c] = &copied
		}
	}
	for _, m := range models {
		cs := &state.ClusterState{Nodes: map[string]state.NodeState{}, Primary: map[string]string{}}
		for name, nt := range m.NodeTags {
			cs.Nodes[name] = state.NodeState{ID: nt.Node.ID, Roles: slices.Clone(nt.Roles)}
			for _, tag := range nt.Primary {
				cs.Primary[tag] = name
			}
		}
		name := m.Cluster.Name
		cs.Revision, cs.File = p.Revision, m.Cluster.File
		cs.Serial = next.Serial
		if old := st.Clusters[name]; old != nil && old.Serial > 0 && ArtifactsDigest(st.Artifacts, name) == ArtifactsDigest(p.Artifacts, name) {
			cs.Serial = old.Serial
		}
		next.Clusters[name] = cs
	}
	// The records the plan gives: statuses, problems, pending plans.
	for _, rec := range p.Clusters {
		cs := next.Clusters[rec.Name]
		switch {
		case rec.Untouched:
			continue
		case rec.Gone:
			delete(next.Clusters, rec.Name)
			continue
		case cs == nil:
			// Held (or suspended, or awaiting approval) and never applied:
			// recorded, without nodes.
			cs = &state.ClusterState{Nodes: map[string]state.NodeState{}, Primary: map[string]string{}}
			next.Clusters[rec.Name] = cs
		}
		cs.Status, cs.Problems, cs.Pending = rec.Status, slices.Clone(rec.Problems), rec.Pending
		if rec.Revision != "" {
			cs.Revision = rec.Revision
		}
		if rec.File != "" {
			cs.File = rec.File
		}
	}
	recordInputs(st, p, next)
	return next
}

// recordInputs records in next, the state after applying p to st, the
// inputs its artifacts are the render of: the whole revision's (a plan of
// every cluster that waits for nothing), and each cluster's.
func recordInputs(st *state.State, p *Plan, next *state.State) {
	if p.InputFiles == "" {
		return
	}
	if !p.Again && len(p.Targets) == 0 {
		// Only a plan of every cluster makes the state the outcome of
		// these inputs (a targeted one leaves the others behind).
		next.Inputs = state.InputsKey(p.InputFiles, p.ToolVersion, next)
	}
	for c, cs := range next.Clusters {
		files := p.ClusterFiles[c]
		rec := p.Record(c)
		switch {
		case files != "" && (rec == nil || !rec.Untouched && rec.Status == state.StatusSynced):
			// Its artifacts are now the render of these inputs.
			if next.ClusterInputs == nil {
				next.ClusterInputs = map[string]string{}
			}
			next.ClusterInputs[c] = state.ClusterInputsKey(files, p.ToolVersion, cs)
		case rec != nil && st.ClusterInputs[c] != "":
			// Held, waiting or not planned: its artifacts are still the
			// render of the inputs it was applied with.
			if next.ClusterInputs == nil {
				next.ClusterInputs = map[string]string{}
			}
			next.ClusterInputs[c] = st.ClusterInputs[c]
		}
	}
}
