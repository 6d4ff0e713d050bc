package operation

import (
	"io/fs"
	"maps"
	"slices"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation/decide"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/state"
)

// ClusterInfo is one cluster's line of fuelsync status and GET
// /api/v1/clusters: as flux get kustomizations and argocd app list show them.
type ClusterInfo struct {
	Name string `json:"name"`
	// Status is synced, out_of_sync, held, suspended or awaiting_approval.
	Status string `json:"status"`
	// AppliedRevision is the revision the cluster's applied artifacts are the
	// render of ("" when nothing of it is applied); HeadRevision the newest
	// revision reconciled (or read).
	AppliedRevision string `json:"applied_revision"`
	HeadRevision    string `json:"head_revision"`
	// Serial is the serial at which its artifacts last changed.
	Serial int64 `json:"serial"`
	// Nodes counts its deployed nodes.
	Nodes int `json:"nodes"`
	// Problems say why it is not synced.
	Problems []string `json:"problems"`
	// Pending is the plan awaiting approval (sync: manual).
	Pending *state.Pending `json:"pending,omitempty"`
	// Owner is the serve replica that owns the cluster when the replicas
	// share the clusters (serve --shard); "" otherwise, or while none does.
	Owner string `json:"owner,omitempty"`
	// Health is the cluster's health from its nodes' reports: healthy (every
	// node converged on the applied artifacts), degraded (a node failed),
	// progressing, or unknown (no report yet); the counts say how many nodes
	// converged, progress and failed, and HealthProblems which failed and
	// their failed tasks (reports.ClusterHealth).
	Health           string   `json:"health"`
	NodesConverged   int      `json:"nodes_converged"`
	NodesProgressing int      `json:"nodes_progressing"`
	NodesFailed      int      `json:"nodes_failed"`
	HealthProblems   []string `json:"health_problems"`
}

// WithHealth sets every cluster's health in infos, from the nodes' last
// reports in store (nil: every health unknown) against the applied state st.
func WithHealth(infos []ClusterInfo, st *state.State, store *reports.Store) {
	for i := range infos {
		h := reports.ClusterHealth(st, infos[i].Name, nil)
		if store != nil {
			h = store.Health(st, infos[i].Name)
		}
		infos[i].Health, infos[i].NodesConverged, infos[i].NodesProgressing, infos[i].NodesFailed = h.Health, h.Converged, h.Progressing, h.Failed
		infos[i].HealthProblems = append([]string{}, h.Problems...)
	}
}

// ClusterInfos are the clusters of the applied state st, with the statuses
// and problems of live (the last reconcile's results, nil when unknown), at
// head (the newest revision reconciled, "" when unknown), sorted by name.
func ClusterInfos(st *state.State, live []*ClusterResult, head string) []ClusterInfo {
	byName := map[string]*ClusterResult{}
	for _, c := range live {
		byName[c.Name] = c
	}
	names := slices.Collect(maps.Keys(st.Clusters))
	for _, c := range live {
		names = decide.AppendNew(names, c.Name)
	}
	slices.Sort(names)
	out := make([]ClusterInfo, 0, len(names))
	for _, name := range names {
		info := ClusterInfo{Name: name, HeadRevision: head, Problems: []string{}, Health: reports.Unknown, HealthProblems: []string{}}
		if cs := st.Clusters[name]; cs != nil {
			info.Status, info.Nodes, info.Serial, info.Pending = cs.StatusOf(), len(cs.Nodes), cs.Serial, cs.Pending
			info.Problems = append(info.Problems, cs.Problems...)
			if st.Artifacts[name+"/cluster.yaml"] != "" {
				info.AppliedRevision = cs.Revision
				if info.AppliedRevision == "" {
					info.AppliedRevision = st.Revision
				}
			}
		}
		if c := byName[name]; c != nil {
			info.Status = c.Status
			info.Problems = append([]string{}, c.Problems...)
		}
		if info.Status == "" {
			info.Status = state.StatusOutOfSync
		}
		out = append(out, info)
	}
	return out
}

// HeadStatuses says what the applied state st lacks of revision repo (loaded
// from fsys with opts; skip as for loader.InputFingerprint), without
// rendering: each cluster recorded synced whose inputs at the revision are no
// longer those it was applied with is out_of_sync, and so is a cluster of the
// revision that is not applied yet or a cluster applied that the revision no
// longer has. For fuelsync status without a running serve.
func HeadStatuses(st *state.State, fsys fs.FS, repo *loader.Repo, opts loader.Options, toolVersion string, skip ...string) []*ClusterResult {
	files, err := loader.ClusterFingerprints(fsys, opts, repo, skip...)
	if err != nil {
		files = nil
	}
	reusable := st.Reusable(files, toolVersion)
	var out []*ClusterResult
	seen := map[string]bool{}
	for _, c := range repo.Clusters {
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		cs := st.Clusters[c.Name]
		r := &ClusterResult{Name: c.Name, Status: cs.StatusOf()}
		switch {
		case cs == nil:
			r.Status, r.Problems = state.StatusOutOfSync, []string{"not applied yet"}
		case r.Status == state.StatusSynced && !slices.Contains(reusable, c.Name):
			r.Status, r.Problems = state.StatusOutOfSync, []string{"the revision changes its inputs"}
		default:
			r.Problems = slices.Clone(cs.Problems)
		}
		out = append(out, r)
	}
	for name := range st.Clusters {
		if !seen[name] {
			out = append(out, &ClusterResult{Name: name, Status: state.StatusOutOfSync, Problems: []string{"removed by the revision"}})
		}
	}
	return out
}
