package render

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// DOT files: <cluster>/graphs/<graph>.dot.
//
// A small graph is drawn in full: one box per node with every task and every edge.
// A cluster of hundreds of nodes would give a file of hundreds of megabytes that no
// viewer opens, so above DOTFullLimit the graph is condensed: the nodes with the
// same tags, tasks and edges among their own tasks are drawn once, as one box (see
// dotGroups), and the edges between nodes are aggregated between boxes. Above
// DOTCondensedLimit even that is not drawn, and the file is a note that says so.

const (
	// DOTFullLimit is the largest full DOT file, in bytes: a graph whose full form
	// is larger is condensed by node class.
	DOTFullLimit = 1 << 20
	// DOTCondensedLimit is the largest condensed DOT file, in bytes: beyond it the
	// file only holds a note.
	DOTCondensedLimit = 16 << 20
)

// dotLimits are the size limits of a DOT file (tests pass small ones).
type dotLimits struct{ full, condensed int }

var defaultDOTLimits = dotLimits{full: DOTFullLimit, condensed: DOTCondensedLimit}

// DOT renders a graph type of a cluster as Graphviz. Up to DOTFullLimit bytes it is
// the full graph: one cluster box per node, an edge from each dependency to its
// dependent, cross-node edges included. Above, it is condensed by node class, and
// above DOTCondensedLimit it is a note. Graphviz ids are "task@node" (in a condensed
// graph, "task@box", a box of several nodes named by their tags), so that the file
// diffs well from one revision to the next.
func DOT(cluster string, g *Graph) []byte {
	var b bytes.Buffer
	writeDOT(&b, cluster, g)
	return b.Bytes()
}

func writeDOT(b *bytes.Buffer, cluster string, g *Graph) {
	writeDOTLimits(b, cluster, g, defaultDOTLimits)
}

// writeDOTLimits appends the DOT file of g to b: in full when that is at most
// lim.full bytes, else condensed when that is at most lim.condensed bytes, else a
// note. A form that goes over its limit is abandoned as soon as it does.
func writeDOTLimits(b *bytes.Buffer, cluster string, g *Graph, lim dotLimits) {
	w := newDOTWriter(b, g)
	if w.full(cluster, lim.full) {
		return
	}
	b.Truncate(w.start)
	groups := dotGroups(g)
	if w.condensed(cluster, groups, lim.full, lim.condensed) {
		return
	}
	b.Truncate(w.start)
	w.note(cluster, groups, lim.condensed)
}

// dotWriter writes the parts of a DOT file. Task ids and node names are escaped
// once each, not once per edge: by the task's position in the graph's ids and the
// node's rank.
type dotWriter struct {
	b     *bytes.Buffer
	start int // b's length before the file
	g     *Graph
	ids   []string // escaped, by idx
	nodes []string // escaped, by rank (filled as needed)
}

func newDOTWriter(b *bytes.Buffer, g *Graph) *dotWriter {
	w := &dotWriter{b: b, start: b.Len(), g: g, ids: make([]string, len(g.ids))}
	for i, id := range g.ids {
		w.ids[i] = dotEscape(id)
	}
	return w
}

func dotEscape(s string) string {
	if !strings.ContainsAny(s, `\"`) {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `"`, `\"`)
}

func (w *dotWriter) str(s string) { w.b.WriteString(dotEscape(s)) }

func (w *dotWriter) nodeName(ng *NodeGraph) string {
	if int(ng.rank) >= len(w.nodes) {
		w.nodes = append(w.nodes, make([]string, int(ng.rank)+1-len(w.nodes))...)
	}
	if w.nodes[ng.rank] == "" {
		w.nodes[ng.rank] = dotEscape(ng.Node)
	}
	return w.nodes[ng.rank]
}

// placed reports whether to is a task of a graph renderGraph built, with its
// position and node.
func (w *dotWriter) placed(to *PlacedTask, task string) bool {
	return to != nil && to.node != nil && int(to.idx) < len(w.ids) && w.g.ids[to.idx] == task
}

