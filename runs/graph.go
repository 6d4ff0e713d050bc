package runs

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/fuelsync/fuelsync/render"
)

// Graph is a cluster's graph of one type as a run schedules it: every task of
// every node (master and sync included) by index, with its requirements and
// dependents, its concurrency limit and its priority, and each node's
// fault-tolerance groups. It is built once per run (NewGraph) and never
// changed.
type Graph struct {
	Cluster, Type string
	Nodes         []Node
	Tasks         []Task
	// Groups are the fault-tolerance groups; a node in none is put in a group
	// of its own that tolerates no failure, as astute does.
	Groups []Group
	// Limits is the concurrency limit of each limit slot (a task id with a
	// strategy): how many nodes may run that task at once.
	Limits []int
	// Dangling counts the requirements on a task no node of the graph has:
	// they are dropped, as nailgun drops edges to tasks it did not place.
	Dangling int

	reqOff, reqs []int32 // requirements of task i: reqs[reqOff[i]:reqOff[i+1]]
	depOff, deps []int32 // dependents of task i
	byNode       map[string]int32
	byKey        map[taskKey]int32
}

// Node is a node of a Graph: its tasks are Tasks[First:End].
type Node struct {
	Name string
	// ID is the node's id in cluster.yaml (0 for master and sync).
	ID int
	// Sync says this is the sync pseudo node: its tasks are completed by the
	// coordinator (no agent runs them), when all they require has finished.
	Sync       bool
	First, End int32
	// Groups are the indices of the node's fault-tolerance groups.
	Groups []int32
	// Critical says the node fails the run when it fails: it is in a group
	// that tolerates no failure (nodes in no group are).
	Critical bool
}

// Group is a fault-tolerance group: the run stops when more than Tolerance of
// its nodes have failed.
type Group struct {
	Name      string
	Tolerance int
	Nodes     []int32
}

// NoGroup names the group of the nodes in no fault-tolerance group.
const NoGroup = "(no group)"

// Task is a task of a node.
type Task struct {
	ID   string
	Node int32
	// Noop says nothing runs it: a stage, group, skipped or noop task, or any
	// task of the sync node. It ends skipped when it is ready.
	Noop bool
	// Limit is its limit slot (Graph.Limits), -1 when unlimited.
	Limit int32
	// Priority orders a node's ready tasks: the longest chain of tasks that
	// wait for it, a cross-node step counting 10 (a preference, as astute's
	// weight is; never a rule of correctness).
	Priority int64
	// Def is the task's definition as rendered (what an agent runs).
	Def *render.DeployDef
}

type taskKey struct{ node, task string }

// NoopTypes are the task types nothing runs: they end skipped when ready.
var NoopTypes = []string{"skipped", "stage", "group", "noop"}

// NewGraph builds the Graph of a cluster's graph as read from an applied set.
// A requirement on a task no node has is dropped (Dangling counts them); a
// cycle is an error.
func NewGraph(cg *render.ClusterGraph) (*Graph, error) {
	g := &Graph{Cluster: cg.Cluster, Type: cg.Graph, byNode: map[string]int32{}, byKey: map[taskKey]int32{}}
	limitOf := map[string]int32{}
	for _, cn := range cg.Nodes {
		ni := int32(len(g.Nodes))
		n := Node{Name: cn.Name, ID: cn.ID, Sync: cn.Name == render.SyncNode, First: int32(len(g.Tasks))}
		for _, ct := range cn.Tasks {
			key := taskKey{cn.Name, ct.ID}
			if _, dup := g.byKey[key]; dup {
				return nil, fmt.Errorf("node %s has task %s twice", cn.Name, ct.ID)
			}
			g.byKey[key] = int32(len(g.Tasks))
			t := Task{ID: ct.ID, Node: ni, Def: ct.Def, Limit: -1,
				Noop: n.Sync || slices.Contains(NoopTypes, ct.Def.Type)}
			if !t.Noop {
				if limit, err := strategyLimit(ct.Def); err != nil {
					return nil, fmt.Errorf("node %s, task %s: %w", cn.Name, ct.ID, err)
				} else if limit > 0 {
					t.Limit = g.limitSlot(limitOf, ct.ID, limit)
				}
			}
			g.Tasks = append(g.Tasks, t)
		}
		n.End = int32(len(g.Tasks))
		g.byNode[cn.Name] = ni
		g.Nodes = append(g.Nodes, n)
	}
	g.link(cg)
	g.group(cg.Groups)
	return g, g.prioritise()
}

// limitSlot returns id's limit slot, made with limit when new; a task id
// defined with several limits takes the smallest (astute takes the last one
// it reads; the smallest is the one no definition exceeds).
func (g *Graph) limitSlot(slots map[string]int32, id string, limit int) int32 {
	s, ok := slots[id]
	if !ok {
		s = int32(len(g.Limits))
		slots[id] = s
		g.Limits = append(g.Limits, limit)
	}
	g.Limits[s] = min(g.Limits[s], limit)
	return s
}

// strategyLimit reads a task's parameters.strategy: one_by_one is 1, parallel
// its amount (0, missing or negative: unlimited), none 0 (unlimited). An
// amount that is not a number (a yaql expression, which fuelsync does not
// evaluate) is 1: the safe reading.
func strategyLimit(def *render.DeployDef) (int, error) {
	params, err := def.Parameters()
	if err != nil {
		return 0, err
	}
	s, _ := params["strategy"].(map[string]any)
	switch s["type"] {
	case "one_by_one":
		return 1, nil
	case "parallel":
		switch a := s["amount"].(type) {
		case nil:
			return 0, nil
		case int:
			return max(a, 0), nil
		case float64:
			if a >= 1 && a < math.MaxInt32 {
				return int(a), nil
			}
			return 0, nil
		default:
			return 1, nil
		}
	}
	return 0, nil
}

