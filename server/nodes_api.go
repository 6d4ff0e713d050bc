package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/reports"
)

// NodeReport is a report as the API shows it: the last report of GET
// /api/v1/clusters/<c>/nodes/<n> with its tasks, every other without them
// (their counts and the first failed ones).
type NodeReport struct {
	Seq        int64      `json:"seq"`
	Graph      string     `json:"graph"`
	ETag       string     `json:"etag"`
	Status     string     `json:"status"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	ReceivedAt time.Time  `json:"received_at"`
	// Serial and Revision are the applied set whose graph the node ran.
	Serial      int64          `json:"serial"`
	Revision    string         `json:"revision"`
	Message     string         `json:"message,omitempty"`
	TaskCounts  map[string]int `json:"task_counts,omitempty"`
	FailedTasks []string       `json:"failed_tasks,omitempty"`
	Tasks       []reports.Task `json:"tasks,omitempty"`
	// TasksDropped says that the report's tasks were not kept (its node
	// wrote over its budget): only their counts and first failed ones.
	TasksDropped bool `json:"tasks_dropped,omitempty"`
}

// nodeReport is r without its tasks (nil for nil).
func nodeReport(r *reports.Report) *NodeReport {
	if r == nil {
		return nil
	}
	s := reports.Summarize(r)
	return &NodeReport{Seq: s.Seq, Graph: s.Graph, ETag: s.ETag, Status: s.Status, StartedAt: s.StartedAt, FinishedAt: s.FinishedAt,
		ReceivedAt: s.ReceivedAt, Serial: s.Serial, Revision: s.Revision, Message: s.Message, TaskCounts: s.TaskCounts, FailedTasks: s.FailedTasks,
		TasksDropped: s.TasksDropped}
}

// NodeDetail is GET /api/v1/clusters/<cluster>/nodes/<node>: the node as
// applied, its state, its last report with its tasks, and its kept reports
// (newest first, the last one included, without their tasks). What it reads
// is bounded: the history's summaries and one report whole.
type NodeDetail struct {
	Cluster  string            `json:"cluster"`
	Node     string            `json:"node"`
	Serial   int64             `json:"serial"`
	Revision string            `json:"revision"`
	ID       int               `json:"id"`
	Roles    []string          `json:"roles"`
	Graphs   map[string]string `json:"graphs"`
	State    string            `json:"state"`
	Last     *NodeReport       `json:"last"`
	History  []*NodeReport     `json:"history"`
}

// nodeDetail reads what NodeDetail shows; code and message say why not.
func (s *Server) nodeDetail(r *http.Request, cluster, node string) (*NodeDetail, int, string) {
	st, err := s.applied()
	if err != nil {
		return nil, http.StatusInternalServerError, "reading the applied state: " + redact.Text(err.Error())
	}
	cs := st.Clusters[cluster]
	if cs == nil {
		return nil, http.StatusNotFound, fmt.Sprintf("no cluster %q in the applied set (serial %d)", cluster, st.Serial)
	}
	n, ok := cs.Nodes[node]
	if !ok {
		return nil, http.StatusNotFound, fmt.Sprintf("cluster %q has no node %q in the applied set (serial %d, revision %.12s)", cluster, node, st.Serial, st.Revision)
	}
	d := &NodeDetail{Cluster: cluster, Node: node, Serial: st.Serial, Revision: cs.Revision, ID: n.ID, Roles: n.Roles, History: []*NodeReport{}}
	if d.Revision == "" {
		d.Revision = st.Revision
	}
	if d.Roles == nil {
		d.Roles = []string{}
	}
	if d.Graphs, err = s.nodeGraphs(st, cluster, node); err != nil {
		return nil, http.StatusInternalServerError, redact.Text(err.Error())
	}
	var history []*reports.Report
	var last *reports.Report
	if s.Loop.Reports != nil {
		if history, err = s.Loop.Reports.History(r.Context(), cluster, node); err != nil {
			return nil, http.StatusInternalServerError, "reading the node's reports: " + redact.Text(err.Error())
		}
		if last, err = s.Loop.Reports.Whole(r.Context(), cluster, node); err != nil {
			return nil, http.StatusInternalServerError, "reading the node's last report: " + redact.Text(err.Error())
		}
	}
	if last != nil {
		d.Last = nodeReport(last)
		d.Last.Tasks = last.Tasks
	}
	d.State = s.Loop.Reports.NodeState(st, cluster, node, s.lastReport(cluster, node, last))
	for _, h := range history {
		d.History = append(d.History, nodeReport(h))
	}
	return d, 0, ""
}

// lastReport is the node's last report as the store holds it (with the view
// its state is judged by), else stored, the newest of its history.
func (s *Server) lastReport(cluster, node string, stored *reports.Report) *reports.Report {
	if s.Loop.Reports != nil {
		if r := s.Loop.Reports.Last(cluster, node); r != nil {
			return r
		}
	}
	return stored
}

// node is GET /api/v1/clusters/<cluster>/nodes/<node>, for the API token, or
// the node's own token.
func (s *Server) node(w http.ResponseWriter, r *http.Request) {
	cluster, node := r.PathValue("cluster"), r.PathValue("node")
	if !s.authorizedNode(w, r, cluster, node) || !checkNames(w, "cluster", cluster, "node", node) {
		return
	}
	if _, ok := s.appliedOr503(w); !ok {
		return
	}
	d, code, msg := s.nodeDetail(r, cluster, node)
	if d == nil {
		http.Error(w, msg, code)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	writeJSONBody(w, http.StatusOK, d)
}