// id writes the quoting of task@node, '@' needing none. A task of a graph
// renderGraph built has its position and node; any other is escaped as it is.
func (w *dotWriter) id(to *PlacedTask, task, node string) {
	b := w.b
	b.WriteByte('"')
	if w.placed(to, task) {
		b.WriteString(w.ids[to.idx])
		b.WriteByte('@')
		b.WriteString(w.nodeName(to.node))
	} else {
		w.str(task)
		b.WriteByte('@')
		w.str(node)
	}
	b.WriteByte('"')
}

// idOn writes the quoting of the task of position idx on node ng.
func (w *dotWriter) idOn(idx int32, ng *NodeGraph) {
	w.b.WriteByte('"')
	w.b.WriteString(w.ids[idx])
	w.b.WriteByte('@')
	w.b.WriteString(w.nodeName(ng))
	w.b.WriteByte('"')
}

// header opens the graph. newrank lets Graphviz rank a condensed graph, whose
// edges between boxes go both ways (without it, dot stops with "trouble in
// init_rank"); the full graph keeps the header it always had.
func (w *dotWriter) header(cluster string, newrank bool) {
	w.b.WriteString(`digraph "`)
	w.str(cluster + "/" + w.g.Type)
	w.b.WriteString("\" {\n  rankdir=LR;\n")
	if newrank {
		w.b.WriteString("  newrank=true;\n")
	}
	w.b.WriteString("  node [shape=box, fontsize=10];\n")
}

// box writes the cluster box number i, labelled label, with the tasks of ng.
func (w *dotWriter) box(i int, label string, ng *NodeGraph) {
	b := w.b
	b.WriteString("  subgraph cluster_")
	b.WriteString(strconv.Itoa(i))
	b.WriteString(" {\n    label=\"")
	w.str(label)
	b.WriteString("\";\n")
	for _, pt := range ng.Tasks {
		b.WriteString("    ")
		w.id(pt, pt.ID(), ng.Node)
		b.WriteString(` [label="`)
		w.str(pt.ID())
		if pt.Type() == "skipped" {
			b.WriteString(`", style=dashed];` + "\n")
		} else {
			b.WriteString(`"];` + "\n")
		}
	}
	b.WriteString("  }\n")
}

// over reports whether the file written so far is over limit bytes.
func (w *dotWriter) over(limit int) bool { return w.b.Len()-w.start > limit }

// full writes the whole graph and reports whether it is at most limit bytes long;
// it stops as soon as it is not.
func (w *dotWriter) full(cluster string, limit int) bool {
	b := w.b
	w.header(cluster, false)
	for i, ng := range w.g.Nodes {
		w.box(i, ng.Node, ng)
		if w.over(limit) {
			return false
		}
	}
	for _, ng := range w.g.Nodes {
		for _, pt := range ng.Tasks {
			for e := range pt.Requires() {
				b.WriteString("  ")
				w.id(e.raw, e.Task(), e.Node())
				b.WriteString(" -> ")
				w.id(pt, pt.ID(), ng.Node)
				b.WriteString(";\n")
			}
			if w.over(limit) {
				return false
			}
		}
	}
	b.WriteString("}\n")
	return !w.over(limit)
}

// dotGroup is the nodes drawn as one box of a condensed graph: nodes of one class
// (the same resolution tags) with the same tasks, of the same types, and the same
// edges among their own tasks. Its first node (the lowest id) is the one drawn. The
// master and sync pseudo nodes are groups of their own.
type dotGroup struct {
	nodes []*NodeGraph // by id
}

