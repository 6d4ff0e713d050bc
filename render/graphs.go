package render

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/expr"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render/selector"
)

// SyncNode is the pseudo node of stage tasks.
const SyncNode = "sync"

// Graph is one graph type of a cluster, resolved onto its nodes.
type Graph struct {
	Type string
	// Nodes are the cluster's nodes by id, then master and sync when they have tasks.
	Nodes []*NodeGraph
	// FaultTolerance lists the groups with their nodes and fault tolerance.
	FaultTolerance []FaultToleranceGroup
	byNode         map[string]*NodeGraph
	defs           map[string]*TaskDef // the winning definition of each id
	ix             *selector.Index
	m              *Model
	ids            []string // every task id of the graph, sorted

	cycles bool // a dependency cycle was reported

	memberOnce sync.Once
	catOnce    sync.Once
	cat        *catalogueChoice    // the task catalogue's entries (catalogueOf)
	memberOf   map[string][]string // task id → the groups whose tasks: list it
}

// Node returns the graph of node name, or nil.
func (g *Graph) Node(name string) *NodeGraph { return g.byNode[name] }

// Definition returns the definition of task id that won the merge, or nil when the
// graph has no task id.
func (g *Graph) Definition(id string) *TaskDef { return g.defs[id] }

// FaultToleranceGroup is a group task's nodes and tolerated failures.
type FaultToleranceGroup struct {
	Name           string
	Nodes          []string
	FaultTolerance int
}

// NodeGraph is the tasks of one node in one graph, in topological order.
type NodeGraph struct {
	Node  string
	ID    int
	Tags  *NodeTags // nil for master and sync
	Tasks []*PlacedTask
	g     *Graph
	rank  int32         // position among the graph's nodes: cluster nodes, master, sync
	class int32         // the node's class (classKey), numbered by first node; 0 for master and sync
	byID  []*PlacedTask // the tasks sorted by id
	// fanIns are the sync node's stages' fan-ins, by task idx (see gather).
	fanIns []*fanIn
}

// Task returns the placed task id, or nil. On a rendered graph the id is looked
// up once in the graph's sorted ids, and the node's tasks by position.
func (n *NodeGraph) Task(id string) *PlacedTask {
	if n.g != nil && len(n.g.ids) > 0 {
		idx, ok := slices.BinarySearch(n.g.ids, id)
		if !ok {
			return nil
		}
		return n.taskAt(int32(idx))
	}
	i, ok := slices.BinarySearchFunc(n.byID, id, func(pt *PlacedTask, id string) int { return strings.Compare(pt.ID(), id) })
	if !ok {
		return nil
	}
	return n.byID[i]
}

// taskAt returns the node's task of position idx in its graph's ids, or nil.
func (n *NodeGraph) taskAt(idx int32) *PlacedTask {
	i, ok := slices.BinarySearchFunc(n.byID, idx, func(pt *PlacedTask, idx int32) int { return cmp.Compare(pt.idx, idx) })
	if !ok {
		return nil
	}
	return n.byID[i]
}

// PlacedTask is a task on a node.
type PlacedTask struct {
	Def *TaskDef
	// requires are the edges the task holds (see Requires): all of them, but for a
	// stage of the sync node the ones its fanIn gathers, and for a task that
	// shares its definition's edges those (sharing). The tasks at one position on
	// the nodes of a signature may hold one list (classEdges): read each edge
	// through edge.
	requires []Edge
	node     *NodeGraph
	idx      int32 // the task id's position in the graph's sorted ids
	seq      int32 // the task's position among every placed task of the graph, by id then node
}

// gather is the fan-in of pt, a stage of the sync node (the tasks of other nodes
// it gathers), or nil. Few tasks have one: the sync node holds them.
func (pt *PlacedTask) gather() *fanIn {
	if pt.node != nil && pt.node.fanIns != nil {
		return pt.node.fanIns[pt.idx]
	}
	return nil
}

// sharing is pt's use of the cross-node edges of its definition's shared
// entries (sharedEdges), merged with requires as they are read, or nil. The
// definition's list holds it, by node.
func (pt *PlacedTask) sharing() *sharedRef {
	if d := pt.Def; d != nil && d.shared != nil && pt.node != nil && int(pt.node.rank) < len(d.shared.refs) {
		if r := &d.shared.refs[pt.node.rank]; r.list != nil {
			return r
		}
	}
	return nil
}

