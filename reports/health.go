package reports

import (
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports/health"
	"github.com/fuelsync/fuelsync/state"
)

// A node's state in its cluster: converged, progressing or failed (Failed);
// the decision is package health's.
const (
	Converged   = health.Converged
	Progressing = health.Progressing
)

// A cluster's health.
const (
	Healthy  = health.Healthy
	Degraded = health.Degraded
	Unknown  = health.Unknown
	// Progressing is a health too.
)

// NodeStates lists a node's states, in the order pages and metrics show them.
var NodeStates = health.NodeStates

// Healths lists the healths.
var Healths = health.Healths

// MaxHealthProblems bounds Health.Problems.
const MaxHealthProblems = health.MaxProblems

// Convergence decides whether nodes converged on their graphs in an applied
// state. A node has converged on the graph it ran, as its report says, while
// its own graph is unchanged: its node file and the catalogue entries of its
// own tasks (render.GraphDigest), whatever the commits did to other nodes'
// tasks. The zero value compares the reports' view digests only (which cover
// the whole catalogue), reading no file.
type Convergence struct {
	// Sets reads the files of the applied set of a serial (state.Workdir's
	// SetFS); nil: a report whose view digest is not the applied one is
	// not converged.
	Sets func(serial int64) fs.FS
}

// GraphDigest is render.GraphDigest of node file name in the applied state
// st, "" when it cannot be told (no Sets, or a file missing or unreadable).
func (c *Convergence) GraphDigest(st *state.State, name string) string {
	if c == nil || c.Sets == nil || st == nil {
		return ""
	}
	d, err := render.GraphDigest(c.Sets(st.Serial), st.Artifacts, name)
	if err != nil {
		return ""
	}
	return d
}

// NodeState is the state of node of cluster in the applied state st, given
// its last report (nil: none): health.NodeState of what node gathers.
func (c *Convergence) NodeState(st *state.State, cluster, node string, last *Report) string {
	return health.NodeState(c.node(st, cluster, node, last))
}

// node gathers what the state of node of cluster in the applied state st is
// decided from: its last report (nil: none) and its graph of the report's
// graph type applied now, whose own digest is read (from the applied set)
// only when the rule compares it.
func (c *Convergence) node(st *state.State, cluster, node string, last *Report) health.Node {
	n := health.Node{Name: node}
	if last == nil {
		return n
	}
	n.Last = &health.Report{Status: last.Status, View: last.View, GraphDigest: last.GraphDigest}
	if last.Status == Failed {
		n.Last.Failure = FailureLine(last)
	}
	if st == nil {
		return n
	}
	name := render.NodeAddress(cluster, node, last.Graph).String()
	view, ok := render.ViewDigest(st.Artifacts, name)
	if !ok {
		return n
	}
	n.Applied = &health.Graph{View: view}
	if view != last.View && last.GraphDigest != "" {
		n.Applied.Digest = c.GraphDigest(st, name)
	}
	return n
}

// Health is a cluster's convergence and health (fuelsync status, GET
// /api/v1/clusters): health.Health.
type Health = health.Health

// ClusterHealth is the health of cluster in the applied state st, from the
// nodes' last reports (node → report), with the zero Convergence (no report:
// unknown).
func ClusterHealth(st *state.State, cluster string, last map[string]*Report) Health {
	return (*Convergence)(nil).ClusterHealth(st, cluster, last)
}

// ClusterHealth is the health of cluster in the applied state st, from the
// nodes' last reports (node → report): health.Cluster of its nodes in st.
func (c *Convergence) ClusterHealth(st *state.State, cluster string, last map[string]*Report) Health {
	var cs *state.ClusterState
	if st != nil {
		cs = st.Clusters[cluster]
	}
	if cs == nil {
		return health.Cluster(nil)
	}
	nodes := make([]health.Node, 0, len(cs.Nodes))
	for node := range cs.Nodes {
		nodes = append(nodes, c.node(st, cluster, node, last[node]))
	}
	return health.Cluster(nodes)
}

// FailureLine says in one line which node failed which graph, and its failed
// tasks: "node node-2 failed graph default: tasks keystone failed: <message>".
func FailureLine(r *Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "node %s failed graph %s", r.Node, r.Graph)
	if len(r.FailedTasks) > 0 {
		word := "task"
		if r.TaskCounts[Failed] > 1 {
			word = "tasks"
		}
		fmt.Fprintf(&b, ": %s %s", word, strings.Join(r.FailedTasks, ", "))
		if more := r.TaskCounts[Failed] - len(r.FailedTasks); more > 0 {
			fmt.Fprintf(&b, " and %d more", more)
		}
		b.WriteString(" failed")
	}
	if msg, _, _ := strings.Cut(strings.TrimSpace(r.Message), "\n"); msg != "" {
		if len(msg) > 200 {
			cut := 200
			for cut > 0 && !utf8.RuneStart(msg[cut]) {
				cut--
			}
			msg = msg[:cut] + "…"
		}
		b.WriteString(": " + msg)
	}
	return safetext.Line(b.String())
}

// Health is the health of cluster in the applied state st, from the reports
// the store holds.
func (s *Store) Health(st *state.State, cluster string) Health {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.Convergence.ClusterHealth(st, cluster, s.last[cluster])
}