// dotGroups divides g's nodes into groups, in the order of their first nodes.
func dotGroups(g *Graph) *dotGrouping {
	gr := &dotGrouping{}
	maxRank := int32(0)
	for _, ng := range g.Nodes {
		maxRank = max(maxRank, ng.rank)
	}
	gr.of = make([]int32, maxRank+1)
	for i := range gr.of {
		gr.of[i] = -1
	}
	buckets := map[uint64][]int32{}
	for _, ng := range g.Nodes {
		gi := int32(-1)
		h := uint64(0)
		if ng.Tags != nil {
			h = dotShapeHash(ng)
			for _, c := range buckets[h] {
				if sameDOTShape(gr.groups[c].nodes[0], ng) {
					gi = c
					break
				}
			}
		}
		if gi < 0 {
			gi = int32(len(gr.groups))
			gr.groups = append(gr.groups, &dotGroup{})
			if ng.Tags != nil {
				buckets[h] = append(buckets[h], gi)
			}
		}
		gr.groups[gi].nodes = append(gr.groups[gi].nodes, ng)
		gr.of[ng.rank] = gi
	}
	return gr
}

type dotGrouping struct {
	groups []*dotGroup
	of     []int32 // node rank → group, -1 for a node without one
}

// groupOf returns the group of the node of a placed task, or -1.
func (gr *dotGrouping) groupOf(pt *PlacedTask) int32 {
	if pt == nil || pt.node == nil || int(pt.node.rank) >= len(gr.of) {
		return -1
	}
	return gr.of[pt.node.rank]
}

// sameNode reports whether edge e of a task of ng joins two tasks of ng (a
// template stands for a task of the holder's node).
func sameNode(e Edge, ng *NodeGraph) bool {
	return e.raw.seq < 0 || e.raw.node == ng
}

// dotShapeHash hashes what sameDOTShape compares (FNV-1a).
func dotShapeHash(ng *NodeGraph) uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint32) {
		for range 4 {
			h ^= uint64(v & 0xff)
			h *= 1099511628211
			v >>= 8
		}
	}
	mix(uint32(ng.class))
	var own []int32
	for _, pt := range ng.byID {
		v := uint32(pt.idx) << 1
		if pt.Type() == "skipped" {
			v |= 1
		}
		mix(v)
		// Held edges: a cluster node's tasks gather no fan-in.
		own = pt.ownIdx(own[:0])
		for _, idx := range own {
			mix(uint32(idx) | 1<<31)
		}
	}
	return h
}

// sameDOTShape reports whether nodes a and b are of one class and have the same
// tasks, types and local edges.
func sameDOTShape(a, b *NodeGraph) bool {
	if a.class != b.class || len(a.byID) != len(b.byID) {
		return false
	}
	var ea, eb []int32
	for i, pa := range a.byID {
		pb := b.byID[i]
		if pa.idx != pb.idx || pa.Type() != pb.Type() {
			return false
		}
		// A cluster node's tasks gather no fan-in.
		ea, eb = pa.ownIdx(ea[:0]), pb.ownIdx(eb[:0])
		if !slices.Equal(ea, eb) {
			return false
		}
	}
	return true
}

// boxIDs names each group's box (the node part of its tasks' ids). A box of one
// node is named by the node, as in the full graph (master and sync included). A
// box of several nodes is named by their class's tags, sorted and joined by "+"
// (see boxName), and when the class is split into several such boxes, all but the
// largest (the first of equal ones) add "~" and their first node. So a box's ids
// stay put when other nodes join or leave it, its first node included.
func (gr *dotGrouping) boxIDs() []string {
	ids := make([]string, len(gr.groups))
	used := map[string]bool{}
	largest := map[int32]int{} // class → its largest group of several nodes
	for gi, grp := range gr.groups {
		f := grp.nodes[0]
		if len(grp.nodes) == 1 {
			ids[gi] = f.Node
			used[f.Node] = true
			continue
		}
		if l, ok := largest[f.class]; !ok || len(grp.nodes) > len(gr.groups[l].nodes) {
			largest[f.class] = gi
		}
	}
	for gi, grp := range gr.groups {
		f := grp.nodes[0]
		if len(grp.nodes) == 1 {
			continue
		}
		id := boxName(sortedTags(f))
		if largest[f.class] != gi {
			id += "~" + f.Node
		}
		for used[id] {
			id += "~" + f.Node
		}
		used[id] = true
		ids[gi] = id
	}
	return ids
}

