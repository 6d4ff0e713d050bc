package render

import (
	"slices"
	"sort"
	"sync"
)

// Shared cross-node edges.
//
// A cross-depends entry binds a task to the tasks it names on the nodes it selects.
// Those nodes are worked out once per definition (crossEntry.targets), so every
// task of a definition has the same edges from its entries on other nodes than
// `self`, but an edge to itself, which no task has. An entry without a node
// selector selects every node: each of a cluster's n nodes then holds n edges, n²
// in all (the network-verification graph's connectivity-checker). Such edges are
// not copied onto each task: the definition holds them once, sorted by target with
// the first edge of each target kept (sharedEdges), and each of its tasks reads its
// own edges (requires: the local ones, those of its `self` entries and those other
// tasks' cross-depended-by bind to it) merged with them (mergeEdges). The result is
// the list the task would hold with every edge copied, in the same order and with
// the same sources:
//
//   - an edge the task held before its cross-depends were bound (local edges, and
//     cross-depended-by edges bound before) comes first in the order of binding, and
//     wins over a shared edge to the same task;
//   - an edge bound after the shared ones (a `self` entry's, or a later
//     cross-depended-by) to the same task as a shared edge is rare: which of the two
//     wins depends on the entries' order, and the task then holds its edges copied,
//     as without sharing (settleShared).
//
// The node file lists a shared edge as `task@node`, whatever the node whose file it
// is, but for the node's own tasks: the entries are encoded once per definition
// (sharedEdges.flow) and copied in runs between the task's own entries.

// sharedMinEdges is how many edges a definition's entries must bind for its tasks
// to share them; a shorter list is copied onto each task, as reading it merged would
// cost more than the copy.
var sharedMinEdges = 64

// sharedEdges are the edges a definition's cross-depends entries on other nodes
// than self bind, sorted by target (edgeKey) with the first edge of each target
// kept: the same for each of its tasks but the edge to the task itself.
type sharedEdges struct {
	edges   []Edge
	sharers []*PlacedTask // the tasks that share them, for the order
	refs    []sharedRef   // by node rank: each task's use of them (see PlacedTask.sharing)

	flowOnce sync.Once
	flowOK   bool    // every entry is plain in a flow list
	flow     []byte  // each edge's entry in a node file's requires, "task@node, " each
	offs     []int32 // where each entry starts in flow, and len(flow) last
}

// sharedRef is a task's use of its definition's shared edges.
type sharedRef struct {
	list *sharedEdges
	n    int32 // how many of them the task has: all but itself and its held ones' targets
	// waits is whether the list has a task other than the task itself, for the
	// order (orderHub).
	waits bool
}

// sharedPending is a task that shares its definition's edges, until edges has
// sorted its own: at is how many edges it held before its cross-depends entries
// were bound, own how many edges its self entries then added.
type sharedPending struct {
	pt      *PlacedTask
	at, own int32
}

// sharedEdgesOf returns the shared edges of definition d, nil when it binds fewer
// than sharedMinEdges edges on other nodes than self.
func (gb *graphBuilder) sharedEdgesOf(d *TaskDef) *sharedEdges {
	total := 0
	for _, ce := range d.cross {
		if !ce.reverse {
			total += len(ce.tasks) // none for self
		}
	}
	if total < sharedMinEdges {
		return nil
	}
	edges := make([]Edge, 0, total)
	for _, ce := range d.cross {
		if !ce.reverse {
			for _, x := range ce.tasks {
				edges = append(edges, Edge{EdgeSource: ce.src, raw: x})
			}
		}
	}
	var sorter edgeSorter
	edges = sorter.sortCompact(edges, len(gb.ids), len(gb.nodes))
	list := &sharedEdges{edges: slices.Clip(edges)}
	gb.sharedLists = append(gb.sharedLists, list)
	return list
}

// has reports whether the shared edges include one to task t.
func (s *sharedEdges) has(t *PlacedTask) bool {
	_, ok := s.index(t)
	return ok
}

// index returns the position of the shared edge to task t, if any.
func (s *sharedEdges) index(t *PlacedTask) (int, bool) {
	k := edgeKey(t)
	i := sort.Search(len(s.edges), func(i int) bool { return edgeKey(s.edges[i].raw) >= k })
	return i, i < len(s.edges) && s.edges[i].raw == t
}

