package reports

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fuelsync/fuelsync/internal/safetext"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// A node's state in its cluster: converged, progressing or failed (Failed).
const (
	Converged   = "converged"
	Progressing = "progressing"
)

// A cluster's health.
const (
	Healthy  = "healthy"
	Degraded = "degraded"
	Unknown  = "unknown"
	// Progressing is a health too.
)

// NodeStates lists a node's states, in the order pages and metrics show them.
var NodeStates = []string{Converged, Progressing, Failed}

// Healths lists the healths.
var Healths = []string{Healthy, Progressing, Degraded, Unknown}

// MaxHealthProblems bounds Health.Problems.
const MaxHealthProblems = 20

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
// its last report (nil: none): converged when the report is a success on the
// node's graph applied now (the same view, or the same own graph), failed
// when it is a failure on it, progressing otherwise (running, not yet
// reported on the applied graph, or its graph no longer applied).
func (c *Convergence) NodeState(st *state.State, cluster, node string, last *Report) string {
	if last == nil || st == nil {
		return Progressing
	}
	name := render.NodeAddress(cluster, node, last.Graph).String()
	view, ok := render.ViewDigest(st.Artifacts, name)
	if !ok {
		return Progressing
	}
	if view != last.View && (last.GraphDigest == "" || c.GraphDigest(st, name) != last.GraphDigest) {
		return Progressing
	}
	switch last.Status {
	case Success:
		return Converged
	case Failed:
		return Failed
	}
	return Progressing
}

// Health is a cluster's convergence and health (fuelsync status, GET
// /api/v1/clusters).
type Health struct {
	// Health is healthy when every node converged, degraded when any failed,
	// progressing otherwise, and unknown before any of its nodes reported.
	Health      string `json:"health"`
	Converged   int    `json:"nodes_converged"`
	Progressing int    `json:"nodes_progressing"`
	Failed      int    `json:"nodes_failed"`
	// Problems name the failed nodes and their failed tasks (at most
	// MaxHealthProblems lines, escaped to one line each).
	Problems []string `json:"health_problems,omitempty"`
}

// ClusterHealth is the health of cluster in the applied state st, from the
// nodes' last reports (node → report), with the zero Convergence (no report:
// unknown).
func ClusterHealth(st *state.State, cluster string, last map[string]*Report) Health {
	return (*Convergence)(nil).ClusterHealth(st, cluster, last)
}

// ClusterHealth is the health of cluster in the applied state st, from the
// nodes' last reports (node → report).
func (c *Convergence) ClusterHealth(st *state.State, cluster string, last map[string]*Report) Health {
	h := Health{Health: Unknown}
	var cs *state.ClusterState
	if st != nil {
		cs = st.Clusters[cluster]
	}
	if cs == nil || len(cs.Nodes) == 0 {
		return h
	}
	reported := false
	var failed []string
	for _, node := range slices.Sorted(maps.Keys(cs.Nodes)) {
		r := last[node]
		if r != nil {
			reported = true
		}
		switch c.NodeState(st, cluster, node, r) {
		case Converged:
			h.Converged++
		case Failed:
			h.Failed++
			failed = append(failed, node)
		default:
			h.Progressing++
		}
	}
	switch {
	case !reported:
		return h
	case h.Failed > 0:
		h.Health = Degraded
	case h.Progressing > 0:
		h.Health = Progressing
	default:
		h.Health = Healthy
	}
	for i, node := range failed {
		if i == MaxHealthProblems-1 && len(failed) > MaxHealthProblems {
			h.Problems = append(h.Problems, fmt.Sprintf("and %d more failed nodes", len(failed)-i))
			break
		}
		h.Problems = append(h.Problems, FailureLine(last[node]))
	}
	return h
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