// boxName names the box of a class with tags: the tags joined by "+" when that is
// at most 24 bytes, else class- and the start of their SHA-256, so that long ids do
// not weigh down every line of a box's edges.
func boxName(tags []string) string {
	name := strings.Join(tags, "+")
	switch {
	case len(tags) == 0:
		return "(no tags)"
	case len(name) > 24:
		sum := sha256.Sum256([]byte(strings.Join(tags, "\x00")))
		return "class-" + hex.EncodeToString(sum[:3])
	}
	return name
}

// sortBoxes puts the groups in the order of their boxes and returns their names
// (boxIDs): first the boxes of several nodes, by name, then the boxes of one node,
// cluster nodes by id, then master and sync. A box's place then does not depend on
// its first node, so a node joining or leaving a class does not move its box or
// its edges in the file.
func (gr *dotGrouping) sortBoxes() []string {
	ids := gr.boxIDs()
	order := make([]int, len(gr.groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		sa, sb := len(gr.groups[a].nodes) == 1, len(gr.groups[b].nodes) == 1
		switch {
		case sa != sb:
			if sa {
				return 1
			}
			return -1
		case sa:
			return 0 // already by id
		}
		return strings.Compare(ids[a], ids[b])
	})
	groups := make([]*dotGroup, len(order))
	sorted := make([]string, len(order))
	for i, gi := range order {
		groups[i], sorted[i] = gr.groups[gi], ids[gi]
		for _, ng := range groups[i].nodes {
			gr.of[ng.rank] = int32(i)
		}
	}
	gr.groups = groups
	return sorted
}

// sortedTags are a cluster node's resolution tags, sorted, each once.
func sortedTags(ng *NodeGraph) []string {
	tags := slices.Clone(ng.Tags.Resolution)
	slices.Sort(tags)
	return slices.Compact(tags)
}

// boxLabel is the label of a group's box: the class's tags, how many nodes it
// stands for and the first few of them.
func boxLabel(grp *dotGroup) string {
	first := grp.nodes[0]
	if first.Tags == nil {
		return first.Node
	}
	tags := sortedTags(first)
	var s strings.Builder
	if len(tags) == 0 {
		s.WriteString("(no tags)")
	} else {
		s.WriteString(strings.Join(tags, ", "))
	}
	fmt.Fprintf(&s, " ×%d: ", len(grp.nodes))
	const shown = 3
	for i, ng := range grp.nodes {
		if i == shown && len(grp.nodes) > shown+1 {
			fmt.Fprintf(&s, ", … (%d more)", len(grp.nodes)-shown)
			break
		}
		if i > 0 {
			s.WriteString(", ")
		}
		s.WriteString(ng.Node)
	}
	return s.String()
}

// counts returns the number of cluster nodes and of their groups.
func (gr *dotGrouping) counts() (nodes, groups int) {
	for _, grp := range gr.groups {
		if grp.nodes[0].Tags != nil {
			nodes += len(grp.nodes)
			groups++
		}
	}
	return nodes, groups
}

// explainHint is how to see a node's full graph.
func explainHint(cluster, typ string) string {
	return fmt.Sprintf("fuelsync explain --cluster %s --graph %s --node NODE, or the artifact %s",
		cluster, typ, NodeAddress(cluster, "NODE", typ))
}

// comment writes s as // comment lines, one per line of s.
func (w *dotWriter) comment(s string) {
	for line := range strings.SplitSeq(s, "\n") {
		w.b.WriteString("// ")
		w.b.WriteString(line)
		w.b.WriteByte('\n')
	}
}

