package state

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// ClusterInputsKey is the input fingerprint of one cluster's render: the
// cluster's fingerprint (loader.ClusterFingerprints), the tool version, and
// what the render reads of the applied state for it (its deployed nodes and
// primary tags, cs; nil when none). Apply records it with the state it writes,
// as InputsKey.
func ClusterInputsKey(files, toolVersion string, cs *ClusterState) string {
	h := sha256.New()
	fmt.Fprintf(h, "fuelsync cluster render inputs 1\nfiles %s\ntool %s\n", files, toolVersion)
	if cs != nil {
		// What the render reads of it (as the state wrote it before clusters
		// had statuses: the same bytes, so older states' keys still match).
		b, _ := json.Marshal(renderInputs{Nodes: cs.Nodes, Primary: cs.Primary}) // map keys sorted: deterministic
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Reusable returns, sorted, the clusters whose applied artifacts are already
// the render of inputs whose cluster fingerprints are files
// (loader.ClusterFingerprints of a revision) by the tool version toolVersion:
// they need not be rendered again. None when nothing is applied, or the state
// has no cluster fingerprints (written by an older version).
func (st *State) Reusable(files map[string]string, toolVersion string) []string {
	if st == nil || st.Serial == 0 || len(st.ClusterInputs) == 0 {
		return nil
	}
	var out []string
	for c, f := range files {
		want := st.ClusterInputs[c]
		if f == "" || want == "" || st.Artifacts[c+"/cluster.yaml"] == "" {
			continue
		}
		if ClusterInputsKey(f, toolVersion, st.Clusters[c]) == want {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// ClusterOf is the cluster an artifact path belongs to ("" for manifest.json).
func ClusterOf(name string) string {
	c, _, ok := strings.Cut(name, "/")
	if !ok {
		return ""
	}
	return c
}

// Cluster statuses: in the state (ClusterState.Status), the plan, fuelsync
// status and the API.
const (
	// StatusSynced: the cluster's applied artifacts are the render of the
	// revision reconciled.
	StatusSynced = "synced"
	// StatusOutOfSync: the revision changes the cluster and it is not applied
	// yet (a plan, a dry run, or a cluster that waits for its depends_on).
	StatusOutOfSync = "out_of_sync"
	// StatusHeld: the cluster's inputs have errors (or it would lose every
	// node): it keeps its last applied artifacts.
	StatusHeld = "held"
	// StatusSuspended: suspend: true; not reconciled, its artifacts kept.
	StatusSuspended = "suspended"
	// StatusAwaitingApproval: sync: manual and the revision changes it: its
	// plan waits for fuelsync approve.
	StatusAwaitingApproval = "awaiting_approval"
)

// MaxClusterProblems is how many problems the state keeps per cluster (and
// the status shows); the rest are counted ("and N more errors").
const MaxClusterProblems = 20

// Statuses are the statuses a cluster can have, in the order the metrics
// give them.
var Statuses = []string{StatusSynced, StatusOutOfSync, StatusHeld, StatusSuspended, StatusAwaitingApproval}

// Only returns the state limited to the artifacts of clusters (plan --cluster).
func (st *State) Only(clusters []string) *State {
	out := *st
	out.Artifacts = map[string]string{}
	for name, sum := range st.Artifacts {
		for _, c := range clusters {
			if strings.HasPrefix(name, c+"/") {
				out.Artifacts[name] = sum
			}
		}
	}
	return &out
}
