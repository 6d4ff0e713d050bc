package render

import (
	"cmp"
	"math/bits"
	"regexp"
	"slices"
	"strings"

	"github.com/fuelsync/fuelsync/loader"
)

// Edges: the dependencies of each task on each node.
//
// requires and required_for bind tasks of one node and the sync node. Their
// definition-level form is the relation: preds[y] lists the task ids that come
// before y, with the entry that says so. On a node, an edge through tasks absent
// from it (and from sync) is kept transitively. That depends only on which tasks
// are present, so nodes with the same task set (the same signature) share the work:
// for each signature, ids are visited in an order where every id comes after its
// predecessors (the strongly connected components of the relation, in topological
// order), and each absent id keeps its frontier: the nearest present tasks it
// reaches. A present task's edges are its present predecessors plus the frontiers of
// its absent ones. A derived edge that the node's other edges already imply is left
// out (a transitive reduction of the derived edges; declared edges are always
// written), which keeps a compute node that runs a fifth of the release's tasks
// from inheriting thousands of redundant edges.

// nameMatcher matches a dependency name: exact, or /regex/ anchored at the start.
type nameMatcher struct {
	name    string
	re      *regexp.Regexp
	matches []int32 // the idx of the graph's ids it matches
}

// matcher returns the matcher of a dependency name, compiled once per graph.
func (gb *graphBuilder) matcher(name string) *nameMatcher {
	nm, ok := gb.matchers[name]
	if ok {
		return nm
	}
	nm = &nameMatcher{name: name}
	if len(name) < 2 || !strings.HasPrefix(name, "/") || !strings.HasSuffix(name, "/") {
		if i, ok := gb.index[name]; ok {
			nm.matches = []int32{i}
		}
	} else {
		re, err := regexp.Compile("^(?:" + name[1:len(name)-1] + ")")
		if err != nil {
			re = regexp.MustCompile(`\A\z.`)
		}
		nm.re = re
		for i, id := range gb.ids {
			if re.MatchString(id) {
				nm.matches = append(nm.matches, int32(i))
			}
		}
	}
	gb.matchers[name] = nm
	return nm
}

// matching returns the idx of the graph's ids the name matches.
func (gb *graphBuilder) matching(nm *nameMatcher) []int32 {
	return nm.matches
}

// relation is the definition-level order of one graph.
type relation struct {
	preds [][]relEdge // by idx
	// sccs are the strongly connected components of the relation, each sorted, in
	// an order where every component comes after the components it requires.
	sccs [][]int32
	comp []int32 // idx → its component's position in sccs
}

type relEdge struct {
	pred int32
	src  *EdgeSource
}

func (gb *graphBuilder) buildRelation() {
	rel := &gb.rel
	rel.preds = make([][]relEdge, len(gb.ids))
	expand := func(v *loader.Value, owner, key string, each func(m int32, it *loader.Value)) {
		for _, it := range items(v) {
			name, ok := it.Str()
			if !ok {
				continue
			}
			nm := gb.matcher(name)
			ms := gb.matching(nm)
			if len(ms) == 0 && nm.re == nil {
				gb.warnOnce(it.Range, "task %s: %s %q: no task of that name in graph %s", owner, key, name, gb.typ)
			}
			for _, m := range ms {
				each(m, it)
			}
		}
	}
	for i, id := range gb.ids {
		x := int32(i)
		d := gb.defs[id]
		var src *EdgeSource
		var srcItem *loader.Value
		expand(d.Task.Data.Get("requires"), id, "requires", func(m int32, it *loader.Value) {
			if m == x {
				return
			}
			if srcItem != it {
				src, srcItem = &EdgeSource{Origin: "requires", Range: it.Range}, it
			}
			rel.preds[x] = append(rel.preds[x], relEdge{pred: m, src: src})
		})
		srcItem = nil
		expand(d.Task.Data.Get("required_for"), id, "required_for", func(m int32, it *loader.Value) {
			if m == x {
				return
			}
			if srcItem != it {
				src, srcItem = &EdgeSource{Origin: "required_for of " + id, Range: it.Range}, it
			}
			rel.preds[m] = append(rel.preds[m], relEdge{pred: x, src: src})
		})
	}
	rel.components()
}

