package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/runs"
)

// The deployment API: the runs (start, retry, stop, read) with the API token,
// and the agents' tasks (the next one, reports) with each node's own token.

// runsReady answers 503 when this serve coordinates no runs: none set up, or
// a replica that does not lead.
func (s *Server) runsReady(w http.ResponseWriter) bool {
	if s.Runs == nil {
		http.Error(w, "this serve runs no deployments: start it with --agent-secret-file (the nodes' agents run the tasks)", http.StatusServiceUnavailable)
		return false
	}
	if s.Replica != nil && s.Replica.Role() != controller.RoleLeader {
		w.Header().Set("Retry-After", retryAfter())
		http.Error(w, "this replica does not coordinate deployments: the leader does", http.StatusServiceUnavailable)
		return false
	}
	if !s.Runs.Ready() {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "the deployment runs are being resumed; try again in a moment", http.StatusServiceUnavailable)
		return false
	}
	return true
}

// runsHere says this serve coordinates the runs and can tell them: set
// up, resumed, and not a replica that follows.
func (s *Server) runsHere() bool {
	return s.Runs != nil && s.Runs.Ready() && (s.Replica == nil || s.Replica.Role() == controller.RoleLeader)
}

// lastRun is cluster's newest deployment run without its nodes, nil when it
// had none or this serve coordinates no runs (none set up, a replica that
// does not lead, runs not resumed yet).
func (s *Server) lastRun(ctx context.Context, cluster string) *api.Run {
	if !s.runsHere() {
		return nil
	}
	r, err := s.Runs.Latest(ctx, cluster)
	if err != nil {
		s.Loop.Log.Warn("reading a cluster's last run", "cluster", cluster, "error", redact.Text(err.Error()))
		return nil
	}
	return r
}

// agentAuthorized checks a request of node's agent: serve takes agents, the
// names are names, and the bearer token is the node's.
func (s *Server) agentAuthorized(w http.ResponseWriter, r *http.Request, cluster, node string) bool {
	if len(s.AgentSecret) == 0 {
		http.Error(w, "this serve takes no agent: start it with --agent-secret-file (the secret the nodes' tokens are derived from)", http.StatusForbidden)
		return false
	}
	if !checkNames(w, "cluster", cluster, "node", node) {
		return false
	}
	tok, ok := bearer(r)
	if !ok || tok == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fuelsync"`)
		http.Error(w, "an agent needs Authorization: Bearer <the node's token> (fuelsync agent-token --cluster C --node N)", http.StatusUnauthorized)
		return false
	}
	if !s.nodeToken(r, cluster, node) {
		http.Error(w, fmt.Sprintf("the bearer token is not the token of node %s of cluster %s: an agent speaks for its own node only", node, cluster), http.StatusForbidden)
		return false
	}
	return true
}

// writerAuthorized checks a request that changes runs: it needs the API
// token, and serve must have one.
func (s *Server) writerAuthorized(w http.ResponseWriter, r *http.Request) bool {
	if len(s.APIToken) == 0 {
		http.Error(w, "starting or stopping deployments over the API needs serve --api-token-file (the bearer token)", http.StatusForbidden)
		return false
	}
	return s.authorized(w, r)
}

