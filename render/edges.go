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
	// The sync node first: the other nodes' edges to it build on its own.
	syncRes := gb.localEdges(gb.sync, nil)
	gb.instantiate(gb.sync, syncRes)
	// Then the other nodes, grouped by signature.
	groups := map[string][]*NodeGraph{}
	var keys []string
	for _, ng := range gb.nodes {
		if ng == gb.sync || len(ng.byID) == 0 {
			continue
		}
		key := signature(ng.byID, n)
		if _, ok := groups[key]; !ok {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], ng)
	}
	for _, key := range keys {
		members := groups[key]
		res := gb.localEdges(members[0], syncRes)
		for _, ng := range members {
			gb.instantiate(ng, res)
		}
	}
	// Cross-node edges. A task whose edges this adds to is marked (markDirty): the
	// local edges are already in order. The stages' fan-in is not held: each stage
	// keeps the nodes it gathers from (buildFanIns; see fanIn).
	gb.dirty = make([]uint64, (len(gb.placed)+63)/64)
	for _, ng := range gb.nodes {
		for _, pt := range ng.byID {
			gb.defEdges(pt.Def)
		}
	}
	gb.buildFanIns()
	for _, ng := range gb.nodes {
		for _, pt := range ng.byID {
			if len(pt.Def.dynamic) > 0 {
				pt.DynamicRequires = pt.Def.dynamic
			}
			gb.crossEdges(ng, pt)
		}
	}
	// Sorted by node then task; the first edge of a pair wins.
	var sorter edgeSorter
	for _, pt := range gb.placed {
		if len(pt.requires) < 2 || gb.dirty[pt.seq>>6]&(1<<(pt.seq&63)) == 0 {
			continue
		}
		pt.requires = sorter.sortCompact(pt.requires, n, len(gb.nodes))
	}
	gb.settleFanIns()
}

// edgeSorter sorts edge lists by target (node rank, then task idx), stably, and
// keeps the first edge of each target. Its buffers are reused across lists.
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
		slices.SortStableFunc(edges, func(a, b Edge) int { return cmp.Compare(edgeKey(a.to), edgeKey(b.to)) })
		return slices.CompactFunc(edges, func(a, b Edge) bool { return a.to == b.to })
	}
	s.keys = s.keys[:0]
	sorted := true
	for i, e := range edges {
		k := (uint64(e.to.node.rank)*uint64(n)+uint64(e.to.idx))<<32 | uint64(i)
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
		clear(s.tmp) // no pointers kept alive from the buffer
	}
	return slices.CompactFunc(edges, func(a, b Edge) bool { return a.to == b.to })
}

// markDirty notes that pt's edges need sorting.
func (gb *graphBuilder) markDirty(pt *PlacedTask) { gb.dirty[pt.seq>>6] |= 1 << (pt.seq & 63) }