// components computes the strongly connected components of the relation (Tarjan's
// algorithm, iterative), emitted predecessors first.
func (rel *relation) components() {
	rel.comp = make([]int32, len(rel.preds))
	stronglyConnected(len(rel.preds), nil, func(v int32, i int) (int32, bool) {
		if i < len(rel.preds[v]) {
			return rel.preds[v][i].pred, true
		}
		return 0, false
	}, func(members []int32) {
		for _, w := range members {
			rel.comp[w] = int32(len(rel.sccs))
		}
		scc := slices.Clone(members)
		slices.Sort(scc)
		rel.sccs = append(rel.sccs, scc)
	})
}

// edges builds every dependency of every placed task.
func (gb *graphBuilder) edges() {
	gb.buildRelation()
	n := len(gb.ids)
	// What each definition binds across nodes, before the local edges are
	// written: they keep room for it.
	for _, ng := range gb.nodes {
		for _, pt := range ng.byID {
			gb.defEdges(pt.Def)
		}
	}
	// The sync node first: the other nodes' edges to it build on its own.
	syncRes := gb.localEdges(gb.sync, nil)
	gb.instantiate(gb.sync, syncRes, nil)
	// Then the other nodes, grouped by signature.
	groups := map[string][]*NodeGraph{}
	var keys []string
	sigOf := map[int32]string{} // by placement class: its nodes have the same tasks
	for _, ng := range gb.nodes {
		if ng == gb.sync || len(ng.byID) == 0 {
			continue
		}
		key, ok := sigOf[gb.pclass[ng.rank]]
		if !ok {
			key = signature(ng.byID, n)
			sigOf[gb.pclass[ng.rank]] = key
		}
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], ng)
	}
	for _, key := range keys {
		members := groups[key]
		res := gb.localEdges(members[0], syncRes)
		alike := gb.classEdgesOf(members[0], res)
		for _, ng := range members {
			gb.instantiate(ng, res, alike)
		}
	}
	// Cross-node edges. A task whose edges this adds to is marked (markDirty): the
	// local edges are already in order. The stages' fan-in is not held: each stage
	// keeps the nodes it gathers from (buildFanIns; see fanIn).
	gb.dirty = make([]uint64, (len(gb.placed)+63)/64)
	gb.buildFanIns()
	for _, ng := range gb.nodes {
		for _, pt := range ng.byID {
			gb.crossEdges(ng, pt)
		}
	}
	gb.settleShared()
	// Sorted by node then task; the first edge of a pair wins.
	var sorter edgeSorter
	for _, ng := range gb.nodes {
		for _, pt := range ng.byID {
			if len(pt.requires) < 2 || gb.dirty[pt.seq>>6]&(1<<(pt.seq&63)) == 0 {
				continue
			}
			pt.requires = sorter.sortCompact(pt.requires, n, len(gb.nodes))
		}
	}
	gb.countShared()
	gb.settleFanIns()
}

// edgeSorter sorts edge lists by target (node rank, then task idx), stably, and
// keeps the first edge of each target. Its buffers are reused across lists, and
// what they point to is the graph's, alive while the sorter is.
type edgeSorter struct {
	keys []uint64
	tmp  []Edge
}

// sortCompact sorts and compacts edges in place; n is the number of task ids and
// nodes the number of nodes. A list is sorted as one key per edge, target then
// position (a plain sort of integers, stable by construction), unless the keys do
// not fit in 64 bits.
func (s *edgeSorter) sortCompact(edges []Edge, n, nodes int) []Edge {
	if uint64(n)*uint64(nodes) >= 1<<32 || uint64(len(edges)) >= 1<<32 {
		slices.SortStableFunc(edges, func(a, b Edge) int { return cmp.Compare(edgeKey(a.raw), edgeKey(b.raw)) })
		return slices.CompactFunc(edges, func(a, b Edge) bool { return a.raw == b.raw })
	}
	s.keys = s.keys[:0]
	sorted := true
	for i, e := range edges {
		k := (uint64(e.raw.node.rank)*uint64(n)+uint64(e.raw.idx))<<32 | uint64(i)
		if i > 0 && k < s.keys[i-1] {
			sorted = false
		}
		s.keys = append(s.keys, k)
	}
	if !sorted {
		slices.Sort(s.keys)
		s.tmp = append(s.tmp[:0], edges...)
		for i, k := range s.keys {
			edges[i] = s.tmp[uint32(k)]
		}
	}
	return slices.CompactFunc(edges, func(a, b Edge) bool { return a.raw == b.raw })
}