// settleShared gives each pending task its shared edges, unless an edge it was
// bound after them goes to one of their targets: that task then holds every edge,
// bound in the order they would have been without sharing.
func (gb *graphBuilder) settleShared() {
	for i := range gb.pending {
		p := &gb.pending[i]
		pt, list := p.pt, p.pt.Def.shared
		later := pt.requires[p.at:]
		if !slices.ContainsFunc(later, func(e Edge) bool { return list.has(e.raw) }) {
			if list.refs == nil {
				list.refs = make([]sharedRef, len(gb.nodes))
			}
			list.refs[pt.node.rank] = sharedRef{list: list}
			continue
		}
		out := make([]Edge, 0, len(pt.requires)+len(list.edges))
		out = append(out, pt.requires[:p.at]...)
		out = gb.forwardEdges(pt.node, pt, out, false)
		pt.requires = append(out, pt.requires[p.at+p.own:]...)
		gb.markDirty(pt)
		p.pt = nil
	}
}

// countShared counts each sharing task's shared edges, once its own are sorted
// and compacted: a target it holds an edge to is its own edge's.
func (gb *graphBuilder) countShared() {
	for _, p := range gb.pending {
		if p.pt == nil {
			continue
		}
		list := p.pt.Def.shared
		n := len(list.edges)
		if list.has(p.pt) {
			n--
		}
		ref := p.pt.sharing()
		ref.waits = n > 0
		for _, e := range p.pt.requires {
			if list.has(e.raw) {
				n--
			}
		}
		ref.n = int32(n)
		list.sharers = append(list.sharers, p.pt)
	}
	gb.pending = nil
}

// mergeEdges yields held and shared (both sorted by target) merged by target,
// but the shared edge to self and those to a target held wins.
func mergeEdges(held, shared []Edge, self *PlacedTask, yield func(Edge) bool) bool {
next:
	for _, s := range shared {
		if s.raw == self {
			continue
		}
		k := edgeKey(s.raw)
		for len(held) > 0 && edgeKey(held[0].raw) <= k {
			e := held[0]
			held = held[1:]
			if !yield(e) {
				return false
			}
			if e.raw == s.raw {
				continue next
			}
		}
		if !yield(s) {
			return false
		}
	}
	for _, e := range held {
		if !yield(e) {
			return false
		}
	}
	return true
}

// eachHeld yields the edges of pt but a stage's fan-in: those it holds, merged
// with its shared ones.
func (pt *PlacedTask) eachHeld(yield func(Edge) bool) bool {
	sh := pt.sharing()
	if sh == nil {
		for _, e := range pt.requires {
			if !yield(pt.edge(e)) {
				return false
			}
		}
		return true
	}
	// A sharing task holds no template (see classEdges).
	return mergeEdges(pt.requires, sh.list.edges, pt, yield)
}

// numHeld is the number of edges eachHeld yields.
func (pt *PlacedTask) numHeld() int {
	if sh := pt.sharing(); sh != nil {
		return len(pt.requires) + int(sh.n)
	}
	return len(pt.requires)
}

// eachOwn yields pt's edges to tasks of its own node, in order: the runs of its
// held and shared edges (both sorted by target) to its node. pt shares its
// definition's edges, so it holds no template.
func (pt *PlacedTask) eachOwn(yield func(Edge) bool) {
	r := pt.node.rank
	lo, hi := rankRun(pt.requires, r)
	var shared []Edge
	if sh := pt.sharing(); sh != nil {
		slo, shi := rankRun(sh.list.edges, r)
		shared = sh.list.edges[slo:shi]
	}
	mergeEdges(pt.requires[lo:hi], shared, pt, yield)
}

// ownIdx appends to dst the task idx of pt's edges to tasks of its own node, in
// order.
func (pt *PlacedTask) ownIdx(dst []int32) []int32 {
	if pt.sharing() == nil {
		for _, e := range pt.requires {
			if e.raw.seq < 0 || e.raw.node == pt.node { // a template is of pt's node
				dst = append(dst, e.raw.idx)
			}
		}
		return dst
	}
	pt.eachOwn(func(e Edge) bool {
		dst = append(dst, e.raw.idx)
		return true
	})
	return dst
}