// nextTask is GET /api/v1/clusters/<c>/nodes/<n>/tasks/next?wait=D: the
// node's next task of its cluster's run (200), or 204 when none came within
// the wait.
func (s *Server) nextTask(w http.ResponseWriter, r *http.Request) {
	cluster, node := r.PathValue("cluster"), r.PathValue("node")
	if !s.agentAuthorized(w, r, cluster, node) || !s.runRate.allowed(w, cluster, node) || !s.runsReady(w) {
		return
	}
	wait, err := parseWait(r.URL.Query().Get("wait"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	wait = min(wait, s.MaxWait)
	if wait > 0 {
		done := Waiting(r.Context())
		defer done()
		select {
		case s.waiters <- struct{}{}:
			defer func() { <-s.waiters }()
		default:
			tooMany(w, "too many requests are waiting; try again later")
			return
		}
	}
	a, err := s.Runs.Next(r.Context(), cluster, node, wait)
	switch {
	case r.Context().Err() != nil:
		return
	case err != nil:
		http.Error(w, "giving a task: "+redact.Text(err.Error()), http.StatusInternalServerError)
		return
	case a == nil:
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSONBody(w, http.StatusOK, a)
}

// taskReport is POST /api/v1/clusters/<c>/nodes/<n>/runs/<run>/tasks: how a
// task went (running: a heartbeat). 409 when the task is not running on the
// node in that attempt any more.
func (s *Server) taskReport(w http.ResponseWriter, r *http.Request) {
	cluster, node, run := r.PathValue("cluster"), r.PathValue("node"), r.PathValue("run")
	if !s.agentAuthorized(w, r, cluster, node) || !s.runRate.allowed(w, cluster, node) || !s.runsReady(w) {
		return
	}
	var rep api.TaskReport
	if !readJSONRequest(w, r, api.MaxReportBody, &rep) {
		return
	}
	if err := rep.Check(); err != nil {
		http.Error(w, "refusing the report: "+err.Error(), http.StatusBadRequest)
		return
	}
	next, err := s.Runs.Report(r.Context(), cluster, node, run, &rep)
	switch {
	case errors.Is(err, runs.ErrStale):
		http.Error(w, fmt.Sprintf("task %s (attempt %d) is not running on node %s in run %s of cluster %s: the report is late or repeated", rep.Task, rep.Attempt, node, run, cluster), http.StatusConflict)
	case err != nil:
		http.Error(w, "keeping the report: "+redact.Text(err.Error()), http.StatusInternalServerError)
	default:
		writeJSONBody(w, http.StatusOK, api.ReportAnswer{Cluster: cluster, Node: node, Run: run, Task: rep.Task, Status: rep.Status, Next: next})
	}
}

// readJSONRequest reads a JSON body of at most max bytes into v, answering
// 413 or 400 itself.
func readJSONRequest(w http.ResponseWriter, r *http.Request, max int64, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("the body is over %d bytes", max), http.StatusRequestEntityTooLarge)
		return false
	}
	if err != nil {
		http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if len(body) > 0 {
		if err := dec.Decode(v); err != nil {
			http.Error(w, "the body is not what was asked: "+err.Error(), http.StatusBadRequest)
			return false
		}
		if dec.More() {
			http.Error(w, "the body holds more than one JSON value", http.StatusBadRequest)
			return false
		}
	}
	return true
}

// startRun is POST /api/v1/clusters/<c>/runs: a run of the applied graph.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if !checkNames(w, "cluster", cluster) || !s.writerAuthorized(w, r) || !s.runsReady(w) {
		return
	}
	var req api.StartRun
	if !readJSONRequest(w, r, 64<<10, &req) {
		return
	}
	if req.Graph == "" {
		req.Graph = "default"
	}
	for _, n := range req.Nodes {
		if !checkNames(w, "node", n) {
			return
		}
	}
	if !checkNames(w, "graph", req.Graph) {
		return
	}
	if req.MaxNodes < 0 {
		http.Error(w, "max_nodes must not be negative", http.StatusBadRequest)
		return
	}
	h, code, err := s.start(r.Context(), cluster, req, "request")
	if err != nil {
		http.Error(w, err.Error(), code)
		return
	}
	s.answerRun(w, r, cluster, h.ID, http.StatusCreated)
}

// start starts a run of cluster's applied graph: the HTTP status and why
// when it does not.
func (s *Server) start(ctx context.Context, cluster string, req api.StartRun, trigger string) (*runs.Header, int, error) {
	st, err := s.applied()
	if err != nil {
		return nil, http.StatusInternalServerError, fmt.Errorf("reading the applied state: %s", redact.Text(err.Error()))
	}
	cs := st.Clusters[cluster]
	if cs == nil {
		return nil, http.StatusNotFound, fmt.Errorf("cluster %q is not in the applied state (serial %d)", cluster, st.Serial)
	}
	for _, n := range req.Nodes {
		if _, ok := cs.Nodes[n]; !ok && n != render.MasterNode {
			return nil, http.StatusNotFound, fmt.Errorf("cluster %s has no node %q in the applied state", cluster, n)
		}
	}
	if _, ok := st.Artifacts[render.NodeAddress(cluster, render.SyncNode, req.Graph).String()]; !ok {
		return nil, http.StatusNotFound, fmt.Errorf("cluster %s has no graph %q in the applied state", cluster, req.Graph)
	}
	h, err := s.Runs.Start(ctx, runs.StartRequest{Cluster: cluster, Graph: req.Graph, Serial: st.Serial,
		Revision: cs.Revision, Set: verifiedFS{s.Loop.Workdir.SetFS(st.Serial), st.Artifacts},
		Nodes: req.Nodes, Noop: req.Noop, MaxNodes: req.MaxNodes, Trigger: trigger})
	switch {
	case errors.Is(err, runs.ErrBusy):
		return nil, http.StatusConflict, err
	case err != nil:
		return nil, http.StatusInternalServerError, fmt.Errorf("starting the run: %s", redact.Text(err.Error()))
	}
	return h, 0, nil
}