// markDirty notes that pt's edges need sorting.
func (gb *graphBuilder) markDirty(pt *PlacedTask) { gb.dirty[pt.seq>>6] |= 1 << (pt.seq & 63) }

// edgeKey orders edge targets: by node rank, then task id.
func edgeKey(to *PlacedTask) int64 { return rankKey(to.node.rank, to.idx) }

// rankKey is the edgeKey of the task idx of the node of rank r.
func rankKey(r, idx int32) int64 { return int64(r)<<32 | int64(idx) }

// signature is a key of the set of task ids of a node.
func signature(tasks []*PlacedTask, n int) string {
	set := make([]byte, (n+7)/8)
	for _, pt := range tasks {
		set[pt.idx>>3] |= 1 << (pt.idx & 7)
	}
	return string(set)
}

// sigEdges are the local edges of one signature: the edges between a node's tasks
// and from them to the sync node's. Targets are local numbers: the node's tasks
// 0..present-1 in id order, then the sync node's tasks not on the node.
type sigEdges struct {
	local   []int32       // local number → idx
	present int           // how many of local are the node's own
	edges   [][]localEdge // per present local number
	anc     []uint64      // per local number, words each: its local ancestors (sync node only)
	words   int
}

type localEdge struct {
	t   int32
	src *EdgeSource
}

// cand is a candidate edge target while a signature's edges are computed: the local
// target, the entry of its last hop, and the absent tasks passed through.
type cand struct {
	t   int32
	src *EdgeSource
	via *viaCell
}

type viaCell struct {
	idx  int32
	next *viaCell
}

// localEdges computes the local edges of the signature of node ng. syncRes is the
// sync node's result, nil when ng is the sync node. The relation's components are
// visited in order, so that every absent task's frontier is known before a task it
// comes before is reached.
func (gb *graphBuilder) localEdges(ng *NodeGraph, syncRes *sigEdges) *sigEdges {
	var w sigWalk
	w.init(gb, ng, syncRes)
	for _, scc := range gb.rel.sccs {
		if len(scc) == 1 {
			w.acyclic(scc[0])
			continue
		}
		comp := gb.rel.comp[scc[0]]
		for _, x := range scc {
			w.cycleMember(x, comp)
		}
	}
	res := w.res
	if syncRes == nil {
		res.anc = w.anc
	}
	res.sortEdges()
	return res
}

// sigWalk is the work of localEdges on one signature: the local numbering, the
// ancestors of the local tasks found so far, the frontiers of the absent tasks and
// the candidates of the task in hand.
type sigWalk struct {
	gb       *graphBuilder
	res      *sigEdges
	loc      []int32  // idx → local number, -1 when the task is neither on the node nor on sync
	anc      []uint64 // per local number, words each: its local ancestors
	words    int
	ancDone  []bool   // per local number: anc is complete
	frontier [][]cand // per absent idx: the nearest present tasks it reaches
	cells    []viaCell
	// mark[t] == stamp when t is already a candidate of the task in hand.
	mark    []int32
	stamp   int32
	buf     []cand  // the candidates of the task in hand
	reduced []cand  // reduce's result
	visited []int32 // stamps, for walks inside a component
}

// init sets up the work on ng's signature: the local numbering (number) and the
// buffers; for a node other than the sync node, the sync node's tasks bring their
// ancestors among themselves.
func (w *sigWalk) init(gb *graphBuilder, ng *NodeGraph, syncRes *sigEdges) {
	n := len(gb.ids)
	w.gb, w.res = gb, &sigEdges{}
	w.loc, w.frontier, w.visited = make([]int32, n), make([][]cand, n), make([]int32, n)
	var syncLoc []int32
	if syncRes != nil {
		syncLoc = make([]int32, len(syncRes.local))
	}
	w.number(ng, syncRes, syncLoc)
	res := w.res
	total := len(res.local)
	w.words = (total + 63) / 64
	res.words = w.words
	w.anc = make([]uint64, total*w.words)
	w.ancDone, w.mark = make([]bool, total), make([]int32, total)
	res.edges = make([][]localEdge, res.present)
	if syncRes != nil {
		w.inheritSyncAncestors(syncRes, syncLoc)
	}
}