// ID is the task's id: its definition's.
func (pt *PlacedTask) ID() string { return pt.Def.Task.ID }

// Node returns the name of the node the task is placed on.
func (pt *PlacedTask) Node() string { return pt.node.Node }

// Type is the task's type once placed: its definition's, or "skipped" when
// its legacy string condition is false (typeOf). What a placed task has of
// its definition is read from it, not held on each of the graph's millions of
// placed tasks.
func (pt *PlacedTask) Type() string { return pt.Def.typ }

// Condition is the value of the task's legacy string condition (nil when
// none, or when it could not be evaluated).
func (pt *PlacedTask) Condition() *bool { return pt.Def.condVal }

// DynamicRequires are the task's yaql cross-dependencies, verbatim.
func (pt *PlacedTask) DynamicRequires() []any {
	if len(pt.Def.dynamic) == 0 {
		return nil
	}
	return pt.Def.dynamic
}

// Via is one reason a task is on a node.
type Via struct {
	// Selector is the key that selected the node (tags, roles, role, groups), or
	// "group" when a group lists the task, or "stage".
	Selector string `json:"selector"`
	Item     string `json:"item,omitempty"` // the selector entry, or the group's id
	Tag      string `json:"tag,omitempty"`  // the node tag it matched
}

// Edge is a dependency: the dependent task requires the task Task() on the
// node Node(). Its source (the entry it comes from) is shared by every node
// the same entry binds. Two words: a graph holds millions of edges.
//
// Inside the package, an edge held by a task may name a template of its
// target (see classEdges): the edge to the task at that position on the
// holder's own node. Its holder's edge method gives the edge to the task
// itself, as every edge outside the package is.
type Edge struct {
	*EdgeSource
	raw *PlacedTask // the target, or its template (raw.seq < 0)
}

// edge is e, an edge pt holds, to its target itself: a template (see
// classEdges) stands for the task at its position on pt's node.
func (pt *PlacedTask) edge(e Edge) Edge {
	if e.raw.seq < 0 {
		e.raw = pt.node.byID[-1-e.raw.seq]
	}
	return e
}

// Task is the id of the task the edge requires.
func (e Edge) Task() string { return e.raw.ID() }

// Node is the node of the task the edge requires.
func (e Edge) Node() string { return e.raw.node.Node }

// EdgeSource says where an edge comes from.
type EdgeSource struct {
	// Origin is "requires", "required_for of <id>", "cross-depends" or
	// "cross-depended-by of <id>".
	Origin string
	// Via lists the absent tasks the edge was kept through (transitive ordering).
	Via []string
	// Range is the entry that binds the edge (for an edge kept through absent tasks,
	// the last one).
	Range hcl.Range
}

// Describe is the edge's origin with the tasks it passes through.
func (e Edge) Describe() string {
	if len(e.Via) == 0 {
		return e.Origin
	}
	return e.Origin + " via " + strings.Join(e.Via, ", ")
}

// TaskDef is the definition of a task id that won the merge.
type TaskDef struct {
	Task *loader.Task
	// Layer is "cluster", "plugin <name>" or "release".
	Layer  string
	Plugin *loader.Plugin
	// Overrode are the lower layers' definitions of the same id.
	Overrode []*TaskDef
	// Defaults are the values nailgun added to a plugin's task (Task holds them).
	Defaults []TaskDefault

	// What a graph builder works out once per definition, whatever the number of
	// nodes it lands on.
	idx      int32
	condDone bool
	typ      string // the type after the legacy condition
	condVal  *bool
	edgeDone bool
	dynamic  []any         // yaql cross-dependencies, verbatim
	cross    []*crossEntry // cross-depends and cross-depended-by entries
	stages   []stageEdge   // sync-node stages this task is required_for
	shared   *sharedEdges  // the edges of its cross-depends entries on other nodes than self
	// crossCap is how many edges its cross-depends entries on other nodes than
	// self bind at most: the room its tasks' lists keep for them (instantiate).
	crossCap int
}