// retryRun is POST /api/v1/clusters/<c>/runs/retry.
func (s *Server) retryRun(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if !checkNames(w, "cluster", cluster) || !s.writerAuthorized(w, r) || !s.runsReady(w) {
		return
	}
	var req api.RetryRun
	if !readJSONRequest(w, r, 64<<10, &req) {
		return
	}
	for _, n := range req.Nodes {
		if !checkNames(w, "node", n) {
			return
		}
	}
	h, err := s.Runs.Retry(r.Context(), cluster, req.Nodes)
	switch {
	case errors.Is(err, runs.ErrBusy):
		http.Error(w, err.Error(), http.StatusConflict)
		return
	case errors.Is(err, runs.ErrNoRun):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, "retrying: "+redact.Text(err.Error()), http.StatusInternalServerError)
		return
	}
	s.answerRun(w, r, cluster, h.ID, http.StatusCreated)
}

// stopRun is POST /api/v1/clusters/<c>/runs/stop.
func (s *Server) stopRun(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if !checkNames(w, "cluster", cluster) || !s.writerAuthorized(w, r) || !s.runsReady(w) {
		return
	}
	h, err := s.Runs.Stop(r.Context(), cluster, "stopped by an operator (the API)")
	switch {
	case errors.Is(err, runs.ErrNoRun):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, "stopping: "+redact.Text(err.Error()), http.StatusInternalServerError)
		return
	}
	s.answerRun(w, r, cluster, h.ID, http.StatusAccepted)
}

// answerRun answers with a run's view.
func (s *Server) answerRun(w http.ResponseWriter, r *http.Request, cluster, id string, code int) {
	run, err := s.Runs.Run(r.Context(), cluster, id, api.TasksNone)
	if err != nil {
		http.Error(w, "reading the run: "+redact.Text(err.Error()), http.StatusInternalServerError)
		return
	}
	writeJSONBody(w, code, run)
}

// listRuns is GET /api/v1/clusters/<c>/runs: newest first.
func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if !checkNames(w, "cluster", cluster) || !s.authorized(w, r) || !s.runsReady(w) {
		return
	}
	list, err := s.Runs.Runs(r.Context(), cluster)
	if err != nil {
		http.Error(w, "reading the runs: "+redact.Text(err.Error()), http.StatusInternalServerError)
		return
	}
	if list == nil {
		list = []api.Run{}
	}
	writeJSONBody(w, http.StatusOK, list)
}

// getRun is GET /api/v1/clusters/<c>/runs/<id> ("latest": the newest).
func (s *Server) getRun(w http.ResponseWriter, r *http.Request) {
	cluster, id := r.PathValue("cluster"), r.PathValue("id")
	if !checkNames(w, "cluster", cluster) || !s.authorized(w, r) || !s.runsReady(w) {
		return
	}
	tasks := r.URL.Query().Get("tasks")
	switch tasks {
	case "":
		tasks = api.TasksAll
	case api.TasksAll, api.TasksFailed, api.TasksNone:
	default:
		http.Error(w, fmt.Sprintf("tasks=%q: want all, failed or none", tasks), http.StatusBadRequest)
		return
	}
	run, err := s.Runs.Run(r.Context(), cluster, id, tasks)
	switch {
	case errors.Is(err, runs.ErrNotFound):
		http.Error(w, fmt.Sprintf("cluster %s has no run %q", cluster, id), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, "reading the run: "+redact.Text(err.Error()), http.StatusBadRequest)
		return
	}
	writeJSONBody(w, http.StatusOK, run)
}

// runOutput is GET /api/v1/clusters/<c>/runs/<id>/output?node=N&task=T: the
// end of a task's output, as text.
func (s *Server) runOutput(w http.ResponseWriter, r *http.Request) {
	cluster, id := r.PathValue("cluster"), r.PathValue("id")
	node, task := r.URL.Query().Get("node"), r.URL.Query().Get("task")
	if !checkNames(w, "cluster", cluster, "node", node) || !s.authorized(w, r) || !s.runsReady(w) {
		return
	}
	out, err := s.Runs.Output(r.Context(), cluster, id, node, task)
	switch {
	case errors.Is(err, runs.ErrNotFound):
		http.Error(w, redact.Text(err.Error()), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, "reading the output: "+redact.Text(err.Error()), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write(out)
}