// number gives the tasks of ng's signature their local numbers: the node's own
// tasks 0..present-1 in id order, then the sync node's tasks not on the node.
// syncLoc (when syncRes is not nil) receives the sync node's local numbers mapped
// to this signature's (-1 when the task is on the node itself, which takes
// precedence).
func (w *sigWalk) number(ng *NodeGraph, syncRes *sigEdges, syncLoc []int32) {
	res, loc := w.res, w.loc
	for i := range loc {
		loc[i] = -1
	}
	for _, pt := range ng.byID {
		loc[pt.idx] = int32(len(res.local))
		res.local = append(res.local, pt.idx)
	}
	res.present = len(res.local)
	if syncRes == nil {
		return
	}
	for q, idx := range syncRes.local {
		if loc[idx] >= 0 {
			syncLoc[q] = -1
			continue
		}
		loc[idx] = int32(len(res.local))
		syncLoc[q] = loc[idx]
		res.local = append(res.local, idx)
	}
}

// inheritSyncAncestors gives the sync node's tasks that are not on the node their
// ancestors among themselves, as the sync node's result has them; syncLoc maps the
// sync node's local numbers to this signature's.
func (w *sigWalk) inheritSyncAncestors(syncRes *sigEdges, syncLoc []int32) {
	for q, l := range syncLoc {
		if l < 0 {
			continue
		}
		dst := w.ancOf(l)
		src := syncRes.anc[q*syncRes.words : (q+1)*syncRes.words]
		for wi, word := range src {
			for word != 0 {
				b := wi<<6 | bits.TrailingZeros64(word)
				word &= word - 1
				if m := syncLoc[b]; m >= 0 {
					dst[m>>6] |= 1 << (m & 63)
				}
			}
		}
		w.ancDone[l] = true
	}
}

// ancOf returns the ancestor set of local task t.
func (w *sigWalk) ancOf(t int32) []uint64 { return w.anc[int(t)*w.words : int(t+1)*w.words] }

// hasBit reports whether local task t is in set.
func hasBit(set []uint64, t int32) bool { return set[t>>6]&(1<<(t&63)) != 0 }

// isPresent reports whether task x is on the node.
func (w *sigWalk) isPresent(x int32) bool { l := w.loc[x]; return l >= 0 && int(l) < w.res.present }

// isSyncOnly reports whether task x is a sync task not on the node: its edges are
// the sync node's.
func (w *sigWalk) isSyncOnly(x int32) bool { return w.loc[x] >= 0 && !w.isPresent(x) }

// cons returns a via cell idx → next, from a slab of cells.
func (w *sigWalk) cons(idx int32, next *viaCell) *viaCell {
	if len(w.cells) == 0 {
		w.cells = make([]viaCell, 256)
	}
	c := &w.cells[0]
	w.cells = w.cells[1:]
	c.idx, c.next = idx, next
	return c
}

// viaOf returns the via list of the absent tasks path, followed by tail.
func (w *sigWalk) viaOf(path []int32, tail *viaCell) *viaCell {
	for i := len(path) - 1; i >= 0; i-- {
		tail = w.cons(path[i], tail)
	}
	return tail
}

// add adds c to the candidates of the task in hand, unless its target already is one.
func (w *sigWalk) add(c cand) {
	if w.mark[c.t] != w.stamp {
		w.mark[c.t] = w.stamp
		w.buf = append(w.buf, c)
	}
}

// start begins the candidates of task x: when x is on the node, its predecessors on
// the node or on sync (declared edges, which reduce keeps). It returns how many.
func (w *sigWalk) start(x int32) int {
	w.stamp++
	w.buf = w.buf[:0]
	if w.isPresent(x) {
		w.mark[w.loc[x]] = w.stamp
		for _, e := range w.gb.rel.preds[x] {
			if l := w.loc[e.pred]; l >= 0 {
				w.add(cand{t: l, src: e.src})
			}
		}
	}
	return len(w.buf)
}

