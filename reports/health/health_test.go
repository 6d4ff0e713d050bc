package health

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Reports and applied graphs of the rows.
var (
	applied = &Graph{View: "view-1", Digest: "graph-1"}
	// movedOn: another node's task changed the view; the node's own graph
	// is the one it ran.
	movedOn = &Graph{View: "view-2", Digest: "graph-1"}
	// changed: the node's own graph changed.
	changed = &Graph{View: "view-3", Digest: "graph-3"}
	// untold: the view changed and the own graph cannot be told.
	untold = &Graph{View: "view-2"}
)

func ran(status string) *Report {
	return &Report{Status: status, View: "view-1", GraphDigest: "graph-1", Failure: "node n failed graph default"}
}

// TestNodeState: each rule of a node's state is a row.
func TestNodeState(t *testing.T) {
	noDigest := &Report{Status: Success, View: "view-1"}
	for name, tc := range map[string]struct {
		node Node
		want string
	}{
		"no report":                                     {Node{Name: "n", Applied: applied}, Progressing},
		"no report, nothing applied":                    {Node{Name: "n"}, Progressing},
		"its graph not in the applied set":              {Node{Name: "n", Last: ran(Success)}, Progressing},
		"a success on the applied view":                 {Node{Name: "n", Last: ran(Success), Applied: applied}, Converged},
		"a failure on the applied view":                 {Node{Name: "n", Last: ran(Failed), Applied: applied}, Failed},
		"running on the applied view":                   {Node{Name: "n", Last: ran("running"), Applied: applied}, Progressing},
		"an unknown status on the applied view":         {Node{Name: "n", Last: ran("other"), Applied: applied}, Progressing},
		"a success, the view moved on, same own graph":  {Node{Name: "n", Last: ran(Success), Applied: movedOn}, Converged},
		"a failure, the view moved on, same own graph":  {Node{Name: "n", Last: ran(Failed), Applied: movedOn}, Failed},
		"running, the view moved on, same own graph":    {Node{Name: "n", Last: ran("running"), Applied: movedOn}, Progressing},
		"a success, its own graph changed (stale)":      {Node{Name: "n", Last: ran(Success), Applied: changed}, Progressing},
		"a failure, its own graph changed (stale)":      {Node{Name: "n", Last: ran(Failed), Applied: changed}, Progressing},
		"a success, the own graph cannot be told":       {Node{Name: "n", Last: ran(Success), Applied: untold}, Progressing},
		"a report without a graph digest, same view":    {Node{Name: "n", Last: noDigest, Applied: applied}, Converged},
		"a report without a graph digest, view moved":   {Node{Name: "n", Last: noDigest, Applied: movedOn}, Progressing},
		"no digest on either side, view moved":          {Node{Name: "n", Last: noDigest, Applied: untold}, Progressing},
		"a success on the view, the own graph untold":   {Node{Name: "n", Last: ran(Success), Applied: &Graph{View: "view-1"}}, Converged},
		"a success on the view, another own graph told": {Node{Name: "n", Last: ran(Success), Applied: &Graph{View: "view-1", Digest: "graph-9"}}, Converged},
	} {
		t.Run(name, func(t *testing.T) {
			if got := NodeState(tc.node); got != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
}

// TestCluster: each rule of a cluster's health is a row.
func TestCluster(t *testing.T) {
	node := func(name string, last *Report, g *Graph) Node {
		if last != nil {
			last = &Report{Status: last.Status, View: last.View, GraphDigest: last.GraphDigest, Failure: "node " + name + " failed"}
		}
		return Node{Name: name, Last: last, Applied: g}
	}
	converged := func(name string) Node { return node(name, ran(Success), applied) }
	failed := func(name string) Node { return node(name, ran(Failed), applied) }
	var manyFailed, twentyFailed []Node
	for i := range 25 {
		manyFailed = append(manyFailed, failed(fmt.Sprintf("n-%02d", i)))
	}
	twentyFailed = manyFailed[:MaxProblems]
	var manyProblems, twentyProblems []string
	for i := range MaxProblems {
		twentyProblems = append(twentyProblems, fmt.Sprintf("node n-%02d failed", i))
	}
	manyProblems = append(append([]string{}, twentyProblems[:MaxProblems-1]...), "and 6 more failed nodes")
	for name, tc := range map[string]struct {
		nodes []Node
		want  Health
	}{
		"a cluster not applied, or without nodes": {nil, Health{Health: Unknown}},
		"no node reported":                        {[]Node{node("a", nil, applied), node("b", nil, nil)}, Health{Health: Unknown, Progressing: 2}},
		"one converged, one not reported":         {[]Node{converged("a"), node("b", nil, applied)}, Health{Health: Progressing, Converged: 1, Progressing: 1}},
		"one running":                             {[]Node{converged("a"), node("b", ran("running"), applied)}, Health{Health: Progressing, Converged: 1, Progressing: 1}},
		"only running":                            {[]Node{node("a", ran("running"), applied)}, Health{Health: Progressing, Progressing: 1}},
		"one on a stale graph":                    {[]Node{converged("a"), node("b", ran(Success), changed)}, Health{Health: Progressing, Converged: 1, Progressing: 1}},
		"one whose graph is no longer applied":    {[]Node{converged("a"), node("b", ran(Success), nil)}, Health{Health: Progressing, Converged: 1, Progressing: 1}},
		"all converged":                           {[]Node{converged("a"), converged("b"), node("c", ran(Success), movedOn)}, Health{Health: Healthy, Converged: 3}},
		"one failed": {[]Node{converged("a"), failed("b")},
			Health{Health: Degraded, Converged: 1, Failed: 1, Problems: []string{"node b failed"}}},
		"one failed, one progressing, failure wins": {[]Node{failed("a"), node("b", nil, applied)},
			Health{Health: Degraded, Progressing: 1, Failed: 1, Problems: []string{"node a failed"}}},
		"a failure on a stale graph is progressing": {[]Node{converged("a"), node("b", ran(Failed), changed)},
			Health{Health: Progressing, Converged: 1, Progressing: 1}},
		"problems in the order of the nodes' names": {[]Node{failed("c"), converged("b"), failed("a")},
			Health{Health: Degraded, Converged: 1, Failed: 2, Problems: []string{"node a failed", "node c failed"}}},
		"as many failed as problems allowed": {twentyFailed, Health{Health: Degraded, Failed: MaxProblems, Problems: twentyProblems}},
		"more failed than problems allowed":  {manyFailed, Health{Health: Degraded, Failed: 25, Problems: manyProblems}},
	} {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, Cluster(tc.nodes)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// TestClusterKeepsItsInput: Cluster sorts a copy, not its caller's slice.
func TestClusterKeepsItsInput(t *testing.T) {
	nodes := []Node{{Name: "b"}, {Name: "a"}}
	Cluster(nodes)
	if nodes[0].Name != "b" {
		t.Errorf("Cluster reordered its input: %v", nodes)
	}
}