// link builds the requirements and dependents (CSR) from each task's
// requirements; those on a task no node has are dropped.
func (g *Graph) link(cg *render.ClusterGraph) {
	n := len(g.Tasks)
	g.reqOff = make([]int32, n+1)
	count := make([]int32, n)
	i := 0
	for _, cn := range cg.Nodes {
		for _, ct := range cn.Tasks {
			for _, r := range ct.Requires {
				j, ok := g.byKey[taskKey{r.Node, r.Task}]
				if !ok || int(j) == i {
					g.Dangling++
					continue
				}
				g.reqs = append(g.reqs, j)
				count[j]++
			}
			i++
			g.reqOff[i] = int32(len(g.reqs))
		}
	}
	g.depOff = make([]int32, n+1)
	for t := range n {
		g.depOff[t+1] = g.depOff[t] + count[t]
	}
	g.deps = make([]int32, len(g.reqs))
	fill := slices.Clone(g.depOff[:n])
	for t := range n {
		for _, r := range g.Requires(int32(t)) {
			g.deps[fill[r]] = int32(t)
			fill[r]++
		}
	}
}

// group sets each node's groups and criticality: nodes (but sync) in no group
// form a group of their own that tolerates none.
func (g *Graph) group(groups []render.FaultToleranceGroup) {
	for _, fg := range groups {
		gr := Group{Name: fg.Name, Tolerance: fg.FaultTolerance}
		for _, name := range fg.Nodes {
			if ni, ok := g.byNode[name]; ok && !g.Nodes[ni].Sync && !slices.Contains(gr.Nodes, ni) {
				gr.Nodes = append(gr.Nodes, ni)
			}
		}
		if len(gr.Nodes) > 0 {
			g.Groups = append(g.Groups, gr)
		}
	}
	var none []int32
	for ni, n := range g.Nodes {
		if n.Sync {
			continue
		}
		found := false
		for _, gr := range g.Groups {
			found = found || slices.Contains(gr.Nodes, int32(ni))
		}
		if !found {
			none = append(none, int32(ni))
		}
	}
	if len(none) > 0 {
		g.Groups = append(g.Groups, Group{Name: NoGroup, Tolerance: 0, Nodes: none})
	}
	for gi, gr := range g.Groups {
		for _, ni := range gr.Nodes {
			g.Nodes[ni].Groups = append(g.Nodes[ni].Groups, int32(gi))
			g.Nodes[ni].Critical = g.Nodes[ni].Critical || gr.Tolerance <= 0
		}
	}
}

// prioritise sets each task's priority in reverse topological order, and
// refuses a cycle.
func (g *Graph) prioritise() error {
	n := len(g.Tasks)
	indeg := make([]int32, n)
	for t := range n {
		indeg[t] = g.reqOff[t+1] - g.reqOff[t]
	}
	order := make([]int32, 0, n)
	for t := range n {
		if indeg[t] == 0 {
			order = append(order, int32(t))
		}
	}
	for i := 0; i < len(order); i++ {
		for _, d := range g.Dependents(order[i]) {
			if indeg[d]--; indeg[d] == 0 {
				order = append(order, d)
			}
		}
	}
	if len(order) < n {
		for t := range n {
			if indeg[t] > 0 {
				return fmt.Errorf("the graph has a cycle through task %s of node %s", g.Tasks[t].ID, g.Nodes[g.Tasks[t].Node].Name)
			}
		}
	}
	for i := len(order) - 1; i >= 0; i-- {
		t := order[i]
		var p int64
		for _, d := range g.Dependents(t) {
			step := int64(1)
			if g.Tasks[d].Node != g.Tasks[t].Node {
				step = 10
			}
			p = max(p, g.Tasks[d].Priority+step)
		}
		g.Tasks[t].Priority = p
	}
	return nil
}

// Requires returns the tasks task t requires.
func (g *Graph) Requires(t int32) []int32 { return g.reqs[g.reqOff[t]:g.reqOff[t+1]] }

// Dependents returns the tasks that require task t.
func (g *Graph) Dependents(t int32) []int32 { return g.deps[g.depOff[t]:g.depOff[t+1]] }

// Node returns the index of the node called name.
func (g *Graph) Node(name string) (int32, bool) {
	ni, ok := g.byNode[name]
	return ni, ok
}

// Task returns the index of task id of node.
func (g *Graph) Task(node, id string) (int32, bool) {
	t, ok := g.byKey[taskKey{node, id}]
	return t, ok
}

// Name is "task@node", for messages.
func (g *Graph) Name(t int32) string { return g.Tasks[t].ID + "@" + g.Nodes[g.Tasks[t].Node].Name }

// String lists the graph as text: each node with its tasks and requirements
// (tests compare it).
func (g *Graph) String() string {
	var b strings.Builder
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "%s:\n", n.Name)
		for t := n.First; t < n.End; t++ {
			fmt.Fprintf(&b, "  %s", g.Tasks[t].ID)
			for i, r := range g.Requires(t) {
				sep := " <- "
				if i > 0 {
					sep = ", "
				}
				b.WriteString(sep + g.Name(r))
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}