// acyclic computes the edges (present) or the frontier (absent) of task x, a
// component of its own: every predecessor's frontier is known.
func (w *sigWalk) acyclic(x int32) {
	if w.isSyncOnly(x) {
		return
	}
	direct := w.start(x)
	preds := w.gb.rel.preds[x]
	if w.isPresent(x) {
		for _, e := range preds {
			if w.loc[e.pred] < 0 {
				for _, c := range w.frontier[e.pred] {
					w.add(c)
				}
			}
		}
		w.settle(x, direct)
		return
	}
	for _, e := range preds {
		if l := w.loc[e.pred]; l >= 0 {
			w.add(cand{t: l, src: e.src, via: w.cons(x, nil)})
		} else {
			for _, c := range w.frontier[e.pred] {
				w.add(cand{t: c.t, src: c.src, via: w.cons(x, c.via)})
			}
		}
	}
	w.settle(x, direct)
}

// cycleMember computes the edges or the frontier of task x, a member of the cycle
// comp of the relation, by walking the cycle from x.
func (w *sigWalk) cycleMember(x, comp int32) {
	if w.isSyncOnly(x) {
		return
	}
	direct := w.start(x)
	w.visited[x] = w.stamp
	var path []int32
	if !w.isPresent(x) {
		path = []int32{x}
	}
	w.walkCycle(x, comp, x, path)
	w.settle(x, direct)
}

// walkCycle adds the candidates of x reached through the predecessors of y, path
// being the absent tasks of comp passed through from x to y: a task on the node or
// on sync ends the walk, an absent task of comp continues it, and one of another
// component brings its frontier.
func (w *sigWalk) walkCycle(x, comp, y int32, path []int32) {
	for _, e := range w.gb.rel.preds[y] {
		p := e.pred
		if p == x {
			continue
		}
		if l := w.loc[p]; l >= 0 {
			w.add(cand{t: l, src: e.src, via: w.viaOf(path, nil)})
			continue
		}
		if w.visited[p] == w.stamp {
			continue
		}
		w.visited[p] = w.stamp
		if w.gb.rel.comp[p] == comp {
			w.walkCycle(x, comp, p, append(path[:len(path):len(path)], p))
			continue
		}
		for _, c := range w.frontier[p] {
			w.add(cand{t: c.t, src: c.src, via: w.viaOf(path, c.via)})
		}
	}
}

// settle ends task x's candidates: a present task's edges are its candidates, but
// the derived ones (from direct on) that another candidate implies; an absent
// task's frontier is all its candidates, reduced likewise.
func (w *sigWalk) settle(x int32, direct int) {
	if w.isPresent(x) {
		w.finish(x, w.reduce(w.buf, direct))
	} else if len(w.buf) > 0 {
		w.frontier[x] = slices.Clone(w.reduce(w.buf, 0))
	}
}

// reduce returns list without the candidates from `from` on that another
// candidate's ancestors include (into a buffer of its own).
func (w *sigWalk) reduce(list []cand, from int) []cand {
	w.reduced = append(w.reduced[:0], list[:from]...)
	for i := from; i < len(list); i++ {
		c := list[i]
		implied := false
		for j, u := range list {
			if j != i && w.ancDone[u.t] && hasBit(w.ancOf(u.t), c.t) {
				implied = true
				break
			}
		}
		if !implied {
			w.reduced = append(w.reduced, c)
		}
	}
	return w.reduced
}

// finish records the edges of a present task and its ancestors.
func (w *sigWalk) finish(x int32, list []cand) {
	lx := w.loc[x]
	out := make([]localEdge, len(list))
	dst := w.ancOf(lx)
	for i, c := range list {
		src := c.src
		if c.via != nil {
			src = &EdgeSource{Origin: src.Origin, Range: src.Range}
			for v := c.via; v != nil; v = v.next {
				src.Via = append(src.Via, w.gb.ids[v.idx])
			}
		}
		out[i] = localEdge{t: c.t, src: src}
		if w.ancDone[c.t] {
			for wi, word := range w.ancOf(c.t) {
				dst[wi] |= word
			}
		}
		dst[c.t>>6] |= 1 << (c.t & 63)
	}
	w.res.edges[lx] = out
	w.ancDone[lx] = true
}