// condensed writes the graph condensed by groups and reports whether it is at most
// limit bytes long; it stops as soon as it is not. Each group is one box with
// its first node's tasks, ids task@<box> (boxIDs); its first node's local edges are
// drawn as they are; every other edge is drawn once per (task, group) → (task,
// group) pair, blue, labelled with the number of node pairs unless it joins every
// node of one group to every node of the other (so that a stage's fan-in from a
// class of nodes does not change with the size of the class).
func (w *dotWriter) condensed(cluster string, gr *dotGrouping, fullLimit, limit int) bool {
	w.condensedHeader(cluster, gr, fullLimit)
	for i, grp := range gr.groups {
		w.box(i, boxLabel(grp), grp.nodes[0])
		if w.over(limit) {
			return false
		}
	}
	pos := make([]int32, len(w.g.ids)) // task idx → position in the first node's byID
	var ec edgeCounts
	for _, grp := range gr.groups {
		for i, pt := range grp.nodes[0].byID {
			pos[pt.idx] = int32(i)
		}
		ec.heldSources(w, gr, grp)
		for _, pt := range grp.nodes[0].Tasks {
			w.condensedEdges(gr, grp, pt, pos, &ec)
			if w.over(limit) {
				return false
			}
		}
	}
	w.b.WriteString("}\n")
	return !w.over(limit)
}

// condensedHeader writes the comment that says how the graph is condensed, opens
// the graph, and names the tasks of a box after the box, not its first node.
func (w *dotWriter) condensedHeader(cluster string, gr *dotGrouping, fullLimit int) {
	name := oneLine(cluster + "/" + w.g.Type)
	nodes, groups := gr.counts()
	w.comment(fmt.Sprintf("%s: condensed by node class, the full graph being over %s: %d nodes drawn as %d boxes.\n"+
		"A box stands for the nodes with the same tags, tasks and dependencies among their own tasks,\n"+
		"and shows the tasks of its first node. Ids are task@<box>: a box of one node is named by the\n"+
		"node, a box of several by their tags (joined by +, or class-<hash> when that is long; a class\n"+
		"of nodes split into several boxes names all but its largest ~<first node>).\n"+
		"A blue edge joins tasks of different nodes: every node of one box to every node of the other,\n"+
		"or, labelled ×N, N such pairs of nodes.\n"+
		"A node's full graph: %s.",
		name, sizeText(fullLimit), nodes, groups, oneLine(explainHint(cluster, w.g.Type))))
	w.header(cluster, true)
	w.nodes = make([]string, len(gr.of))
	for gi, id := range gr.sortBoxes() {
		w.nodes[gr.groups[gi].nodes[0].rank] = dotEscape(id)
	}
}

// edgeCounts are the buffers of condensedEdges, reused from task to task.
type edgeCounts struct {
	srcs     []uint64 // group<<32 | idx of the other ends of a task's edges
	runs     []srcRun // srcs counted
	gathered []srcRun // a stage's fan-in counted by group<<32 | idx
	// The shared edges (sharedEdges) of the tasks at one position of a box's
	// nodes, when they share them: how many of those tasks (members) have each
	// (members + less[i] for edge i).
	shared  *sharedEdges
	members int
	less    []int
	// held are the box ends of the held edges of the group's tasks, by
	// position, and plain whether none of the tasks at a position has a fan-in
	// or shared edges (heldSources).
	held  [][]uint64
	plain []bool
}

// heldSources returns, for each position of the tasks of group grp's nodes (which
// have the same tasks), the other ends (group<<32 | idx) of the held edges that
// join the tasks at that position to tasks of a box on other nodes: what
// crossSources counts of them, but for the tasks with a fan-in. They are gathered
// node by node, as the nodes' tasks and edges lie in memory, into ec's buffers.
func (ec *edgeCounts) heldSources(w *dotWriter, gr *dotGrouping, grp *dotGroup) {
	n := len(grp.nodes[0].byID)
	held := ec.held
	if cap(held) < n {
		held = append(held[:cap(held)], make([][]uint64, n-cap(held))...)
	}
	held = held[:n]
	for p := range held {
		held[p] = held[p][:0]
	}
	ec.held = held
	ec.plain = slices.Grow(ec.plain[:0], n)[:n]
	for p := range ec.plain {
		ec.plain[p] = true
	}
	for _, m := range grp.nodes {
		for p, mpt := range m.byID {
			fanIn := mpt.gather() != nil
			if fanIn || mpt.sharing() != nil {
				ec.plain[p] = false
			}
			if fanIn {
				continue
			}
			for _, e := range mpt.requires {
				if sameNode(e, m) {
					continue
				}
				if sg := gr.groupOf(e.raw); sg >= 0 && w.placed(e.raw, e.Task()) {
					held[p] = append(held[p], uint64(sg)<<32|uint64(uint32(e.raw.idx)))
				}
			}
		}
	}
}

