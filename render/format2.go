package render

import (
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The stored artifact format (format_version 2): each task definition is written
// once per cluster and graph type, in the task catalogue <cluster>/tasks/<graph>.yaml,
// and a node file lists its tasks by id with their requirements as "task@node"
// strings. The sync node's stages do not list the requirements the catalogue's
// stages imply (every node's tasks that are required_for the stage). The expanded
// view, format 1, is computed from it by ExpandNode; docs/artifact-format.md
// describes both.

// Artifact format versions, as manifest.json's format_version.
const (
	// FormatExpanded is the layout with every task's definition inline in its node
	// files and the stages' requirements in full (what render --expanded writes).
	FormatExpanded = "1"
	// FormatCatalogue is the stored layout: a task catalogue per cluster and graph
	// type, node files referring to it.
	FormatCatalogue = "2"
)

// CataloguePath is the path of a cluster's task catalogue of graph type graph.
func CataloguePath(cluster, graph string) string {
	return cluster + "/tasks/" + graph + ".yaml"
}

// catalogueChoice is what the task catalogue of a graph holds: one placed task per
// id standing for its entry.
type catalogueChoice struct {
	tasks []*PlacedTask          // one per id, sorted by id
	byID  map[string]*PlacedTask // the same, by id
}

// catalogueOf chooses the entries of g's task catalogue, once per graph: the first
// placed task of each id (nodes in order). Every placed task of an id has the same
// definition (Graph.Definition) and type, so no node file carries a definition
// inline; the format allows it (ParseNodeFile reads it), for sets written by an
// older fuelsync, which rendered two plugins' definitions of one id for disjoint
// nodes (now an error of the model).
func catalogueOf(g *Graph) *catalogueChoice {
	g.catOnce.Do(func() {
		c := &catalogueChoice{byID: map[string]*PlacedTask{}}
		seen := make([]bool, len(g.ids)) // by idx: a rendered graph's tasks are looked up once an id
		for _, ng := range g.Nodes {
			for _, pt := range ng.Tasks {
				if int(pt.idx) < len(seen) {
					if seen[pt.idx] {
						continue
					}
					seen[pt.idx] = true
				}
				if _, ok := c.byID[pt.ID()]; !ok {
					c.byID[pt.ID()] = pt
					c.tasks = append(c.tasks, pt)
				}
			}
		}
		slices.SortFunc(c.tasks, func(a, b *PlacedTask) int { return strings.Compare(a.ID(), b.ID()) })
		g.cat = c
	})
	return g.cat
}

// stageIDs are the sync node's stages a task's definition is required_for, sorted,
// once each.
func stageIDs(d *TaskDef) []string {
	if len(d.stages) == 0 {
		return nil
	}
	out := make([]string, 0, len(d.stages))
	for _, se := range d.stages {
		out = append(out, se.stage.ID())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// catalogueEntry is a catalogue entry as generic values: the keys of the task's
// entry in the expanded view but id and requires, plus its stages.
func catalogueEntry(pt *PlacedTask) map[string]any {
	t := map[string]any{"type": pt.Type()}
	data := pt.Def.Task.Data
	if pt.Type() != "skipped" {
		if p := data.Get("parameters"); p.IsMap() {
			t["parameters"] = p.Interface()
		}
		if c := data.Get("condition"); c.IsMap() {
			t["condition"] = c.Interface()
		}
	}
	if len(pt.DynamicRequires()) > 0 {
		t["dynamic_requires"] = pt.DynamicRequires()
	}
	if st := stageIDs(pt.Def); len(st) > 0 {
		t["stages"] = flowStrings(st)
	}
	return t
}

// flowStrings is a YAML sequence of strings in flow style.
func flowStrings(list []string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range list {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
	}
	return n
}

// catalogueDocument is the task catalogue as generic values, for yaml.v3: the
// writer's fallback and its reference in tests.
func catalogueDocument(cluster string, g *Graph, tasks []*PlacedTask) map[string]any {
	entries := map[string]any{}
	for _, pt := range tasks {
		entries[pt.ID()] = catalogueEntry(pt)
	}
	return map[string]any{"cluster": cluster, "format_version": 2, "graph": g.Type, "tasks": entries}
}

// catalogue returns the task catalogue of graph g of cluster m.
func (e *nodeEncoder) catalogue(m *Model, g *Graph) ([]byte, error) {
	c := catalogueOf(g)
	return e.encode(func() error { return e.writeCatalogue(m.Cluster.Name, g, c.tasks) },
		func() any { return catalogueDocument(m.Cluster.Name, g, c.tasks) })
}

func (e *nodeEncoder) writeCatalogue(cluster string, g *Graph, tasks []*PlacedTask) error {
	b := &e.buf
	if err := e.key("cluster", cluster); err != nil {
		return err
	}
	b.WriteString("format_version: 2\n")
	if err := e.key("graph", g.Type); err != nil {
		return err
	}
	if len(tasks) == 0 {
		b.WriteString("tasks: {}\n")
		return nil
	}
	b.WriteString("tasks:\n")
	for _, pt := range tasks {
		// yaml.v3 writes a long key as an explicit "? key".
		q, ok := e.scalar(pt.ID())
		if !ok || len(pt.ID()) > 100 {
			return errSlowPath
		}
		tb := e.blocks.get(pt.Def)
		if tb.err != nil {
			return tb.err
		}
		b.WriteString("  ")
		b.WriteString(q)
		b.WriteString(":\n")
		skipped := pt.Type() == "skipped"
		if !skipped && tb.condition != nil {
			b.Write(tb.condition)
		}
		if len(pt.DynamicRequires()) > 0 {
			b.Write(tb.dynamic)
		}
		if !skipped && tb.parameters != nil {
			b.Write(tb.parameters)
		}
		if st := stageIDs(pt.Def); len(st) > 0 {
			b.WriteString("    stages: [")
			for i, s := range st {
				if !e.flowPlain(s) {
					return errSlowPath
				}
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(s)
			}
			b.WriteString("]\n")
		}
		q, ok = e.scalar(pt.Type())
		if !ok {
			return errSlowPath
		}
		b.WriteString("    type: ")
		b.WriteString(q)
		b.WriteByte('\n')
	}
	return nil
}

// key writes a top-level "k: v" line.
func (e *nodeEncoder) key(k, v string) error {
	q, ok := e.scalar(v)
	if !ok {
		return errSlowPath
	}
	b := &e.buf
	b.WriteString(k)
	b.WriteString(": ")
	b.WriteString(q)
	b.WriteByte('\n')
	return nil
}

// flowPlain reports whether yaml.v3 writes s unquoted inside a flow sequence: it
// writes it plain in block context and it has none of the characters that make a
// plain scalar end or change meaning in flow context (conservatively).
func (e *nodeEncoder) flowPlain(s string) bool {
	q, ok := e.scalar(s)
	return ok && q == s && !strings.ContainsAny(s, flowIndicators)
}

// flowIndicators are the characters flowPlain refuses.
const flowIndicators = ",?[]{}:#"

// plainFlow reports whether scalar q of s is s itself, without flow indicators:
// plain in a flow list too.
func plainFlow(q, s string) bool { return q == s && !strings.ContainsAny(s, flowIndicators) }

// requirement is how a node file writes an edge of a task on node: "task@node",
// or the bare task id for a task of the same node (unless the id has an '@',
// which would read as a node).
func requirement(ed Edge, node string) string {
	if ed.Node() == node && !strings.Contains(ed.Task(), "@") {
		return ed.Task()
	}
	return ed.Task() + "@" + ed.Node()
}

// SplitRequirement reads a requirement of a node file of node: "task@node" splits
// at its last '@' (node names have none); a bare id is a task of node itself.
func SplitRequirement(s, node string) (task, on string) {
	if i := strings.LastIndexByte(s, '@'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, node
}

// stageRule decides which edges of a stage on the sync node the catalogue implies:
// those on a task of another node that has no task of the stage's id, whose
// definition is required_for the stage.
type stageRule struct {
	stage *PlacedTask
	has   []bool // by node rank: the node has a task of the stage's id
}

func newStageRule(ng *NodeGraph, stage *PlacedTask) *stageRule {
	r := &stageRule{stage: stage}
	if ng.g == nil {
		return r
	}
	for _, n := range ng.g.Nodes {
		if int(n.rank) >= len(r.has) {
			r.has = append(r.has, make([]bool, int(n.rank)+1-len(r.has))...)
		}
		r.has[n.rank] = n.Task(stage.ID()) != nil
	}
	return r
}

func (r *stageRule) implied(ed Edge) bool {
	to := r.stage
	if ed.Node() == SyncNode {
		return false
	}
	if rank := int(ed.raw.node.rank); rank >= len(r.has) || r.has[rank] {
		return false
	}
	for _, se := range ed.raw.Def.stages {
		if se.stage == to {
			return true
		}
	}
	return false
}

// storedRequires are the requirements of pt as its node file writes them: all of
// them, but for a stage on the sync node those the catalogue implies. Those are
// every edge its fanIn gathers, which the stage does not hold, and the held edges
// to the same tasks: a filter of the held edges. Each is an edge pt holds: its
// target is pt.edge's.
func storedRequires(ng *NodeGraph, pt *PlacedTask) []Edge {
	if pt.sharing() != nil {
		return pt.AllRequires() // a task of the sync node shares no edges
	}
	if ng.Node != SyncNode {
		return pt.requires
	}
	rule := newStageRule(ng, pt)
	implied := 0
	for _, ed := range pt.requires {
		if rule.implied(ed) {
			implied++
		}
	}
	if implied == 0 {
		return pt.requires
	}
	out := make([]Edge, 0, len(pt.requires)-implied)
	for _, ed := range pt.requires {
		if !rule.implied(ed) {
			out = append(out, ed)
		}
	}
	return out
}

// nodeFileDocument is the node file of ng as generic values, for yaml.v3: the
// writer's reference and fallback.
func nodeFileDocument(m *Model, g *Graph, ng *NodeGraph) map[string]any {
	doc := map[string]any{"cluster": m.Cluster.Name, "format_version": 2, "graph": g.Type, "node": ng.Node}
	if ng.Tags != nil {
		doc["roles"] = strs(ng.Tags.Roles)
		doc["tags"] = strs(ng.Tags.Resolution)
		doc["instances"] = instancesDoc(ng.Tags.Instances)
	} else {
		doc["roles"], doc["tags"], doc["instances"] = []any{}, []any{}, map[string]any{}
	}
	tasks := make([]any, 0, len(ng.Tasks))
	for _, pt := range ng.Tasks {
		t := map[string]any{"id": pt.ID()}
		if reqs := storedRequires(ng, pt); len(reqs) > 0 {
			list := make([]string, len(reqs))
			for i, ed := range reqs {
				list[i] = requirement(pt.edge(ed), ng.Node)
			}
			t["requires"] = flowStrings(list)
		}
		tasks = append(tasks, t)
	}
	doc["tasks"] = tasks
	return doc
}

// nodeFile returns the format-2 node file of ng, in the encoder's buffer (valid
// until its next use) unless it took the fallback.
func (e *nodeEncoder) nodeFile(m *Model, g *Graph, ng *NodeGraph) ([]byte, error) {
	return e.encode(func() error { return e.writeNodeFile(m, g, ng) }, func() any { return nodeFileDocument(m, g, ng) })
}

func (e *nodeEncoder) writeNodeFile(m *Model, g *Graph, ng *NodeGraph) error {
	b := &e.buf
	if err := e.header(m, g, ng, true); err != nil {
		return err
	}
	if len(ng.Tasks) == 0 {
		b.WriteString("tasks: []\n")
		return nil
	}
	b.WriteString("tasks:\n")
	self, ok := e.scalar(ng.Node)
	if !ok || self != ng.Node {
		return errSlowPath
	}
	for _, pt := range ng.Tasks {
		q, ok := e.graphTask(pt)
		if !ok {
			return errSlowPath
		}
		b.WriteString("  - id: ")
		b.WriteString(q)
		b.WriteByte('\n')
		if pt.sharing() != nil {
			if err := e.sharedRequires(ng, pt); err != nil {
				return err
			}
			continue
		}
		reqs := storedRequires(ng, pt)
		if len(reqs) == 0 {
			continue
		}
		b.WriteString("    requires: [")
		for i, ed := range reqs {
			if err := e.requirement(ng, pt.edge(ed), i == 0); err != nil {
				return err
			}
		}
		b.WriteString("]\n")
	}
	return nil
}

// requirement writes edge ed of a task of node ng as an entry of its requires
// flow list, after a separator unless first.
func (e *nodeEncoder) requirement(ng *NodeGraph, ed Edge, first bool) error {
	// Plain in block context (the scalar is the string itself) and without flow
	// indicators: plain in the flow list too.
	task, node, flow, ok := e.targetFlow(ed)
	if !ok || !flow {
		return errSlowPath
	}
	b := &e.buf
	if !first {
		b.WriteString(", ")
	}
	b.WriteString(task)
	if ed.Node() != ng.Node || strings.IndexByte(task, '@') >= 0 {
		b.WriteByte('@')
		b.WriteString(node)
	}
	return nil
}

// NodeFileTasks returns the tasks of the node file of node's graph typ as the
// render writes it (format 2): each task's id and the requirements the file
// lists (storedRequires), what ScanNodeFile reads back from its bytes, made
// from the model without encoding or scanning them. ok is false when the graph
// has no such node (or, for PlaceByClass, when node is not its class's own
// node); whether the render wrote a file for it is the caller's to know (a node
// without tasks may have none).
func (r *Rendered) NodeFileTasks(typ, node string) ([]NodeFileTask, bool) {
	g := r.Graph(typ)
	if g == nil {
		return nil, false
	}
	ng := g.Node(node)
	if ng == nil || ng.Node != node {
		return nil, false
	}
	out := make([]NodeFileTask, len(ng.Tasks))
	for i, pt := range ng.Tasks {
		out[i].ID = pt.ID()
		if reqs := storedRequires(ng, pt); len(reqs) > 0 {
			out[i].Requires = make([]Requirement, len(reqs))
			for j, ed := range reqs {
				ed := pt.edge(ed)
				out[i].Requires[j] = Requirement{Task: ed.Task(), Node: ed.Node()}
			}
		}
	}
	return out, true
}