// edgeKey orders edge targets: by node rank, then task id.
func edgeKey(to *PlacedTask) int64 { return int64(to.node.rank)<<32 | int64(to.idx) }

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
// sync node's result, nil when ng is the sync node.
func (gb *graphBuilder) localEdges(ng *NodeGraph, syncRes *sigEdges) *sigEdges {
	n := len(gb.ids)
	res := &sigEdges{}
	loc := make([]int32, n)
	for i := range loc {
		loc[i] = -1
	}
	for _, pt := range ng.byID {
		loc[pt.idx] = int32(len(res.local))
		res.local = append(res.local, pt.idx)
	}
	res.present = len(res.local)
	// syncLoc maps the sync node's local numbers to this signature's (-1 when the
	// task is on the node itself, which takes precedence).
	var syncLoc []int32
	if syncRes != nil {
		syncLoc = make([]int32, len(syncRes.local))
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
	total := len(res.local)
	words := (total + 63) / 64
	res.words = words
	anc := make([]uint64, total*words)
	ancOf := func(t int32) []uint64 { return anc[int(t)*words : int(t+1)*words] }
	ancDone := make([]bool, total)
	// The sync node's tasks bring their own ancestors among themselves.
	if syncRes != nil {
		for q, l := range syncLoc {
			if l < 0 {
				continue
			}
			dst := ancOf(l)
			src := syncRes.anc[q*syncRes.words : (q+1)*syncRes.words]
			for w, word := range src {
				for word != 0 {
					b := w<<6 | bits.TrailingZeros64(word)
					word &= word - 1
					if m := syncLoc[b]; m >= 0 {
						dst[m>>6] |= 1 << (m & 63)
					}
				}
			}
			ancDone[l] = true
		}
	}
	has := func(set []uint64, t int32) bool { return set[t>>6]&(1<<(t&63)) != 0 }

	res.edges = make([][]localEdge, res.present)
	frontier := make([][]cand, n)
	var cells []viaCell
	cons := func(idx int32, next *viaCell) *viaCell {
		if len(cells) == 0 {
			cells = make([]viaCell, 256)
		}
		c := &cells[0]
		cells = cells[1:]
		c.idx, c.next = idx, next
		return c
	}
	// mark[t] == stamp when t is already a candidate of the task in hand.
	mark := make([]int32, total)
	stamp := int32(0)
	var buf []cand
	add := func(c cand) {
		if mark[c.t] != stamp {
			mark[c.t] = stamp
			buf = append(buf, c)
		}
	}
	// reduce returns list without the candidates from `from` on that another
	// candidate's ancestors include (into a buffer of its own).
	var reduced []cand
	reduce := func(list []cand, from int) []cand {
		reduced = append(reduced[:0], list[:from]...)
		for i := from; i < len(list); i++ {
			c := list[i]
			implied := false
			for j, u := range list {
				if j != i && ancDone[u.t] && has(ancOf(u.t), c.t) {
					implied = true
					break
				}
			}
			if !implied {
				reduced = append(reduced, c)
			}
		}
		return reduced
	}
	// finish records the edges of a present task and its ancestors.
	finish := func(x int32, list []cand) {
		lx := loc[x]
		out := make([]localEdge, len(list))
		dst := ancOf(lx)
		for i, c := range list {
			src := c.src
			if c.via != nil {
				src = &EdgeSource{Origin: src.Origin, Range: src.Range}
				for v := c.via; v != nil; v = v.next {
					src.Via = append(src.Via, gb.ids[v.idx])
				}
			}
			out[i] = localEdge{t: c.t, src: src}
			if ancDone[c.t] {
				for w, word := range ancOf(c.t) {
					dst[w] |= word
				}
			}
			dst[c.t>>6] |= 1 << (c.t & 63)
		}
		res.edges[lx] = out
		ancDone[lx] = true
	}
	isPresent := func(x int32) bool { l := loc[x]; return l >= 0 && int(l) < res.present }

	visited := make([]int32, n) // stamps, for walks inside a component
	for _, scc := range gb.rel.sccs {
		if len(scc) == 1 {
			x := scc[0]
			if loc[x] >= 0 && !isPresent(x) {
				continue // a sync task: its edges are the sync node's
			}
			stamp++
			buf = buf[:0]
			if isPresent(x) {
				mark[loc[x]] = stamp
				for _, e := range gb.rel.preds[x] {
					if l := loc[e.pred]; l >= 0 {
						add(cand{t: l, src: e.src})
					}
				}
				direct := len(buf)
				for _, e := range gb.rel.preds[x] {
					if loc[e.pred] < 0 {
						for _, c := range frontier[e.pred] {
							add(c)
						}
					}
				}
				finish(x, reduce(buf, direct))
				continue
			}
			for _, e := range gb.rel.preds[x] {
				if l := loc[e.pred]; l >= 0 {
					add(cand{t: l, src: e.src, via: cons(x, nil)})
				} else {
					for _, c := range frontier[e.pred] {
						add(cand{t: c.t, src: c.src, via: cons(x, c.via)})
					}
				}
			}
			if len(buf) > 0 {
				frontier[x] = slices.Clone(reduce(buf, 0))
			}
			continue
		}
		// A cycle of the relation: walk it from each member.
		comp := gb.rel.comp[scc[0]]
		for _, x := range scc {
			if loc[x] >= 0 && !isPresent(x) {
				continue
			}
			stamp++
			buf = buf[:0]
			visited[x] = stamp
			var path []int32
			if isPresent(x) {
				mark[loc[x]] = stamp
				for _, e := range gb.rel.preds[x] {
					if l := loc[e.pred]; l >= 0 {
						add(cand{t: l, src: e.src})
					}
				}
			} else {
				path = []int32{x}
			}
			direct := len(buf)
			viaOf := func(path []int32, tail *viaCell) *viaCell {
				for i := len(path) - 1; i >= 0; i-- {
					tail = cons(path[i], tail)
				}
				return tail
			}
			var walk func(y int32, path []int32)
			walk = func(y int32, path []int32) {
				for _, e := range gb.rel.preds[y] {
					p := e.pred
					if p == x {
						continue
					}
					if l := loc[p]; l >= 0 {
						add(cand{t: l, src: e.src, via: viaOf(path, nil)})
						continue
					}
					if visited[p] == stamp {
						continue
					}
					visited[p] = stamp
					if gb.rel.comp[p] == comp {
						walk(p, append(path[:len(path):len(path)], p))
						continue
					}
					for _, c := range frontier[p] {
						add(cand{t: c.t, src: c.src, via: viaOf(path, c.via)})
					}
				}
			}
			walk(x, path)
			if isPresent(x) {
				finish(x, reduce(buf, direct))
			} else if len(buf) > 0 {
				frontier[x] = slices.Clone(reduce(buf, 0))
			}
		}
	}
	if syncRes == nil {
		res.anc = anc
	}
	// In the order of the written edges: the node's own tasks (which rank before
	// the sync node), then the sync node's, each by id.
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
	return res
}

// instantiate writes a signature's local edges onto the tasks of node ng.
func (gb *graphBuilder) instantiate(ng *NodeGraph, res *sigEdges) {
	n := len(gb.ids)
	total := 0
	for _, list := range res.edges {
		total += len(list)
	}
	// One allocation for the node; each task's edges are a full slice of it, so an
	// edge added later moves that task's edges out.
	slab := make([]Edge, total)
	for i, list := range res.edges {
		pt := ng.byID[i]
		if len(list) == 0 {
			continue
		}
		req := slab[:len(list):len(list)]
		slab = slab[len(list):]
		for k, le := range list {
			idx := res.local[le.t]
			target := ng
			if int(le.t) >= res.present {
				target = gb.sync
			}
			to := gb.slot[int(target.rank)*n+int(idx)]
			req[k] = Edge{EdgeSource: le.src, to: to}
		}
		pt.requires = req
	}
}

// crossEntry is a cross-depends or cross-depended-by entry of a definition.
type crossEntry struct {
	reverse bool
	nm      *nameMatcher
	it      *loader.Value
	self    bool
	targets []int32 // the nodes it binds (unless self)
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
			d.cross = append(d.cross, ce)
		}
	}
	for _, e := range items(data.Get("required_for")) {
		name, _ := e.Str()
		var src *EdgeSource
		for _, idx := range gb.matching(gb.matcher(name)) {
			stage := gb.slot[int(gb.sync.rank)*len(gb.ids)+int(idx)]
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
	n := len(gb.ids)
	ids := gb.matching(nm)
	for i, r := range targets {
		row := gb.slot[int(r)*n : int(r+1)*n]
		for _, xid := range ids {
			if row[xid] != nil {
				return targets[i : i+1 : i+1]
			}
		}
	}
	return nil
}

// crossEdges binds pt's cross-depends and cross-depended-by entries across nodes.
// pt's own (cross-depends) edges are gathered in gb.cross first, so that its list
// grows once to its size rather than doubling as it is filled (a node's task can
// require one task of every other node).
func (gb *graphBuilder) crossEdges(ng *NodeGraph, pt *PlacedTask) {
	n := len(gb.ids)
	self := []int32{ng.rank}
	gb.cross = gb.cross[:0]
	for _, ce := range pt.Def.cross {
		targets := ce.targets
		if ce.self {
			targets = self
		}
		for _, r := range targets {
			row := gb.slot[int(r)*n : int(r+1)*n]
			for _, xid := range gb.matching(ce.nm) {
				x := row[xid]
				if x == nil || x == pt {
					continue
				}
				if ce.reverse {
					x.requires = append(x.requires, Edge{EdgeSource: ce.src, to: pt})
					gb.markDirty(x)
				} else if pt.fanIn == nil || !gb.gathers(pt, x) {
					// A stage's fan-in edge to x came before this one (the sync node's
					// edges are bound last) and wins: nothing to hold.
					gb.cross = append(gb.cross, Edge{EdgeSource: ce.src, to: x})
				}
			}
		}
	}
	if len(gb.cross) > 0 {
		pt.requires = append(pt.requires, gb.cross...)
		gb.markDirty(pt)
		clear(gb.cross) // no pointers kept alive from the buffer
	}
}
