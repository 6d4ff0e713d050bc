package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/state"
)

// ClusterLine is a cluster's line in GET /api/v1/clusters: its status line
// (as fuelsync status prints it) and its newest deployment run.
type ClusterLine struct {
	operation.ClusterInfo
	// LastRun is the cluster's newest deployment run, without its nodes
	// (running, or how it ended); absent when it had none, or when this
	// serve coordinates no runs.
	LastRun *api.Run `json:"last_run,omitempty"`
}

// clusters is GET /api/v1/clusters: every cluster's status line (as fuelsync
// status prints them), from the applied state and the last reconcile, with
// its newest run.
func (s *Server) clusters(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	st, err := s.applied()
	if err != nil {
		http.Error(w, "reading the applied state: "+redact.Text(err.Error()), http.StatusInternalServerError)
		return
	}
	writeJSONBody(w, http.StatusOK, s.clusterLines(r.Context(), st))
}

// clusterLines are every cluster's line, sorted by name.
func (s *Server) clusterLines(ctx context.Context, st *state.State) []ClusterLine {
	infos := s.Loop.Clusters(st)
	lines := make([]ClusterLine, len(infos))
	for i, info := range infos {
		lines[i] = ClusterLine{ClusterInfo: info, LastRun: s.lastRun(ctx, info.Name)}
	}
	return lines
}

// approve is POST /api/v1/clusters/<cluster>/approve (fuelsync approve
// --server): the cluster's pending plan is applied at the next reconcile. It
// needs the API token: without --api-token-file nobody may approve over the
// network.
func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	if len(s.APIToken) == 0 {
		http.Error(w, "approving over the API needs serve --api-token-file (the bearer token); or run fuelsync approve against the state", http.StatusForbidden)
		return
	}
	if !s.authorized(w, r) {
		return
	}
	cluster := r.PathValue("cluster")
	if !checkNames(w, "cluster", cluster) {
		return
	}
	ref, ok := approveRef(w, r)
	if !ok {
		return
	}
	if s.Replica != nil && s.Replica.Role() == controller.RoleShard {
		http.Error(w, "replicas that share the clusters (serve --shard) do not approve over the API yet: stop the shards, or approve with fuelsync approve against the state", http.StatusServiceUnavailable)
		return
	}
	if s.Replica != nil && s.Replica.Role() != controller.RoleLeader {
		leader, _ := s.Replica.Leader(r.Context())
		http.Error(w, fmt.Sprintf("this replica follows; the leader is %q: approve there, or with fuelsync approve against the state", leader), http.StatusServiceUnavailable)
		return
	}
	st, err := s.applied()
	if err != nil {
		http.Error(w, "reading the applied state: "+redact.Text(err.Error()), http.StatusInternalServerError)
		return
	}
	cs := st.Clusters[cluster]
	switch {
	case cs == nil:
		clusterNotFound(w, st, cluster)
		return
	case cs.Pending == nil:
		http.Error(w, fmt.Sprintf("cluster %s has no plan awaiting approval (its status is %s)", cluster, cs.StatusOf()), http.StatusConflict)
		return
	}
	if err := operation.CheckApproved(cluster, cs.Pending, ref); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	// The plan approved is the one answered: a newer commit that replaces
	// it before the loop applies it is not applied in its stead.
	s.Loop.Approve(cluster, *cs.Pending)
	writeJSONBody(w, http.StatusAccepted, map[string]any{"cluster": cluster, "revision": cs.Pending.Revision, "digest": cs.Pending.Digest, "summary": cs.Pending.Summary, "approved": true})
}

// maxApproveBody bounds the body of an approval: {"revision": REV}.
const maxApproveBody = 4 << 10

// approveRef reads the revision (or digest) an approval names from its body,
// {"revision": REV}; an empty body names none. A body that is not that
// object is answered 400 (413 above maxApproveBody) and ok is false.
func approveRef(w http.ResponseWriter, r *http.Request) (ref string, ok bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxApproveBody))
	if err != nil {
		http.Error(w, fmt.Sprintf("the approval's body is over %d bytes", maxApproveBody), http.StatusRequestEntityTooLarge)
		return "", false
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return "", true
	}
	var body api.Approval
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || dec.More() {
		http.Error(w, `the approval's body is not {"revision": "<revision or digest of the plan approved>"}`, http.StatusBadRequest)
		return "", false
	}
	return body.Revision, true
}

func writeJSONBody(w http.ResponseWriter, code int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(body, '\n'))
}

// ClusterPlan is GET /api/v1/clusters/<cluster>/plan: the cluster's plan
// awaiting approval (sync: manual), what fuelsync approve would apply.
type ClusterPlan struct {
	Cluster string `json:"cluster"`
	Status  string `json:"status"`
	// Pending names the plan: its revision, the digest of its artifacts,
	// the counts of its changes, the applied artifacts' digest it was made
	// against.
	Pending *state.Pending `json:"pending"`
	// Changes are its changes as the last reconcile planned them, and Text
	// the same as fuelsync plan prints them; absent when this serve has not
	// planned it (a replica that follows, or a serve restarted since).
	Changes *diff.ClusterChange `json:"changes,omitempty"`
	Text    string              `json:"text,omitempty"`
}

// clusterPlan is the plan of cluster awaiting approval in st, nil when none.
func (s *Server) clusterPlan(st *state.State, cluster string) *ClusterPlan {
	cs := st.Clusters[cluster]
	if cs == nil || cs.Pending == nil {
		return nil
	}
	p := &ClusterPlan{Cluster: cluster, Status: cs.StatusOf(), Pending: cs.Pending}
	if cc := s.Loop.PendingChanges(cluster); cc != nil {
		p.Changes = cc
		p.Text = (&diff.ChangeSet{Clusters: []*diff.ClusterChange{cc}, Summary: cs.Pending.Summary}).Text(diff.Colors{})
	}
	return p
}

// plan is GET /api/v1/clusters/<cluster>/plan: 404 when the cluster has no
// plan awaiting approval.
func (s *Server) plan(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if !s.authorized(w, r) || !checkNames(w, "cluster", cluster) {
		return
	}
	st, cs, ok := s.appliedCluster(w, cluster)
	if !ok {
		return
	}
	p := s.clusterPlan(st, cluster)
	if p == nil {
		http.Error(w, fmt.Sprintf("cluster %s has no plan awaiting approval (its status is %s)", cluster, cs.StatusOf()), http.StatusNotFound)
		return
	}
	writeJSONBody(w, http.StatusOK, p)
}