// RenderGraphs resolves every graph type of the cluster onto its nodes (the graph
// types in parallel).
func (m *Model) RenderGraphs() ([]*Graph, hcl.Diagnostics) {
	graphs, diags := renderAll([]*Model{m}, false)
	return graphs[0], diags
}

// graphTypes lists the graph types of the release, the enabled plugins and the
// cluster, sorted with default first.
func (m *Model) graphTypes() []string {
	set := map[string]bool{"default": true}
	for _, g := range m.Release.Graphs {
		set[g.Type] = true
	}
	for _, p := range m.Plugins {
		for _, g := range p.Plugin.Graphs {
			set[g.Type] = true
		}
	}
	var out []string
	for t := range set {
		if t != "default" {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return append([]string{"default"}, out...)
}

// mergeTasks merges the task definitions of one graph type: cluster, then plugins,
// then release; the first definition of an id wins wholesale. Two plugins defining
// one id are an error of the model (pluginTaskOverlaps), which is then not rendered;
// the later definition is left out.
func (m *Model) mergeTasks(typ string) (map[string]*TaskDef, []string) {
	defs := map[string]*TaskDef{}
	var order []string
	layer := func(tasks []*loader.Task, name string, p *loader.Plugin, defaults map[*loader.Task][]TaskDefault) {
		seen := map[string]bool{}
		for _, t := range tasks {
			if t.ID == "" || seen[t.ID] {
				continue
			}
			seen[t.ID] = true
			d := &TaskDef{Task: t, Layer: name, Plugin: p, Defaults: defaults[t]}
			switch w := defs[t.ID]; {
			case w == nil:
				defs[t.ID] = d
				order = append(order, t.ID)
			case p == nil || w.Plugin == nil:
				w.Overrode = append(w.Overrode, d)
			}
		}
	}
	if typ == "default" {
		layer(m.Cluster.Tasks, "cluster", nil, nil)
	}
	for _, ep := range m.Plugins {
		for _, g := range ep.Graphs() {
			if g.Type == typ {
				layer(g.Tasks, "plugin "+ep.Plugin.Name, ep.Plugin, ep.taskDefaults())
			}
		}
	}
	for _, g := range m.Release.Graphs {
		if g.Type == typ {
			layer(g.Tasks, "release", nil, nil)
		}
	}
	return defs, order
}

// selectorOf returns the key and value that select a task's nodes: tags, else
// roles/role, else groups (with resolution: roles, tags are not read).
func (m *Model) selectorOf(t *loader.Task) (string, *loader.Value) {
	keys := []string{"tags", "roles", "role", "groups"}
	if m.Cluster.Resolution == "roles" {
		keys = keys[1:]
	}
	for _, k := range keys {
		if v := t.Data.Get(k); v != nil && !v.IsNull() {
			return k, v
		}
	}
	return "", nil
}

// graphBuilder holds the state of rendering one graph type of one cluster. Tasks
// are numbered by their position in the sorted ids (idx) and nodes by their rank
// (cluster nodes by id, then master, then sync). Every node of a class has the
// same tasks: where task idx sits in a node's byID is its placement class's
// (pos), so the tasks of a graph are looked up without a table of every node
// and every id.
type graphBuilder struct {
	m     *Model
	typ   string
	g     *Graph
	ix    *selector.Index
	defs  map[string]*TaskDef
	ids   []string
	index map[string]int32 // task id → idx
	nodes []*NodeGraph     // by rank
	rank  map[string]int32 // node name → rank
	sync  *NodeGraph
	// pclass[rank] is the node's placement class: its class for a cluster
	// node, one of its own for the master and the sync node.
	pclass []int32
	// pos[pclass*len(ids)+idx] is task idx's position in the byID of the nodes
	// of that placement class, or -1 when they do not run it.
	pos    []int32
	placed []*PlacedTask // every placed task, by seq
	// seqNode and seqIdx are the rank of the node and the idx of each placed
	// task, by seq: the order reads them without following its pointer.
	seqNode, seqIdx []int32
	defAt           []*TaskDef // by idx
	slab            []PlacedTask

	diags    hcl.Diagnostics
	warned   map[string]bool
	matchers map[string]*nameMatcher
	rel      relation

	dirty []uint64 // by seq: the task's edges need sorting (edges)
	// Buffers, not cleared between uses: what they point to is the graph's.
	cross     []Edge          // crossEdges' buffer of a task's own cross-node edges
	selfTasks []*PlacedTask   // entryTasks' buffer of the tasks of a self entry
	pending   []sharedPending // the tasks whose shared edges settleShared checks
	// sharedLists are the graph's shared edge lists (sharedEdgesOf), in order.
	sharedLists []*sharedEdges
	members     [][]int32 // by class: the ranks of its built nodes, ascending
	// aliases are the nodes not built with classes set, with their class.
	aliases []classAlias
}

// classAlias is a node of class c that a builder by classes does not build.
type classAlias struct {
	node string
	c    int32
}

// renderGraph resolves graph type typ onto the cluster's nodes. With classes set it
// builds one node per class of nodes (see classKey) and is only good for its
// diagnostics; the caller renders again without classes when it reports a cycle,
// since a cycle in the graph of classes may not be one of the nodes.
func (m *Model) renderGraph(typ string, classes bool) (*Graph, hcl.Diagnostics) {
	gb := m.placeGraph(typ, classes)
	// 3. Edges, normalised onto the dependent task.
	gb.edges()
	// 4. Topological order, cycles reported.
	gb.order()
	for _, ng := range gb.nodes[len(gb.g.Nodes):] {
		if len(ng.byID) > 0 {
			gb.g.Nodes = append(gb.g.Nodes, ng)
		}
	}
	return gb.g, gb.diags
}

// placeGraph places the tasks of graph type typ on the cluster's nodes (on
// the first node of each class with classes set), without their edges: the
// first steps of renderGraph.
func (m *Model) placeGraph(typ string, classes bool) *graphBuilder {
	gb := &graphBuilder{m: m, typ: typ, warned: map[string]bool{}, matchers: map[string]*nameMatcher{}}
	gb.g = &Graph{Type: typ, byNode: map[string]*NodeGraph{}, m: m}
	gb.defs, gb.ids = m.mergeTasks(typ)
	sort.Strings(gb.ids)
	gb.index = make(map[string]int32, len(gb.ids))
	for i, id := range gb.ids {
		gb.index[id] = int32(i)
		gb.defs[id].idx = int32(i)
	}
	gb.g.defs, gb.g.ids = gb.defs, gb.ids
	gb.addNodes(classes)
	// place marks a task of a placement class with 1 in pos; indexNodes turns
	// the marks into positions.
	gb.pos = make([]int32, (len(gb.members)+2)*len(gb.ids))
	// 1. Resolve every non-group task to its nodes; stages go to the sync node.
	for _, id := range gb.ids {
		if d := gb.defs[id]; d.Task.Type != "group" {
			gb.placeTask(d)
		}
	}
	// 2. Groups: each member is placed on the group's nodes.
	for _, id := range gb.ids {
		if d := gb.defs[id]; d.Task.Type == "group" {
			gb.placeGroup(d)
		}
	}
	gb.indexNodes()
	return gb
}

// addNodes numbers the cluster's nodes by id (rank), then the master and the
// sync node, groups the cluster nodes in classes, and gives every node its
// placement class: its class, or one of its own for the master and the sync
// node.
//
// Nodes with the same resolution tags form a class: every selector selects all
// of a class or none of it, so its nodes get the same tasks and local edges.
// Selectors are resolved once per class, over the first node of each class (by
// id), and a selected class stands for its members (see ranks). With classes
// set, only the first node of each class is built.
func (gb *graphBuilder) addNodes(classes bool) {
	nodeTags := gb.m.nodeTagList()
	nodes := make([]selector.Node, 0, len(nodeTags))
	gb.rank = make(map[string]int32, len(nodeTags)+2)
	classOf := map[string]int32{}
	var firstNodes []selector.Node // the first node of each class, by class
	for _, nt := range nodeTags {
		nodes = append(nodes, selector.Node{Name: nt.Node.Name, ID: nt.Node.ID, Tags: nt.Resolution})
		key := classKey(nt.Resolution)
		c, ok := classOf[key]
		if !ok {
			c = int32(len(firstNodes))
			classOf[key] = c
			firstNodes = append(firstNodes, nodes[len(nodes)-1])
			gb.members = append(gb.members, nil)
		} else if classes {
			gb.aliases = append(gb.aliases, classAlias{nt.Node.Name, c})
			continue
		}
		ng := &NodeGraph{Node: nt.Node.Name, ID: nt.Node.ID, Tags: nt, class: c}
		gb.addNode(ng, c)
		gb.g.Nodes = append(gb.g.Nodes, ng)
		gb.members[c] = append(gb.members[c], ng.rank)
	}
	gb.addNode(&NodeGraph{Node: selector.Master}, int32(len(gb.members)))
	gb.sync = &NodeGraph{Node: SyncNode}
	gb.addNode(gb.sync, int32(len(gb.members))+1)
	// The first node of a selection by id is the first node of its first class, so
	// policy any picks the same node from either index. Provenance (Via) asks
	// about any node: the graph keeps an index of every node.
	gb.ix = selector.NewIndex(firstNodes)
	gb.g.ix = gb.ix
	if !classes && len(firstNodes) < len(nodes) {
		gb.g.ix = selector.NewIndex(nodes)
	}
}

// addNode gives ng the next rank, in placement class pclass.
func (gb *graphBuilder) addNode(ng *NodeGraph, pclass int32) {
	ng.g, ng.rank = gb.g, int32(len(gb.nodes))
	gb.nodes = append(gb.nodes, ng)
	gb.pclass = append(gb.pclass, pclass)
	gb.g.byNode[ng.Node] = ng
	gb.rank[ng.Node] = ng.rank
}

// newPlaced returns a zeroed placed task from the builder's slab.
func (gb *graphBuilder) newPlaced() *PlacedTask {
	if len(gb.slab) == 0 {
		gb.slab = make([]PlacedTask, 1024)
	}
	pt := &gb.slab[0]
	gb.slab = gb.slab[1:]
	return pt
}

// place puts definition d on the nodes of the placement class of the node of
// rank r (a selection holds whole classes), unless it is there already
// (selected by its own selector and by a group, say). The tasks themselves are
// made by indexNodes.
func (gb *graphBuilder) place(d *TaskDef, r int32) {
	s := &gb.pos[int(gb.pclass[r])*len(gb.ids)+int(d.idx)]
	if *s != 0 {
		return
	}
	*s = 1
	gb.typeOf(d) // its type and condition, on its definition
}

// at returns the task idx placed on the node of rank r, or nil.
func (gb *graphBuilder) at(r, idx int32) *PlacedTask {
	if p := gb.pos[int(gb.pclass[r])*len(gb.ids)+int(idx)]; p >= 0 {
		return gb.nodes[r].byID[p]
	}
	return nil
}

// runs reports whether the node of rank r runs task idx.
func (gb *graphBuilder) runs(r, idx int32) bool {
	return gb.pos[int(gb.pclass[r])*len(gb.ids)+int(idx)] >= 0
}

// resolve returns the ranks of the nodes a definition selects (nil for a task
// without a selector or with a yaql one: it runs nowhere here).
func (gb *graphBuilder) resolve(d *TaskDef) []int32 {
	return gb.ranks(gb.selected(d))
}

// selected returns the names of the nodes a definition's selector selects: the
// first node of each class it selects, and the pseudo nodes it names; the sync
// node for a stage (nil for a task without a selector or with a yaql one).
func (gb *graphBuilder) selected(d *TaskDef) []string {
	if d.Task.Type == "stage" {
		return []string{SyncNode}
	}
	_, sel := gb.m.selectorOf(d.Task)
	if sel == nil || sel.IsMap() {
		// No selector: the task runs nowhere (the override idiom {id, type:
		// skipped}); a yaql selector is evaluated by the deployer.
		return nil
	}
	names, _ := gb.ix.Resolve(sel)
	return names
}

// ranks returns the ranks of the nodes named, each the first node of its class,
// with every node of their classes: first the pseudo nodes named (the master comes
// first in a selection), then the cluster nodes by rank.
func (gb *graphBuilder) ranks(names []string) []int32 {
	var out []int32
	classes := 0
	for _, n := range names {
		r, ok := gb.rank[n]
		if !ok {
			continue
		}
		ng := gb.nodes[r]
		if ng.Tags == nil {
			out = append(out, r)
			continue
		}
		if classes++; classes == 1 && len(out) == 0 && len(names) == 1 {
			return gb.members[ng.class] // a shared list: callers do not modify it
		}
		out = append(out, gb.members[ng.class]...)
	}
	if classes > 1 {
		slices.Sort(out[len(out)-countCluster(gb, out):])
	}
	return out
}

// countCluster counts the cluster nodes at the end of ranks' result.
func countCluster(gb *graphBuilder, out []int32) int {
	n := 0
	for i := len(out) - 1; i >= 0 && gb.nodes[out[i]].Tags != nil; i-- {
		n++
	}
	return n
}

// classKey is the key of a node's class: its resolution tags, sorted, without
// duplicates (what the selectors read of a node).
func classKey(resolution []string) string {
	tags := slices.Clone(resolution)
	slices.Sort(tags)
	return strings.Join(slices.Compact(tags), "\x00")
}

// placeTask places a non-group definition on the classes of nodes it selects
// (place marks a whole class from any of its nodes).
func (gb *graphBuilder) placeTask(d *TaskDef) {
	for _, n := range gb.selected(d) {
		if r, ok := gb.rank[n]; ok {
			gb.place(d, r)
		}
	}
}

// placeGroup resolves a group and places its members on its nodes.
func (gb *graphBuilder) placeGroup(d *TaskDef) {
	t := d.Task
	ranks := gb.resolve(d)
	names := make([]string, len(ranks))
	for i, r := range ranks {
		names[i] = gb.nodes[r].Node
	}
	ft := selector.FaultTolerance(t.Data.Get("fault_tolerance"), len(names))
	if len(names) > 0 {
		gb.g.FaultTolerance = append(gb.g.FaultTolerance, FaultToleranceGroup{Name: t.ID, Nodes: names, FaultTolerance: ft})
	}
	for _, it := range items(t.Data.Get("tasks")) {
		id := it.String()
		md := gb.defs[id]
		switch {
		case md == nil:
			gb.diags = append(gb.diags, withDetail(errorAt(it.Range, "group %s lists task %q, which is not in graph %s", t.ID, id, gb.typ),
				"A group's tasks: names tasks of the same graph."))
		case md.Task.Type == "group":
			gb.diags = append(gb.diags, errorAt(it.Range, "group %s lists %s, which is a group: a group's tasks cannot be groups", t.ID, id))
		case md.Task.Type == "stage":
			gb.warnOnce(it.Range, "group %s lists the stage %s, which is ignored: stages run on the sync node", t.ID, id)
		default:
			for _, r := range ranks {
				gb.place(md, r)
			}
		}
	}
}

// indexNodes makes each node's tasks, in id order (byID), node by node: the edges
// and the encoders take them so. Then it numbers them for the order (seq).
func (gb *graphBuilder) indexNodes() {
	lists := gb.numberClasses()
	gb.defAt = make([]*TaskDef, len(gb.ids))
	for idx, id := range gb.ids {
		gb.defAt[idx] = gb.defs[id]
	}
	for r, ng := range gb.nodes {
		list := lists[gb.pclass[r]]
		ng.byID = make([]*PlacedTask, len(list))
		for p, idx := range list {
			pt := gb.newPlaced()
			pt.Def, pt.node, pt.idx = gb.defAt[idx], ng, idx
			ng.byID[p] = pt
		}
	}
	gb.numberSeq(lists)
}

// numberClasses turns place's marks into positions: pos gets each placed task's
// position among its placement class's tasks by id, and -1 for the others. It
// returns each class's task idxs, in that order.
func (gb *graphBuilder) numberClasses() [][]int32 {
	n := len(gb.ids)
	lists := make([][]int32, len(gb.members)+2) // by placement class
	for c := range lists {
		row := gb.pos[c*n : (c+1)*n]
		for idx, mark := range row {
			if mark == 0 {
				row[idx] = -1
				continue
			}
			row[idx] = int32(len(lists[c]))
			lists[c] = append(lists[c], int32(idx))
		}
	}
	return lists
}

// numberSeq numbers the placed tasks by id, then node (seq): the order's own
// (see order), which reads a task's node and id from seqNode and seqIdx.
// lists are each placement class's task idxs (numberClasses): how many tasks
// an id has is counted from them and the classes' sizes, not task by task.
func (gb *graphBuilder) numberSeq(lists [][]int32) {
	n := len(gb.ids)
	size := make([]int32, len(lists)) // by placement class: its nodes
	for _, c := range gb.pclass {
		size[c]++
	}
	first := make([]int32, n+1) // by idx: the seq of its first task
	for c, list := range lists {
		for _, idx := range list {
			first[idx+1] += size[c]
		}
	}
	for idx := range n {
		first[idx+1] += first[idx]
	}
	gb.placed = make([]*PlacedTask, first[n])
	gb.seqNode, gb.seqIdx = make([]int32, first[n]), make([]int32, first[n])
	for _, ng := range gb.nodes {
		for _, pt := range ng.byID {
			pt.seq = first[pt.idx]
			first[pt.idx]++
			gb.placed[pt.seq] = pt
			gb.seqNode[pt.seq], gb.seqIdx[pt.seq] = ng.rank, pt.idx
		}
	}
}

func (gb *graphBuilder) warnOnce(r hcl.Range, format string, args ...any) {
	key := fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column) + fmt.Sprintf(format, args...)
	if gb.warned[key] {
		return
	}
	gb.warned[key] = true
	gb.diags = append(gb.diags, warnAt(r, format, args...))
}

// typeOf returns the type d has once placed: "skipped" when its legacy string
// condition is false (evaluated non-strict on the cluster's models, once per
// definition). yaql conditions are kept for the deployer.
func (gb *graphBuilder) typeOf(d *TaskDef) string {
	if d.condDone {
		return d.typ
	}
	d.condDone, d.typ = true, d.Task.Type
	cond := d.Task.Data.Get("condition")
	if cond == nil || cond.Kind != loader.KindString {
		return d.typ
	}
	e, err := expr.Parse(cond.Text)
	if err != nil {
		// A warning, at the column: the task is kept, as nailgun keeps tasks whose
		// condition it cannot read.
		diag := exprErrorDiag(cond, err, "task "+d.Task.ID+": condition")
		gb.warnOnce(*diag.Subject, "%s", diag.Summary)
		return d.typ
	}
	v, err := e.Eval(gb.m.Models, false)
	if err != nil {
		gb.warnOnce(cond.Range, "task %s: condition %q: %v", d.Task.ID, cond.Text, err)
		return d.typ
	}
	ok := expr.Truthy(v)
	d.condVal = &ok
	if !ok {
		d.typ = "skipped"
	}
	return d.typ
}

// Via says why the task is on its node: the selector entries of its definitions
// that select the node (with the tag each matched), then the groups that list it
// and select the node.
func (pt *PlacedTask) Via() []Via {
	ng := pt.node
	g := ng.g
	var out []Via
	add := func(v Via) {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	switch pt.Def.Task.Type {
	case "group":
	case "stage":
		if ng.Node == SyncNode {
			add(Via{Selector: "stage"})
		}
	default:
		key, sel := g.m.selectorOf(pt.Def.Task)
		if sel == nil || sel.IsMap() {
			break
		}
		matches := g.ix.Matches(sel, ng.Node)
		for _, mt := range matches {
			add(Via{Selector: key, Item: mt.Item, Tag: mt.Tag})
		}
		if len(matches) == 0 {
			if names, _ := g.ix.Resolve(sel); slices.Contains(names, ng.Node) {
				add(Via{Selector: key})
			}
		}
	}
	for _, gid := range g.groupsListing(pt.ID()) {
		gd := g.defs[gid]
		_, sel := g.m.selectorOf(gd.Task)
		if sel == nil || sel.IsMap() {
			continue
		}
		if names, _ := g.ix.Resolve(sel); slices.Contains(names, ng.Node) {
			add(Via{Selector: "group", Item: gid})
		}
	}
	return out
}

// groupsListing returns the groups of g whose tasks: list id, sorted.
func (g *Graph) groupsListing(id string) []string {
	g.memberOnce.Do(func() {
		g.memberOf = map[string][]string{}
		for _, gid := range g.ids {
			d := g.defs[gid]
			if d.Task.Type != "group" {
				continue
			}
			for _, it := range items(d.Task.Data.Get("tasks")) {
				if m := it.String(); !slices.Contains(g.memberOf[m], gid) {
					g.memberOf[m] = append(g.memberOf[m], gid)
				}
			}
		}
	})
	return g.memberOf[id]
}
