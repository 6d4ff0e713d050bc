package render

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/expr"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render/selector"
)

// SyncNode is the pseudo node of stage tasks (SPEC §5.4).
const SyncNode = "sync"

// Graph is one graph type of a cluster, resolved onto its nodes (SPEC §5.4).
type Graph struct {
	Type string
	// Nodes are the cluster's nodes by id, then master and sync when they have tasks.
	Nodes []*NodeGraph
	// FaultTolerance lists the groups with their nodes and fault tolerance.
	FaultTolerance []FaultToleranceGroup
	byNode         map[string]*NodeGraph
	defs           map[string][]*TaskDef
	ix             *selector.Index
}

// Node returns the graph of node name, or nil.
func (g *Graph) Node(name string) *NodeGraph { return g.byNode[name] }

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
	tasks map[string]*PlacedTask
}

// Task returns the placed task id, or nil.
func (n *NodeGraph) Task(id string) *PlacedTask { return n.tasks[id] }

// PlacedTask is a task on a node.
type PlacedTask struct {
	ID   string
	Type string // "skipped" when its legacy condition is false
	Def  *TaskDef
	// Condition is the value of a legacy string condition (nil when none).
	Condition *bool
	// Via says why the task is on the node: the selector entries that matched, or
	// the group that lists it.
	Via []Via
	// Requires are the edges on this task as the dependent, sorted.
	Requires []Edge
	// DynamicRequires are yaql cross-dependencies, kept verbatim.
	DynamicRequires []any
	edgeSet         map[taskKey]bool
}

// Via is one reason a task is on a node.
type Via struct {
	// Selector is the key that selected the node (tags, roles, role, groups), or
	// "group" when a group lists the task, or "stage".
	Selector string `json:"selector"`
	Item     string `json:"item,omitempty"` // the selector entry, or the group's id
	Tag      string `json:"tag,omitempty"`  // the node tag it matched
}

// Edge is a dependency: the dependent task requires Task on Node.
type Edge struct {
	Task, Node string
	// Origin says where the edge comes from: "requires", "required_for of <id>",
	// "cross-depends", "cross-depended-by of <id>", and "via <ids>" when it is kept
	// transitively through tasks absent from the node.
	Origin string
	// Via lists the absent tasks the edge was kept through (transitive ordering).
	Via   []string
	Range hcl.Range
}

// Describe is the edge's origin with the tasks it passes through.
func (e Edge) Describe() string {
	if len(e.Via) == 0 {
		return e.Origin
	}
	return e.Origin + " via " + strings.Join(e.Via, ", ")
}

// TaskDef is the definition of a task id that won the merge (SPEC §3.1).
type TaskDef struct {
	Task *loader.Task
	// Layer is "cluster", "plugin <name>" or "release".
	Layer  string
	Plugin *loader.Plugin
	// Overrode are the lower layers' definitions of the same id.
	Overrode []*TaskDef
	cond     *expr.Expr
}