// condensedEdges writes the edges of task pt of the first node of group grp (pos
// maps a task idx to its position on that node): the first node's edges among its
// own tasks as they are, then the edges from other nodes of the group's tasks at
// that position, once per task of another box (crossSources, count).
func (w *dotWriter) condensedEdges(gr *dotGrouping, grp *dotGroup, pt *PlacedTask, pos []int32, ec *edgeCounts) {
	first := grp.nodes[0]
	// Held edges: a stage's fan-in joins other nodes.
	if pt.sharing() == nil {
		for _, e := range pt.requires {
			if sameNode(e, first) {
				w.edgeTo(pt.edge(e), pt.idx, first, "")
			}
		}
	} else {
		pt.eachOwn(func(e Edge) bool {
			w.edgeTo(e, pt.idx, first, "")
			return true
		})
	}
	p := pos[pt.idx]
	ec.srcs = append(ec.srcs[:0], ec.held[p]...)
	ec.gathered = nil
	ec.shared = nil
	members := grp.nodes
	if ec.plain[p] {
		members = members[:1] // the others' edges are all in held
	}
	for _, m := range members {
		// A task's shared edges are counted once for all (sharedCount), its
		// held ones as they are.
		mpt := m.byID[p]
		w.crossSources(gr, m, first, mpt, ec)
		if mpt.sharing() != nil {
			ec.sharedCount(m, mpt)
		}
	}
	ec.addShared(gr)
	for _, r := range ec.count() {
		src, n := r.src, r.n
		b := w.b
		b.WriteString("  ")
		w.idOn(int32(uint32(src)), gr.groups[src>>32].nodes[0])
		b.WriteString(" -> ")
		w.idOn(pt.idx, first)
		if n != len(gr.groups[src>>32].nodes)*len(grp.nodes) {
			b.WriteString(` [color=blue, label="×`)
			b.WriteString(strconv.Itoa(n))
			b.WriteString(`"];` + "\n")
		} else {
			b.WriteString(" [color=blue];\n")
		}
	}
}

// crossSources adds to ec the other ends of the edges of mpt, the task on node m of
// a group whose first node is first, that join another node: a task of a box as
// group<<32 | idx (a stage's fan-in counted by gathered; the held edges of a task
// without one are in ec.held already), any other drawn as it is, for the first
// node only.
func (w *dotWriter) crossSources(gr *dotGrouping, m, first *NodeGraph, mpt *PlacedTask, ec *edgeCounts) {
	edges := mpt.requires // not the shared ones
	counted := mpt.gather() != nil
	if counted {
		// A stage's fan-in: one count per box and task, not one entry per
		// node and task.
		counts, ok := w.gathered(mpt, gr)
		if !ok {
			edges = mpt.AllRequires()
		} else {
			ec.gathered = append(ec.gathered, counts...)
		}
	}
	if !counted && m != first {
		return
	}
	for _, e := range edges {
		if sameNode(e, m) {
			continue
		}
		sg := gr.groupOf(e.raw)
		if sg < 0 || !w.placed(e.raw, e.Task()) {
			// Not a task of this graph's nodes: drawn as it is, for the
			// first node only.
			if m == first {
				w.edgeTo(e, mpt.idx, first, " [color=blue]")
			}
			continue
		}
		if counted {
			ec.srcs = append(ec.srcs, uint64(sg)<<32|uint64(uint32(e.raw.idx)))
		}
	}
}