// sortEdges puts each task's edges in the order of the written edges: the node's
// own tasks (which rank before the sync node), then the sync node's, each by id.
func (res *sigEdges) sortEdges() {
	key := func(t int32) int64 {
		k := int64(res.local[t])
		if int(t) >= res.present {
			k |= 1 << 32
		}
		return k
	}
	for _, list := range res.edges {
		slices.SortFunc(list, func(a, b localEdge) int { return cmp.Compare(key(a.t), key(b.t)) })
	}
}

// classEdges are the local edges the tasks at each position of a signature's
// nodes hold alike, by position: one list for all its nodes, with a template
// of the node's own task (see template) where an edge goes to one. A task
// whose definition has cross-node entries holds a list of its own (nil here),
// since its edges are added to; one that gets edges from another task's
// cross-depended-by entry gets its own then (ownEdges). A cluster of 2,000
// nodes of a few classes holds millions of local edges: most are held once.
type classEdges [][]Edge

// classEdgesOf makes the class edges of the signature of node first.
func (gb *graphBuilder) classEdgesOf(first *NodeGraph, res *sigEdges) classEdges {
	tmpl := make([]PlacedTask, res.present)
	own := make([]*PlacedTask, res.present) // the templates, by local number
	for t := range tmpl {
		pt := first.byID[t]
		tmpl[t] = PlacedTask{Def: pt.Def, idx: pt.idx, seq: template(t)}
		own[t] = &tmpl[t]
	}
	alike := func(i int) bool { return len(res.edges[i]) > 0 && len(first.byID[i].Def.cross) == 0 }
	total := 0
	for i, list := range res.edges {
		if alike(i) {
			total += len(list)
		}
	}
	slab := make([]Edge, total)
	out := make(classEdges, len(res.edges))
	for i, list := range res.edges {
		if !alike(i) {
			continue
		}
		req := slab[:len(list):len(list)] // full: an append copies
		slab = slab[len(list):]
		gb.writeLocal(req, list, own, res)
		out[i] = req
	}
	return out
}

// template is the seq of the template of the task at position p of its node:
// negative, so that PlacedTask.edge tells it from a task.
func template(p int) int32 { return -1 - int32(p) }

// ownEdges returns the edges pt holds as a list of its own, to be added to:
// its class edges copied with their templates resolved, unless it has its own
// already (dirty, or made so).
func (gb *graphBuilder) ownEdges(pt *PlacedTask) []Edge {
	if gb.dirty[pt.seq>>6]&(1<<(pt.seq&63)) != 0 || !slices.ContainsFunc(pt.requires, func(e Edge) bool { return e.raw.seq < 0 }) {
		return pt.requires
	}
	out := make([]Edge, len(pt.requires), len(pt.requires)+1)
	for i, e := range pt.requires {
		out[i] = pt.edge(e)
	}
	return out
}

// instantiate writes a signature's local edges onto the tasks of node ng: the
// class edges alike (nil for the sync node, whose tasks hold their own) where
// a task's position has them.
func (gb *graphBuilder) instantiate(ng *NodeGraph, res *sigEdges, alike classEdges) {
	// Room for the cross-node edges crossEdges appends, but those its
	// definition shares (which it does not copy).
	room := func(pt *PlacedTask) int {
		if pt.Def.shared != nil && ng != gb.sync {
			return 0
		}
		return pt.Def.crossCap
	}
	own := func(i int) bool { return len(res.edges[i]) > 0 && (alike == nil || alike[i] == nil) }
	total := 0
	for i, list := range res.edges {
		if own(i) {
			total += len(list) + room(ng.byID[i])
		}
	}
	// One allocation for the node; each task's edges are a slice of it with
	// room for its cross-node edges, so that only an edge beyond them (of a
	// self entry, or a cross-depended-by) moves that task's edges out.
	slab := make([]Edge, total)
	for i, list := range res.edges {
		pt := ng.byID[i]
		if !own(i) {
			if len(list) > 0 {
				pt.requires = alike[i]
			}
			continue
		}
		c := len(list) + room(pt)
		req := slab[:len(list):c]
		slab = slab[c:]
		gb.writeLocal(req, list, ng.byID, res) // the node's tasks are its first local numbers, in id order
		pt.requires = req
	}
}

