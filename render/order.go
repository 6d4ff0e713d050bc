package render

import (
	"fmt"
	"slices"
	"strings"
)

// order sorts every node's tasks topologically over the whole cluster graph (ties
// by task id, then node) and reports every cycle: one error per strongly connected
// group of tasks that cannot be ordered.
func (gb *graphBuilder) order() {
	all := gb.placed
	sc := gb.successors()
	// Ready tasks by id, then node: a heap of their seq, which numbers the
	// placed tasks so (indexNodes).
	var h keyHeap
	indeg := sc.indeg
	release := func(t int32) {
		if indeg[t]--; indeg[t] == 0 {
			h.push(t)
		}
	}
	for s := range all {
		if indeg[s] == 0 {
			h.push(int32(s))
		}
	}
	for _, ng := range gb.nodes {
		ng.Tasks = make([]*PlacedTask, 0, len(ng.byID))
	}
	done := make([]bool, len(all))
	count := 0
	for len(h.items) > 0 {
		s := h.pop()
		done[s] = true
		count++
		ng := gb.nodes[gb.seqNode[s]]
		ng.Tasks = append(ng.Tasks, all[s])
		for _, t := range sc.succ[sc.start[s]:sc.start[s+1]] {
			if int(t) >= len(all) {
				sc.hubs[int(t)-len(all)].taskDone(done, release)
			} else if indeg[t]--; indeg[t] == 0 {
				h.push(t)
			}
		}
		if idx := gb.seqIdx[s]; len(gb.defAt[idx].stages) > 0 {
			gb.gatheredBy(gb.seqNode[s], idx, func(stage *PlacedTask) { release(stage.seq) })
		}
	}
	gb.seqNode, gb.seqIdx = nil, nil
	if count == len(all) {
		return
	}
	indeg = indeg[:len(all)]
	gb.reportCycles(indeg)
	// Append what is left so artifacts stay complete and deterministic.
	for _, ng := range gb.nodes {
		for _, pt := range ng.byID {
			if indeg[pt.seq] > 0 {
				ng.Tasks = append(ng.Tasks, pt)
			}
		}
	}
}

// successors are the order's graph: succ[start[i]:start[i+1]] follow task i (by
// seq), and indeg[i] is how many tasks or hubs task i waits for.
//
// Tasks follow the tasks of the edges they hold. A stage's fan-in is not listed: a
// task done releases the stages that gather it (gatheredBy). Nor are the edges
// tasks share (sharedEdges): each shared list is a hub (numbered after the tasks),
// which follows each task of the list and releases its sharers (orderHub.taskDone).
// A task is released at the step it would be by its edges, so the order is the same.
type successors struct {
	start, succ, indeg []int32
	hubs               []orderHub
}

func (gb *graphBuilder) successors() successors {
	all := gb.placed
	var sc successors
	for _, list := range gb.sharedLists {
		if len(list.sharers) > 0 {
			sc.hubs = append(sc.hubs, orderHub{list: list, left: int32(len(list.edges))})
		}
	}
	sc.start = make([]int32, len(all)+1)
	sc.indeg = make([]int32, len(all))
	// Node by node, as the tasks lie in memory (their seq is by id).
	each := func(f func(pt *PlacedTask)) {
		for _, ng := range gb.nodes {
			for _, pt := range ng.byID {
				f(pt)
			}
		}
	}
	each(func(pt *PlacedTask) {
		for _, e := range pt.requires {
			sc.start[pt.edge(e).raw.seq+1]++
		}
		sc.indeg[pt.seq] = int32(len(pt.requires))
		if f := pt.gather(); f != nil {
			sc.indeg[pt.seq] += int32(f.count)
		}
		if sh := pt.sharing(); sh != nil && sh.waits {
			sc.indeg[pt.seq]++
		}
	})
	for _, hb := range sc.hubs {
		for _, e := range hb.list.edges {
			sc.start[e.raw.seq+1]++
		}
	}
	for i := range all {
		sc.start[i+1] += sc.start[i]
	}
	sc.succ = make([]int32, sc.start[len(all)])
	// Each task's successors are written from the end of its run back: start[i]
	// is the end of run i, and counts down to its first (no copy of start to
	// count up in). The order does not depend on the successors' order.
	copy(sc.start, sc.start[1:])
	add := func(to *PlacedTask, s int32) {
		sc.start[to.seq]--
		sc.succ[sc.start[to.seq]] = s
	}
	each(func(pt *PlacedTask) {
		for _, e := range pt.requires {
			add(pt.edge(e).raw, pt.seq)
		}
	})
	for h, hb := range sc.hubs {
		for _, e := range hb.list.edges {
			add(e.raw, int32(len(all)+h))
		}
	}
	return sc
}

// orderHub is a shared edge list in the order: how many of its tasks are not done.
type orderHub struct {
	list *sharedEdges
	left int32
}