// count returns the edges of srcs and gathered counted by source, in the order of
// their sources.
func (ec *edgeCounts) count() []srcRun {
	srcs := ec.srcs
	slices.Sort(srcs)
	runs := ec.runs[:0]
	for k := 0; k < len(srcs); {
		n := 1
		for k+n < len(srcs) && srcs[k+n] == srcs[k] {
			n++
		}
		runs = append(runs, srcRun{srcs[k], n})
		k += n
	}
	if len(ec.gathered) > 0 {
		runs = append(runs, ec.gathered...)
		slices.SortFunc(runs, func(a, b srcRun) int { return cmp.Compare(a.src, b.src) })
		out := runs[:0]
		for _, r := range runs {
			if len(out) > 0 && out[len(out)-1].src == r.src {
				out[len(out)-1].n += r.n
				continue
			}
			out = append(out, r)
		}
		runs = out
	}
	ec.runs = runs
	return runs
}

// edgeTo writes edge e of the task of position idx on node ng, with attrs ("" or
// " [...]").
func (w *dotWriter) edgeTo(e Edge, idx int32, ng *NodeGraph, attrs string) {
	w.b.WriteString("  ")
	w.id(e.raw, e.Task(), e.Node())
	w.b.WriteString(" -> ")
	w.idOn(idx, ng)
	w.b.WriteString(attrs)
	w.b.WriteString(";\n")
}

// srcRun is how many edges come from one task of one box (src is group<<32 | idx).
type srcRun struct {
	src uint64
	n   int
}

// gathered counts the edges stage's fan-in gathers by box and task (group<<32 |
// idx), but those it also holds (drawn from its held edges), in the order of
// their keys. It reports false when a gathered task is not on a node of the
// grouping: the caller then draws every edge one by one.
func (w *dotWriter) gathered(stage *PlacedTask, gr *dotGrouping) ([]srcRun, bool) {
	ids := len(w.g.ids)
	// A counter per box and task when that is small (the usual few boxes), else a
	// map.
	var dense []int32
	var sparse map[uint64]int
	if len(gr.groups)*ids <= 1<<20 {
		dense = make([]int32, len(gr.groups)*ids)
	} else {
		sparse = map[uint64]int{}
	}
	for _, ng := range stage.gather().nodes {
		if int(ng.rank) >= len(gr.of) || gr.of[ng.rank] < 0 {
			return nil, false
		}
		sg := int(gr.of[ng.rank])
		for _, t := range ng.byID {
			if stageSource(stage, t) == nil || stage.holds(t) {
				continue
			}
			if !w.placed(t, t.ID()) {
				return nil, false
			}
			if dense != nil {
				dense[sg*ids+int(t.idx)]++
			} else {
				sparse[uint64(sg)<<32|uint64(uint32(t.idx))]++
			}
		}
	}
	var runs []srcRun
	for i, n := range dense {
		if n > 0 {
			runs = append(runs, srcRun{uint64(i/ids)<<32 | uint64(i%ids), int(n)})
		}
	}
	for src, n := range sparse {
		runs = append(runs, srcRun{src, n})
	}
	slices.SortFunc(runs, func(a, b srcRun) int { return cmp.Compare(a.src, b.src) })
	return runs, true
}

// note writes a graph that only says why it is not drawn.
func (w *dotWriter) note(cluster string, gr *dotGrouping, limit int) {
	name := oneLine(cluster + "/" + w.g.Type)
	nodes, groups := gr.counts()
	text := fmt.Sprintf("%s: %d nodes in %d classes: not drawn, the graph condensed by node class being over %s.\n"+
		"A node's full graph: %s.", name, nodes, groups, sizeText(limit), oneLine(explainHint(cluster, w.g.Type)))
	w.comment(text)
	w.header(cluster, false)
	w.b.WriteString(`  note [shape=note, label="`)
	for i, line := range strings.Split(text, "\n") {
		if i > 0 {
			w.b.WriteString(`\n`)
		}
		w.str(line)
	}
	w.b.WriteString("\"];\n}\n")
}

// oneLine keeps s on one line of a comment.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}

// sizeText writes a limit in bytes as KiB or MiB when it is a whole number of them.
func sizeText(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