// writeLocal writes the local edges of list into req: to own[t] for a task of the
// node (own holds its tasks, or their templates, by local number), to the sync
// node's task otherwise.
func (gb *graphBuilder) writeLocal(req []Edge, list []localEdge, own []*PlacedTask, res *sigEdges) {
	for k, le := range list {
		var to *PlacedTask
		if int(le.t) < res.present {
			to = own[le.t]
		} else {
			to = gb.at(gb.sync.rank, res.local[le.t])
		}
		req[k] = Edge{EdgeSource: le.src, raw: to}
	}
}

// crossEntry is a cross-depends or cross-depended-by entry of a definition.
type crossEntry struct {
	reverse bool
	nm      *nameMatcher
	it      *loader.Value
	self    bool
	targets []int32       // the nodes it binds (unless self)
	tasks   []*PlacedTask // the tasks it binds on them, by node then as the name matches
	src     *EdgeSource
}

// stageEdge is a sync-node stage a task is required_for.
type stageEdge struct {
	stage *PlacedTask
	src   *EdgeSource
}

var crossKeys = []string{"cross-depends", "cross_depends", "cross-depended-by", "cross_depended_by"}

// defEdges works out, once per definition, its yaql cross-dependencies, its
// cross-dependency entries (with the nodes each binds) and the stages it is
// required_for.
func (gb *graphBuilder) defEdges(d *TaskDef) {
	if d.edgeDone {
		return
	}
	d.edgeDone = true
	data := d.Task.Data
	for _, key := range crossKeys {
		v := data.Get(key)
		if v == nil {
			continue
		}
		if v.IsMap() && v.Has("yaql_exp") {
			d.dynamic = append(d.dynamic, map[string]any{key: v.Interface()})
			continue
		}
		reverse := strings.Contains(key, "by")
		for _, it := range items(v) {
			if !it.IsMap() {
				continue
			}
			if it.Has("yaql_exp") {
				d.dynamic = append(d.dynamic, it.Interface())
				continue
			}
			name, ok := it.Get("name").Str()
			if !ok {
				continue
			}
			nm := gb.matcher(name)
			if nm.re == nil && gb.defs[name] == nil {
				gb.warnOnce(it.Get("name").Range, "task %s: %s %q: no task of that name in graph %s", d.Task.ID, key, name, gb.typ)
				continue
			}
			ce := &crossEntry{reverse: reverse, nm: nm, it: it, src: &EdgeSource{Origin: "cross-depends", Range: it.Range}}
			if reverse {
				ce.src.Origin = "cross-depended-by of " + d.Task.ID
			}
			ce.targets, ce.self = gb.crossTargets(it)
			if it.Get("policy").String() == "any" && !ce.self {
				ce.targets = gb.firstRunning(ce.targets, nm)
			}
			if !ce.self {
				ce.tasks = gb.crossTasks(ce.targets, nm)
			}
			d.cross = append(d.cross, ce)
		}
	}
	d.shared = gb.sharedEdgesOf(d)
	for _, ce := range d.cross {
		if !ce.reverse {
			d.crossCap += len(ce.tasks) // none for self
		}
	}
	for _, e := range items(data.Get("required_for")) {
		name, _ := e.Str()
		var src *EdgeSource
		for _, idx := range gb.matching(gb.matcher(name)) {
			stage := gb.at(gb.sync.rank, idx)
			if stage == nil {
				continue
			}
			if src == nil {
				src = &EdgeSource{Origin: "required_for of " + d.Task.ID, Range: e.Range}
			}
			d.stages = append(d.stages, stageEdge{stage: stage, src: src})
		}
	}
}

// crossTargets resolves a cross-dependency entry's nodes: tags, else role, else all
// nodes; "self" is the same node (self is true) and role: null the sync node. The
// policy is left to the caller: every node selected is returned.
func (gb *graphBuilder) crossTargets(it *loader.Value) ([]int32, bool) {
	var sel *loader.Value
	for _, k := range []string{"tags", "role", "roles"} {
		if f := it.Field(k); f != nil {
			if f.Value.IsNull() {
				return []int32{gb.sync.rank}, false
			}
			sel = f.Value
			break
		}
	}
	if sel == nil {
		return gb.ranks(gb.ix.ResolveNames(nil, true)), false
	}
	if names, ok := sel.Strings(); ok && len(names) == 1 && names[0] == "self" {
		return nil, true
	}
	names, _ := gb.ix.Resolve(sel)
	return gb.ranks(names), false
}

