// Package health decides a node's state and a cluster's health from data: the
// nodes' last reports and the digests of the graphs applied now. It reads no
// file, takes no lock and imports nothing of fuelsync; package reports
// gathers the data (from its store and the applied set) and calls it.
package health

import (
	"cmp"
	"fmt"
	"slices"
)

// A node's state in its cluster: converged, progressing or failed.
const (
	Converged   = "converged"
	Progressing = "progressing"
	Failed      = "failed"
)

// A cluster's health (Progressing is one too).
const (
	Healthy  = "healthy"
	Degraded = "degraded"
	Unknown  = "unknown"
)

// Success is the status of a report of a run that succeeded (Failed, of one
// that failed; any other status is a run not ended).
const Success = "success"

// NodeStates lists a node's states, in the order pages and metrics show them.
var NodeStates = []string{Converged, Progressing, Failed}

// Healths lists the healths.
var Healths = []string{Healthy, Progressing, Degraded, Unknown}

// MaxProblems bounds Health.Problems.
const MaxProblems = 20

// Report is what the decision reads of a node's last report.
type Report struct {
	// Status is the run's status: Success, Failed or running.
	Status string
	// View is the view digest of the graph the node ran (render.ViewDigest).
	View string
	// GraphDigest is the digest of the node's own graph it ran
	// (render.GraphDigest); "" when the report has none.
	GraphDigest string
	// Failure says in one line what failed (a problem of its cluster when
	// the node failed).
	Failure string
}

// Graph is the node's graph of the report's graph type in the applied set.
type Graph struct {
	// View is its view digest.
	View string
	// Digest is its own graph's digest; "" when it cannot be told. Read
	// only when the report's view is not View and the report has a
	// GraphDigest: the rule compares it then alone.
	Digest string
}

// Node is a node of a cluster with what its state is decided from.
type Node struct {
	Name string
	// Last is its last report; nil when it has not reported.
	Last *Report
	// Applied is the graph of Last's graph type applied now; nil when the
	// applied set has none (or there is no report).
	Applied *Graph
}

// NodeState is a node's state: converged when its last report is a success
// on its graph applied now (the same view, or the same own graph), failed
// when it is a failure on it, progressing otherwise (no report, running,
// not yet reported on the applied graph, or its graph no longer applied).
func NodeState(n Node) string {
	if n.Last == nil || n.Applied == nil {
		return Progressing
	}
	if n.Last.View != n.Applied.View && (n.Last.GraphDigest == "" || n.Applied.Digest != n.Last.GraphDigest) {
		return Progressing
	}
	switch n.Last.Status {
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
	// MaxProblems lines, escaped to one line each).
	Problems []string `json:"health_problems,omitempty"`
}

// Cluster is the health of a cluster of nodes (those of the applied state;
// none: a cluster not applied, or without nodes, is unknown). The problems
// are the failed nodes' Failure lines in the order of their names, the last
// of MaxProblems saying how many more failed when they are more.
func Cluster(nodes []Node) Health {
	h := Health{Health: Unknown}
	nodes = slices.SortedFunc(slices.Values(nodes), func(a, b Node) int { return cmp.Compare(a.Name, b.Name) })
	reported := false
	var failed []Node
	for _, n := range nodes {
		if n.Last != nil {
			reported = true
		}
		switch NodeState(n) {
		case Converged:
			h.Converged++
		case Failed:
			h.Failed++
			failed = append(failed, n)
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
	for i, n := range failed {
		if i == MaxProblems-1 && len(failed) > MaxProblems {
			h.Problems = append(h.Problems, fmt.Sprintf("and %d more failed nodes", len(failed)-i))
			break
		}
		h.Problems = append(h.Problems, n.Last.Failure)
	}
	return h
}