// taskDone counts down one of the hub's tasks done. A sharer waits for every task
// of the list but itself: one that is not in the list is released when the last is
// done; one in the list when every other is, as it is then the one left.
func (hb *orderHub) taskDone(done []bool, release func(t int32)) {
	hb.left--
	switch hb.left {
	case 1:
		for _, e := range hb.list.edges {
			if !done[e.raw.seq] {
				if sh := e.raw.sharing(); sh != nil && sh.list == hb.list && sh.waits {
					release(e.raw.seq)
				}
				return
			}
		}
	case 0:
		for _, pt := range hb.list.sharers {
			if !done[pt.seq] { // those in the list are done
				release(pt.seq)
			}
		}
	}
}

// reportCycles reports one cycle in each strongly connected group of the tasks left
// unordered (those with indeg > 0).
func (gb *graphBuilder) reportCycles(indeg []int32) {
	all := gb.placed
	comp := make([]int32, len(all))
	for i := range comp {
		comp[i] = -1
	}
	// Roots in node order, then id order, so that reports are deterministic; only
	// the tasks left and the edges between them.
	var roots []int32
	for _, ng := range gb.nodes {
		for _, pt := range ng.byID {
			if indeg[pt.seq] > 0 {
				roots = append(roots, pt.seq)
			}
		}
	}
	var groups [][]*PlacedTask
	ncomp := int32(0)
	// The edges of a stage or of a task sharing edges (sharedEdges) as a slice,
	// made once (such a task left unordered is rare).
	var stageReq map[int32][]Edge
	stronglyConnected(len(all), roots, func(v int32, i int) (int32, bool) {
		req := all[v].requires
		if all[v].gather() != nil || all[v].sharing() != nil {
			var ok bool
			if req, ok = stageReq[v]; !ok {
				if stageReq == nil {
					stageReq = map[int32][]Edge{}
				}
				req = all[v].AllRequires()
				stageReq[v] = req
			}
		}
		if i >= len(req) {
			return 0, false
		}
		if w := all[v].edge(req[i]).raw.seq; indeg[w] > 0 {
			return w, true
		}
		return -1, true
	}, func(members []int32) {
		for _, w := range members {
			comp[w] = ncomp
		}
		ncomp++
		if len(members) > 1 {
			group := make([]*PlacedTask, len(members))
			for i, w := range members {
				group[i] = all[w]
			}
			groups = append(groups, group)
		}
	})
	// A group of tasks of one cluster node is the same group on every node of its
	// class (same tasks, same local edges): reported once, on the class's first
	// node (roots are in node order).
	reported := map[string]bool{}
	for _, members := range groups {
		if ng := members[0].node; ng.Tags != nil && onOneNode(members) {
			ids := make([]int32, len(members))
			for i, pt := range members {
				ids[i] = pt.idx
			}
			slices.Sort(ids)
			key := fmt.Sprint(ng.class, ids)
			if reported[key] {
				continue
			}
			reported[key] = true
		}
		gb.reportCycle(members, comp)
	}
}

// onOneNode reports whether the tasks are all on the same node.
func onOneNode(tasks []*PlacedTask) bool {
	for _, pt := range tasks[1:] {
		if pt.node != tasks[0].node {
			return false
		}
	}
	return true
}

// reportCycle finds a cycle inside one strongly connected group and reports it:
// from its first task (by node, then id), follow the smallest predecessor (by task
// id, then node name) inside the group until a task repeats.
func (gb *graphBuilder) reportCycle(members []*PlacedTask, comp []int32) {
	start := slices.MinFunc(members, func(a, b *PlacedTask) int {
		if a.node.rank != b.node.rank {
			return int(a.node.rank - b.node.rank)
		}
		return int(a.idx - b.idx)
	})
	c := comp[start.seq]
	pos := map[*PlacedTask]int{}
	var path []*PlacedTask
	pt := start
	for {
		if i, ok := pos[pt]; ok {
			path = path[i:]
			break
		}
		pos[pt] = len(path)
		path = append(path, pt)
		var next *PlacedTask
		for e := range pt.Requires() {
			x := e.raw
			if comp[x.seq] != c {
				continue
			}
			if next == nil || x.idx < next.idx || (x.idx == next.idx && x.node.Node < next.node.Node) {
				next = x
			}
		}
		if next == nil {
			return
		}
		pt = next
	}
	// path is in "requires" direction; print it in execution order.
	slices.Reverse(path)
	parts := make([]string, 0, len(path)+1)
	for _, p := range path {
		parts = append(parts, p.ID()+"@"+p.node.Node)
	}
	parts = append(parts, parts[0])
	gb.g.cycles = true
	gb.diags = append(gb.diags, withDetail(errorAt(path[0].Def.Task.Range, "graph %s: dependency cycle: %s", gb.typ, strings.Join(parts, " -> ")),
		"Each task must come after the one before it in this list, which cannot hold; remove one of the requires, required_for or cross-depends entries."))
}

// keyHeap is a binary min-heap of task seqs.
type keyHeap struct {
	items []int32
}

func (h *keyHeap) push(k int32) {
	h.items = append(h.items, k)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h.items[i] >= h.items[p] {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *keyHeap) pop() int32 {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l, r, small := 2*i+1, 2*i+2, i
		if l < len(h.items) && h.items[l] < h.items[small] {
			small = l
		}
		if r < len(h.items) && h.items[r] < h.items[small] {
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