// firstRunning is policy any: of the nodes a cross-dependency entry selects (the
// master first, then by id), the first that runs a task the entry names, so that
// the edge is kept whenever some selected node runs it. nailgun takes one node of
// the selection before looking at the tasks (the first of a Python set) and drops
// the edge when that node lacks the task. The dependent task itself counts: an entry
// naming its own id binds every other node's task to the first node's, and that one
// to nothing, as nailgun excludes the task itself.
func (gb *graphBuilder) firstRunning(targets []int32, nm *nameMatcher) []int32 {
	ids := gb.matching(nm)
	for i, r := range targets {
		for _, xid := range ids {
			if gb.runs(r, xid) {
				return targets[i : i+1 : i+1]
			}
		}
	}
	return nil
}

// crossEdges binds pt's cross-depends and cross-depended-by entries across nodes.
// pt's own (cross-depends) edges are gathered in gb.cross first, so that its list
// grows once to its size rather than doubling as it is filled (a node's task can
// require one task of every other node). The edges of the entries its definition
// shares (sharedEdges) are not copied: pt is noted for settleShared.
func (gb *graphBuilder) crossEdges(ng *NodeGraph, pt *PlacedTask) {
	gb.reverseEdges(pt)
	at := len(pt.requires)
	share := pt.Def.shared != nil && ng != gb.sync // the sync node's stages gather fan-in
	gb.cross = gb.forwardEdges(ng, pt, gb.cross[:0], share)
	if share {
		gb.pending = append(gb.pending, sharedPending{pt: pt, at: int32(at), own: int32(len(gb.cross))})
	}
	if len(gb.cross) > 0 {
		pt.requires = append(pt.requires, gb.cross...)
		gb.markDirty(pt)
	}
}

// reverseEdges binds pt's cross-depended-by entries: each task they select
// requires pt.
func (gb *graphBuilder) reverseEdges(pt *PlacedTask) {
	for _, ce := range pt.Def.cross {
		if !ce.reverse {
			continue
		}
		for _, x := range gb.entryTasks(pt, ce) {
			if x != pt {
				x.requires = append(gb.ownEdges(x), Edge{EdgeSource: ce.src, raw: pt})
				gb.markDirty(x)
			}
		}
	}
}

// forwardEdges appends to dst the edges of pt's cross-depends entries, in the
// entries' order, but those of the entries its definition shares when skipShared.
func (gb *graphBuilder) forwardEdges(ng *NodeGraph, pt *PlacedTask, dst []Edge, skipShared bool) []Edge {
	for _, ce := range pt.Def.cross {
		if ce.reverse || skipShared && !ce.self {
			continue
		}
		for _, x := range gb.entryTasks(pt, ce) {
			// A stage's fan-in edge to x came before this one (the sync node's
			// edges are bound last) and wins: nothing to hold.
			if x != pt && (pt.gather() == nil || !gb.gathers(pt, x)) {
				dst = append(dst, Edge{EdgeSource: ce.src, raw: x})
			}
		}
	}
	return dst
}

// crossTasks returns the tasks nm names on the nodes of targets, by node then as
// the name matches.
func (gb *graphBuilder) crossTasks(targets []int32, nm *nameMatcher) []*PlacedTask {
	var out []*PlacedTask
	for _, r := range targets {
		out = gb.appendOnNode(out, r, nm)
	}
	return out
}

// appendOnNode appends to dst the tasks nm names on node rank r, as the name
// matches.
func (gb *graphBuilder) appendOnNode(dst []*PlacedTask, r int32, nm *nameMatcher) []*PlacedTask {
	for _, xid := range gb.matching(nm) {
		if x := gb.at(r, xid); x != nil {
			dst = append(dst, x)
		}
	}
	return dst
}

// entryTasks returns the tasks entry ce of pt's definition selects, in order (by
// node, then as the name matches), pt included: for a self entry, in a buffer
// valid until the next call.
func (gb *graphBuilder) entryTasks(pt *PlacedTask, ce *crossEntry) []*PlacedTask {
	if !ce.self {
		return ce.tasks
	}
	gb.selfTasks = gb.appendOnNode(gb.selfTasks[:0], pt.node.rank, ce.nm)
	return gb.selfTasks
}
