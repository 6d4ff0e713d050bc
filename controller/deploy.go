package controller

import (
	"maps"
	"slices"

	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/state"
)

// LastRun is what DeployTargets needs of a cluster's last deployment run.
type LastRun struct {
	// Exists says the cluster had a run; Serial is its applied serial.
	Exists bool
	Serial int64
}

// DeployTargets decides whether a cluster with deploy: auto is due a run of
// graph, and on which nodes: due when its applied artifacts changed after
// its last run (or it never had one) and some node has not converged on its
// graph (its last report is not a success on the graph applied now); the
// nodes are those, nil when they are all of the cluster's (a node has
// converged while its own graph is unchanged, reports.Convergence: a commit
// that changes one node's graph redeploys that node). A failed run is not
// run again at the same serial: that is fuelsync deploy retry's. store holds
// the nodes' reports.
func DeployTargets(st *state.State, cluster, graph string, store *reports.Store, run LastRun) (nodes []string, due bool) {
	cs := st.Clusters[cluster]
	if cs == nil || len(cs.Nodes) == 0 {
		return nil, false
	}
	changed := cs.Serial
	if changed == 0 {
		changed = st.Serial
	}
	if run.Exists && run.Serial >= changed {
		return nil, false
	}
	all := slices.Sorted(maps.Keys(cs.Nodes))
	var last map[string]*reports.Report
	if store != nil {
		last = store.Cluster(cluster)
	}
	for _, n := range all {
		r := last[n]
		if r != nil && r.Graph != graph {
			r = nil
		}
		if store.NodeState(st, cluster, n, r) != reports.Converged {
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 {
		return nil, false
	}
	if len(nodes) == len(all) {
		return nil, true
	}
	return nodes, true
}