// RenderGraphs resolves every graph type of the cluster onto its nodes.
func (m *Model) RenderGraphs() ([]*Graph, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var out []*Graph
	for _, typ := range m.graphTypes() {
		g, d := m.renderGraph(typ)
		diags = append(diags, d...)
		out = append(out, g)
	}
	return out, diags
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
// then release; the first definition of an id wins wholesale. Definitions of one id
// by several plugins are all kept (they may apply on different nodes).
func (m *Model) mergeTasks(typ string) (map[string][]*TaskDef, []string) {
	defs := map[string][]*TaskDef{}
	var order []string
	layer := func(tasks []*loader.Task, name string, p *loader.Plugin) {
		seen := map[string]bool{}
		for _, t := range tasks {
			if t.ID == "" || seen[t.ID] {
				continue
			}
			seen[t.ID] = true
			d := &TaskDef{Task: t, Layer: name, Plugin: p}
			prev := defs[t.ID]
			switch {
			case len(prev) == 0:
				defs[t.ID] = []*TaskDef{d}
				order = append(order, t.ID)
			case p != nil && prev[0].Plugin != nil:
				defs[t.ID] = append(prev, d) // another plugin's definition
			default:
				for _, w := range prev {
					w.Overrode = append(w.Overrode, d)
				}
			}
		}
	}
	if typ == "default" {
		layer(m.Cluster.Tasks, "cluster", nil)
	}
	for _, ep := range m.Plugins {
		for _, g := range ep.Plugin.Graphs {
			if g.Type == typ {
				layer(g.Tasks, "plugin "+ep.Plugin.Name, ep.Plugin)
			}
		}
	}
	for _, g := range m.Release.Graphs {
		if g.Type == typ {
			layer(g.Tasks, "release", nil)
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

// graphBuilder holds the state of rendering one graph type.
type graphBuilder struct {
	m      *Model
	typ    string
	g      *Graph
	ix     *selector.Index
	defs   map[string][]*TaskDef
	ids    []string
	diags  hcl.Diagnostics
	warned map[string]bool
	// matchers caches compiled dependency names (regexes) for the graph.
	matchers map[string]nameMatcher
}

func (m *Model) renderGraph(typ string) (*Graph, hcl.Diagnostics) {
	gb := &graphBuilder{m: m, typ: typ, g: &Graph{Type: typ, byNode: map[string]*NodeGraph{}}, warned: map[string]bool{}, matchers: map[string]nameMatcher{}}
	gb.defs, gb.ids = m.mergeTasks(typ)
	sort.Strings(gb.ids)
	var nodes []selector.Node
	for _, nt := range m.nodeTagList() {
		nodes = append(nodes, selector.Node{Name: nt.Node.Name, ID: nt.Node.ID, Tags: nt.Resolution})
		ng := &NodeGraph{Node: nt.Node.Name, ID: nt.Node.ID, Tags: nt, tasks: map[string]*PlacedTask{}}
		gb.g.Nodes = append(gb.g.Nodes, ng)
		gb.g.byNode[ng.Node] = ng
	}
	for _, name := range []string{selector.Master, SyncNode} {
		ng := &NodeGraph{Node: name, tasks: map[string]*PlacedTask{}}
		gb.g.byNode[name] = ng
	}
	gb.ix = selector.NewIndex(nodes)
	gb.g.defs, gb.g.ix = gb.defs, gb.ix

	// 1. Resolve every non-group task to its nodes; stages go to the sync node.
	for _, id := range gb.ids {
		for _, d := range gb.defs[id] {
			if d.Task.Type != "group" {
				gb.placeTask(d)
			}
		}
	}
	gb.checkPluginOverlap()
	// 2. Groups: each member is placed on the group's nodes.
	for _, id := range gb.ids {
		if d := gb.defs[id][0]; d.Task.Type == "group" {
			gb.placeGroup(d)
		}
	}
	// 3. Edges, normalised onto the dependent task.
	gb.edges()
	// 4. Topological order, cycles reported.
	gb.order()
	for _, name := range []string{selector.Master, SyncNode} {
		if ng := gb.g.byNode[name]; len(ng.tasks) > 0 {
			gb.g.Nodes = append(gb.g.Nodes, ng)
		}
	}
	return gb.g, gb.diags
}

// place puts definition d on node (or keeps the existing placement: a non-skipped
// task beats a skipped one).
func (gb *graphBuilder) place(d *TaskDef, node string, via Via) {
	ng := gb.g.byNode[node]
	if ng == nil {
		return
	}
	pt := ng.tasks[d.Task.ID]
	if pt == nil {
		pt = &PlacedTask{ID: d.Task.ID, Type: d.Task.Type, Def: d}
		gb.applyCondition(pt)
		ng.tasks[d.Task.ID] = pt
	} else if pt.Def != d && pt.Type == "skipped" {
		np := &PlacedTask{ID: d.Task.ID, Type: d.Task.Type, Def: d, Via: pt.Via}
		gb.applyCondition(np)
		if np.Type != "skipped" {
			ng.tasks[d.Task.ID], pt = np, np
		}
	}
	if !slices.Contains(pt.Via, via) {
		pt.Via = append(pt.Via, via)
	}
}

func (gb *graphBuilder) placeTask(d *TaskDef) {
	if d.Task.Type == "stage" {
		gb.place(d, SyncNode, Via{Selector: "stage"})
		return
	}
	key, sel := gb.m.selectorOf(d.Task)
	if sel == nil {
		return // no selector: the task runs nowhere (the override idiom {id, type: skipped})
	}
	if sel.IsMap() {
		return // a yaql selector is evaluated by the deployer
	}
	nodes, _ := gb.ix.Resolve(sel, "")
	for _, n := range nodes {
		matches := gb.ix.Matches(sel, n)
		for _, mt := range matches {
			gb.place(d, n, Via{Selector: key, Item: mt.Item, Tag: mt.Tag})
		}
		if len(matches) == 0 {
			gb.place(d, n, Via{Selector: key})
		}
	}
}

// checkPluginOverlap reports two plugins' definitions of one id that resolve to a
// common node (SPEC §3.1).
func (gb *graphBuilder) checkPluginOverlap() {
	for _, id := range gb.ids {
		defs := gb.defs[id]
		if len(defs) < 2 {
			continue
		}
		for i := 1; i < len(defs); i++ {
			for j := 0; j < i; j++ {
				a, b := defs[j], defs[i]
				if n := gb.commonNode(a, b); n != "" {
					ep := gb.m.Plugin(b.Plugin.Name)
					gb.diags = append(gb.diags, withDetail(errorAt(ep.Cause.Range, "Plugin %s is overlapping with plugin %s by introducing the same deployment task with id %s on node %s", b.Plugin.Name, a.Plugin.Name, id, n),
						"Graph %s: both definitions (%s and %s) select node %s.", gb.typ, at(a.Task.Range), at(b.Task.Range), n))
				}
			}
		}
	}
}

// commonNode returns the first node (by id) where both definitions resolve.
func (gb *graphBuilder) commonNode(a, b *TaskDef) string {
	na, nb := gb.nodesOf(a), gb.nodesOf(b)
	for _, n := range na {
		if slices.Contains(nb, n) {
			return n
		}
	}
	return ""
}

func (gb *graphBuilder) nodesOf(d *TaskDef) []string {
	if d.Task.Type == "stage" {
		return []string{SyncNode}
	}
	_, sel := gb.m.selectorOf(d.Task)
	if sel == nil || sel.IsMap() {
		return nil
	}
	nodes, _ := gb.ix.Resolve(sel, "")
	return nodes
}

// placeGroup resolves a group and places its members on its nodes.
func (gb *graphBuilder) placeGroup(d *TaskDef) {
	t := d.Task
	nodes := gb.nodesOf(d)
	ft := selector.FaultTolerance(t.Data.Get("fault_tolerance"), len(nodes))
	if len(nodes) > 0 {
		gb.g.FaultTolerance = append(gb.g.FaultTolerance, FaultToleranceGroup{Name: t.ID, Nodes: nodes, FaultTolerance: ft})
	}
	members := t.Data.Get("tasks")
	for _, it := range items(members) {
		id := it.String()
		md := gb.defs[id]
		switch {
		case len(md) == 0:
			gb.diags = append(gb.diags, withDetail(errorAt(it.Range, "group %s lists task %q, which is not in graph %s", t.ID, id, gb.typ),
				"A group's tasks: names tasks of the same graph."))
		case md[0].Task.Type == "group":
			gb.diags = append(gb.diags, errorAt(it.Range, "group %s lists %s, which is a group: a group's tasks cannot be groups", t.ID, id))
		case md[0].Task.Type == "stage":
			gb.warnOnce(it.Range, "group %s lists the stage %s, which is ignored: stages run on the sync node", t.ID, id)
		default:
			for _, n := range nodes {
				gb.place(md[0], n, Via{Selector: "group", Item: t.ID})
			}
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

// applyCondition evaluates a legacy string condition (non-strict, on the cluster's
// models): false makes the task skipped. yaql conditions are kept for the deployer.
func (gb *graphBuilder) applyCondition(pt *PlacedTask) {
	cond := pt.Def.Task.Data.Get("condition")
	if cond == nil || cond.Kind != loader.KindString {
		return
	}
	d := pt.Def
	if d.cond == nil {
		e, err := expr.Parse(cond.Text)
		if err != nil {
			// A warning, at the column: the task is kept, as nailgun keeps tasks whose
			// condition it cannot read.
			diag := exprErrorDiag(cond, err, "task "+d.Task.ID+": condition")
			gb.warnOnce(*diag.Subject, "%s", diag.Summary)
			return
		}
		d.cond = e
	}
	v, err := d.cond.Eval(gb.m.Models, false)
	if err != nil {
		gb.warnOnce(cond.Range, "task %s: condition %q: %v", d.Task.ID, cond.Text, err)
		return
	}
	ok := expr.Truthy(v)
	pt.Condition = &ok
	if !ok {
		pt.Type = "skipped"
	}
}

// --- edges ---

// nameMatcher matches a dependency name: exact, or /regex/ anchored at the start.
type nameMatcher struct {
	name string
	re   *regexp.Regexp
}

// matcher returns the matcher of a dependency name, compiled once per graph.
func (gb *graphBuilder) matcher(name string) nameMatcher {
	nm, ok := gb.matchers[name]
	if !ok {
		nm = newMatcher(name)
		gb.matchers[name] = nm
	}
	return nm
}

func newMatcher(name string) nameMatcher {
	if len(name) >= 2 && strings.HasPrefix(name, "/") && strings.HasSuffix(name, "/") {
		if re, err := regexp.Compile("^(?:" + name[1:len(name)-1] + ")"); err == nil {
			return nameMatcher{name: name, re: re}
		}
		return nameMatcher{name: name, re: regexp.MustCompile(`\A\z.`)}
	}
	return nameMatcher{name: name}
}

func (nm nameMatcher) match(id string) bool {
	if nm.re != nil {
		return nm.re.MatchString(id)
	}
	return nm.name == id
}

// before is the definition-level order of one graph: preds[Y] lists the ids that
// come before Y (Y requires X, or X is required_for Y), with the written entry.
type relation struct {
	preds map[string][]relEdge
}

type relEdge struct {
	id     string
	origin string
	rng    hcl.Range
}

func (gb *graphBuilder) relation() *relation {
	rel := &relation{preds: map[string][]relEdge{}}
	all := gb.ids
	expand := func(v *loader.Value, owner, key string) []relEdge {
		var out []relEdge
		for _, it := range items(v) {
			name, ok := it.Str()
			if !ok {
				continue
			}
			nm := gb.matcher(name)
			found := false
			for _, id := range all {
				if nm.match(id) {
					found = true
					out = append(out, relEdge{id: id, origin: key, rng: it.Range})
				}
			}
			if !found && nm.re == nil {
				gb.warnOnce(it.Range, "task %s: %s %q: no task of that name in graph %s", owner, key, name, gb.typ)
			}
		}
		return out
	}
	for _, id := range gb.ids {
		d := gb.defs[id][0]
		for _, e := range expand(d.Task.Data.Get("requires"), id, "requires") {
			if e.id != id {
				rel.preds[id] = append(rel.preds[id], e)
			}
		}
		for _, e := range expand(d.Task.Data.Get("required_for"), id, "required_for") {
			if e.id != id {
				rel.preds[e.id] = append(rel.preds[e.id], relEdge{id: id, origin: "required_for of " + id, rng: e.rng})
			}
		}
	}
	return rel
}

// edges builds every dependency of every placed task (SPEC §5.4 step 4).
func (gb *graphBuilder) edges() {
	rel := gb.relation()
	sync := gb.g.byNode[SyncNode]
	seen := map[string]bool{}
	for _, ng := range gb.allNodes() {
		for _, id := range sortedIDs(ng.tasks) {
			pt := ng.tasks[id]
			// requires / required_for: the same node and the sync node, transitively
			// through tasks absent from both.
			clear(seen)
			seen[id] = true
			var walk func(y string, via []string)
			walk = func(y string, via []string) {
				for _, e := range rel.preds[y] {
					if seen[e.id] {
						continue
					}
					seen[e.id] = true
					switch {
					case ng.tasks[e.id] != nil:
						pt.addEdge(Edge{Task: e.id, Node: ng.Node, Origin: e.origin, Via: via, Range: e.rng})
					case ng != sync && sync.tasks[e.id] != nil:
						pt.addEdge(Edge{Task: e.id, Node: SyncNode, Origin: e.origin, Via: via, Range: e.rng})
					default:
						// One path slice per absent task, shared by the edges found through it.
						walk(e.id, append(via[:len(via):len(via)], e.id))
					}
				}
			}
			walk(id, nil)
			gb.crossEdges(ng, pt)
		}
	}
	// Node tasks required_for a stage: the stage on the sync node requires them.
	syncIDs := sortedIDs(sync.tasks)
	for _, ng := range gb.allNodes() {
		if ng == sync {
			continue
		}
		for _, id := range sortedIDs(ng.tasks) {
			for _, e := range items(gb.defs[id][0].Task.Data.Get("required_for")) {
				name, _ := e.Str()
				nm := gb.matcher(name)
				for _, sid := range syncIDs {
					if nm.match(sid) && ng.tasks[sid] == nil {
						sync.tasks[sid].addEdge(Edge{Task: id, Node: ng.Node, Origin: "required_for of " + id, Range: e.Range})
					}
				}
			}
		}
	}
}

// crossEdges binds cross-depends and cross-depended-by entries across nodes.
func (gb *graphBuilder) crossEdges(ng *NodeGraph, pt *PlacedTask) {
	data := pt.Def.Task.Data
	for _, key := range []string{"cross-depends", "cross_depends", "cross-depended-by", "cross_depended_by"} {
		v := data.Get(key)
		if v == nil {
			continue
		}
		if v.IsMap() && v.Has("yaql_exp") {
			pt.DynamicRequires = append(pt.DynamicRequires, map[string]any{key: v.Interface()})
			continue
		}
		reverse := strings.Contains(key, "by")
		for _, it := range items(v) {
			if !it.IsMap() {
				continue
			}
			if it.Has("yaql_exp") {
				pt.DynamicRequires = append(pt.DynamicRequires, it.Interface())
				continue
			}
			name, ok := it.Get("name").Str()
			if !ok {
				continue
			}
			nm := gb.matcher(name)
			if nm.re == nil && len(gb.defs[name]) == 0 {
				gb.warnOnce(it.Get("name").Range, "task %s: %s %q: no task of that name in graph %s", pt.ID, key, name, gb.typ)
				continue
			}
			for _, target := range gb.crossTargets(ng, it) {
				tg := gb.g.byNode[target]
				if tg == nil {
					continue
				}
				for _, xid := range sortedIDs(tg.tasks) {
					if !nm.match(xid) || (target == ng.Node && xid == pt.ID) {
						continue
					}
					if reverse {
						tg.tasks[xid].addEdge(Edge{Task: pt.ID, Node: ng.Node, Origin: "cross-depended-by of " + pt.ID, Range: it.Range})
					} else {
						pt.addEdge(Edge{Task: xid, Node: target, Origin: "cross-depends", Range: it.Range})
					}
				}
			}
		}
	}
}

// crossTargets resolves a cross-dependency entry's nodes: tags, else role, else all
// nodes; "self" is the same node and role: null the sync node.
func (gb *graphBuilder) crossTargets(ng *NodeGraph, it *loader.Value) []string {
	policy := it.Get("policy").String()
	var sel *loader.Value
	for _, k := range []string{"tags", "role", "roles"} {
		if f := it.Field(k); f != nil {
			if f.Value.IsNull() {
				return []string{SyncNode}
			}
			sel = f.Value
			break
		}
	}
	if sel == nil {
		return gb.ix.ResolveNames(nil, true, policy)
	}
	if names, ok := sel.Strings(); ok && len(names) == 1 && names[0] == "self" {
		return []string{ng.Node}
	}
	nodes, _ := gb.ix.Resolve(sel, policy)
	return nodes
}

func (pt *PlacedTask) addEdge(e Edge) {
	k := taskKey{e.Task, e.Node}
	if pt.edgeSet == nil {
		pt.edgeSet = map[taskKey]bool{}
	}
	if pt.edgeSet[k] {
		return
	}
	pt.edgeSet[k] = true
	pt.Requires = append(pt.Requires, e)
}

func (gb *graphBuilder) allNodes() []*NodeGraph {
	out := append([]*NodeGraph(nil), gb.g.Nodes...)
	return append(out, gb.g.byNode[selector.Master], gb.g.byNode[SyncNode])
}

func sortedIDs(m map[string]*PlacedTask) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// --- order ---

type taskKey struct{ task, node string }

// order sorts every node's tasks topologically over the whole cluster graph (ties
// by task id, then node id) and reports cycles.
func (gb *graphBuilder) order() {
	nodeRank := map[string]int{}
	for i, ng := range gb.allNodes() {
		nodeRank[ng.Node] = i
	}
	indeg := map[taskKey]int{}
	succ := map[taskKey][]taskKey{}
	var keys []taskKey
	for _, ng := range gb.allNodes() {
		for _, id := range sortedIDs(ng.tasks) {
			pt := ng.tasks[id]
			k := taskKey{id, ng.Node}
			keys = append(keys, k)
			if _, ok := indeg[k]; !ok {
				indeg[k] = 0
			}
			sort.Slice(pt.Requires, func(i, j int) bool {
				a, b := pt.Requires[i], pt.Requires[j]
				if a.Node != b.Node {
					return nodeRank[a.Node] < nodeRank[b.Node]
				}
				return a.Task < b.Task
			})
			for _, e := range pt.Requires {
				from := taskKey{e.Task, e.Node}
				succ[from] = append(succ[from], k)
				indeg[k]++
			}
		}
	}
	less := func(a, b taskKey) bool {
		if a.task != b.task {
			return a.task < b.task
		}
		return nodeRank[a.node] < nodeRank[b.node]
	}
	h := &keyHeap{less: less}
	for _, k := range keys {
		if indeg[k] == 0 {
			h.push(k)
		}
	}
	done := 0
	for h.len() > 0 {
		k := h.pop()
		done++
		ng := gb.g.byNode[k.node]
		ng.Tasks = append(ng.Tasks, ng.tasks[k.task])
		for _, s := range succ[k] {
			if indeg[s]--; indeg[s] == 0 {
				h.push(s)
			}
		}
	}
	if done < len(keys) {
		gb.reportCycle(keys, indeg, succ)
		// Append what is left so artifacts stay complete and deterministic.
		for _, k := range keys {
			if indeg[k] > 0 {
				ng := gb.g.byNode[k.node]
				ng.Tasks = append(ng.Tasks, ng.tasks[k.task])
			}
		}
	}
}

// reportCycle finds one cycle among the tasks left with predecessors and reports it.
func (gb *graphBuilder) reportCycle(keys []taskKey, indeg map[taskKey]int, succ map[taskKey][]taskKey) {
	left := map[taskKey]bool{}
	for _, k := range keys {
		if indeg[k] > 0 {
			left[k] = true
		}
	}
	// Walk predecessors inside the left set until a key repeats.
	preds := map[taskKey][]taskKey{}
	for from, tos := range succ {
		for _, to := range tos {
			if left[from] && left[to] {
				preds[to] = append(preds[to], from)
			}
		}
	}
	var start taskKey
	for _, k := range keys {
		if left[k] {
			start = k
			break
		}
	}
	pos := map[taskKey]int{}
	var path []taskKey
	k := start
	for {
		if i, ok := pos[k]; ok {
			path = path[i:]
			break
		}
		pos[k] = len(path)
		path = append(path, k)
		ps := preds[k]
		if len(ps) == 0 {
			return
		}
		sort.Slice(ps, func(i, j int) bool {
			return ps[i].task < ps[j].task || (ps[i].task == ps[j].task && ps[i].node < ps[j].node)
		})
		k = ps[0]
	}
	// path is in "requires" direction; print it in execution order.
	slices.Reverse(path)
	var parts []string
	for _, p := range path {
		parts = append(parts, p.task+"@"+p.node)
	}
	parts = append(parts, parts[0])
	first := gb.g.byNode[path[0].node].tasks[path[0].task]
	gb.diags = append(gb.diags, withDetail(errorAt(first.Def.Task.Range, "graph %s: dependency cycle: %s", gb.typ, strings.Join(parts, " -> ")),
		"Each task must come after the one before it in this list, which cannot hold; remove one of the requires, required_for or cross-depends entries."))
}

// keyHeap is a small binary heap of task keys.
type keyHeap struct {
	items []taskKey
	less  func(a, b taskKey) bool
}

func (h *keyHeap) len() int { return len(h.items) }

func (h *keyHeap) push(k taskKey) {
	h.items = append(h.items, k)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *keyHeap) pop() taskKey {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l, r, small := 2*i+1, 2*i+2, i
		if l < len(h.items) && h.less(h.items[l], h.items[small]) {
			small = l
		}
		if r < len(h.items) && h.less(h.items[r], h.items[small]) {
			small = r
		}
		if small == i {
			break
		}
		h.items[i], h.items[small] = h.items[small], h.items[i]
		i = small
	}
	return top
}