// sharedCount counts the shared edges of mpt, the task of node m at one position
// of a box whose tasks there share them, for a condensed DOT file: each edge
// counts once for each such task, but those to the node's own tasks (drawn as its
// local edges) and those to a task it holds an edge to (counted with its held
// edges).
func (ec *edgeCounts) sharedCount(m *NodeGraph, mpt *PlacedTask) {
	list := mpt.sharing().list
	if ec.shared != list {
		ec.shared, ec.members = list, 0
		ec.less = slices.Grow(ec.less[:0], len(list.edges))[:len(list.edges)]
		clear(ec.less)
	}
	ec.members++
	lo, hi := rankRun(list.edges, m.rank)
	for i := lo; i < hi; i++ {
		ec.less[i]--
	}
	for _, e := range mpt.requires {
		if i, ok := list.index(e.raw); ok && e.raw.node != m {
			ec.less[i]--
		}
	}
}

// addShared adds the shared edges sharedCount counted to the gathered counts, by
// the box and task of their other end.
func (ec *edgeCounts) addShared(gr *dotGrouping) {
	if ec.shared == nil {
		return
	}
	for i, e := range ec.shared.edges {
		if n := ec.members + ec.less[i]; n > 0 {
			ec.gathered = append(ec.gathered, srcRun{uint64(gr.groupOf(e.raw))<<32 | uint64(uint32(e.raw.idx)), n})
		}
	}
}

// rankRun returns the run of edges (sorted by target) to the tasks of node rank r.
func rankRun(edges []Edge, r int32) (lo, hi int) {
	lo = sort.Search(len(edges), func(i int) bool { return edges[i].raw.node.rank >= r })
	hi = lo + sort.Search(len(edges)-lo, func(i int) bool { return edges[lo+i].raw.node.rank > r })
	return lo, hi
}

// sharedRequires writes the requires list of pt, a task of cluster node ng that
// shares its definition's edges. The entries of the shared edges to other nodes
// are copied from the definition's encoding (flow) in runs, between the task's
// held edges; its held edges and the shared ones to its own node, written without
// the node, are written one by one.
func (e *nodeEncoder) sharedRequires(ng *NodeGraph, pt *PlacedTask) error {
	if pt.numHeld() == 0 {
		return nil
	}
	list := pt.sharing().list
	if !list.encodeFlow(e) {
		return errSlowPath
	}
	b := &e.buf
	b.WriteString("    requires: [")
	held, sh := pt.requires, list.edges
	lo, hi := rankRun(sh, ng.rank)
	first := true
	for i := 0; i < len(sh) || len(held) > 0; {
		if i < len(sh) && (i < lo || i >= hi) && (len(held) == 0 || edgeKey(sh[i].raw) < edgeKey(held[0].raw)) {
			j := list.runEnd(i, lo, held)
			if !first {
				b.WriteString(", ")
			}
			b.Write(list.flow[list.offs[i] : list.offs[j]-2])
			first, i = false, j
			continue
		}
		var ed Edge
		if len(held) > 0 && (i == len(sh) || edgeKey(held[0].raw) <= edgeKey(sh[i].raw)) {
			ed, held = held[0], held[1:]
			if i < len(sh) && sh[i].raw == ed.raw {
				i++ // the held edge wins
			}
		} else {
			ed, i = sh[i], i+1
			if ed.raw == pt {
				continue
			}
		}
		if err := e.requirement(ng, ed, first); err != nil {
			return err
		}
		first = false
	}
	b.WriteString("]\n")
	return nil
}

// runEnd is the end of the run of shared edges from i that sharedRequires copies:
// before the run to the node's own tasks (from lo, when i is before it) and before
// the first held edge.
func (s *sharedEdges) runEnd(i, lo int, held []Edge) int {
	end := len(s.edges)
	if i < lo {
		end = lo
	}
	if len(held) > 0 {
		k := edgeKey(held[0].raw)
		end = i + sort.Search(end-i, func(j int) bool { return edgeKey(s.edges[i+j].raw) >= k })
	}
	return end
}

// encodeFlow encodes the shared edges' entries once (with the first encoder that
// asks), each "task@node, ", and reports whether each is plain in a flow list.
func (s *sharedEdges) encodeFlow(e *nodeEncoder) bool {
	s.flowOnce.Do(func() {
		offs := make([]int32, 0, len(s.edges)+1)
		var b []byte
		for _, ed := range s.edges {
			task, node, flow, ok := e.targetFlow(ed)
			if !ok || !flow {
				return
			}
			offs = append(offs, int32(len(b)))
			b = append(append(append(append(b, task...), '@'), node...), ", "...)
		}
		s.flow, s.offs, s.flowOK = b, append(offs, int32(len(b))), true
	})
	return s.flowOK
}
