package render

import (
	"maps"
	"slices"
)

// SameFiles names the node files and DOT files base and head, two renders
// of one cluster, have byte for byte, worked out from their models without
// encoding either (on every core); it is exact: a file it names is the same,
// one it does not may be too.
//
// A node file's bytes are made of its cluster's name, its graph type, its
// node's name, roles, tags and instances, and its tasks' ids and the
// requirements it lists (storedRequires: each a task id and a node name), of
// nothing else (writeNodeFile, and nodeFileDocument, its fallback): when all
// of those are the same on both sides, so are the bytes (sameNodeFile). A DOT
// file's are made of the graph's shape (sameDrawing), which holds every
// requirement of every node: the nodes of a graph drawn alike need only their
// headers compared, and the sync node, whose file leaves out requirements the
// catalogue implies, its stored requirements. A release change, which edits
// definitions (the task catalogues'), leaves most of them the same.
func SameFiles(base, head *Rendered) map[string]bool {
	out := map[string]bool{}
	name := base.Model.Cluster.Name
	if name != head.Model.Cluster.Name {
		return out
	}
	var graphs [][2]*Graph
	for _, g := range base.Graphs {
		if hg := head.Graph(g.Type); hg != nil {
			graphs = append(graphs, [2]*Graph{g, hg})
		}
	}
	drawn := make([]bool, len(graphs))
	inParallel(len(graphs), func(_, i int) { drawn[i] = sameDrawing(graphs[i][0], graphs[i][1]) })
	type pair struct {
		graph  int
		ng, hn *NodeGraph
	}
	var pairs []pair
	for i, gs := range graphs {
		if drawn[i] {
			out[dotPath(name, gs[0].Type)] = true
		}
		for k, ng := range gs[0].Nodes {
			// The node's file on head's side: one of its graph's nodes (the
			// one of the same place when the graphs are drawn alike).
			hn := gs[1].Node(ng.Node)
			if drawn[i] {
				hn = gs[1].Nodes[k]
			}
			if hn != nil && hn.Node == ng.Node {
				pairs = append(pairs, pair{i, ng, hn})
			}
		}
	}
	same := make([]bool, len(pairs))
	inParallel(len(pairs), func(_, k int) {
		p := pairs[k]
		if drawn[p.graph] && p.ng.Node != SyncNode {
			same[k] = sameNodeHeader(p.ng, p.hn)
		} else {
			same[k] = sameNodeFile(base.Model, graphs[p.graph][0], p.ng, head.Model, graphs[p.graph][1], p.hn)
		}
	})
	for k, p := range pairs {
		if same[k] {
			out[NodeAddress(name, p.ng.Node, graphs[p.graph][0].Type).String()] = true
		}
	}
	return out
}

// sameNodeFile reports whether the node files (format 2) of node graph a of
// graph ga of model ma and of b of gb of mb are the same, byte for byte, from
// what they are written of: the cluster's name, the graph type, the node's
// name, its roles, tags and instances (none when it has no Tags, as the
// writer does), and its tasks' ids and stored requirements, in order. It is
// exact: when it reports true the encodings are equal; false says nothing.
func sameNodeFile(ma *Model, ga *Graph, a *NodeGraph, mb *Model, gb *Graph, b *NodeGraph) bool {
	if ma.Cluster.Name != mb.Cluster.Name || ga.Type != gb.Type || a.Node != b.Node ||
		!sameNodeHeader(a, b) || len(a.Tasks) != len(b.Tasks) {
		return false
	}
	for i, pa := range a.Tasks {
		pb := b.Tasks[i]
		if pa.ID() != pb.ID() {
			return false
		}
		ra, rb := storedRequires(a, pa), storedRequires(b, pb)
		if len(ra) != len(rb) {
			return false
		}
		for j, ea := range ra {
			ea, eb := pa.edge(ea), pb.edge(rb[j])
			if ea.Task() != eb.Task() || ea.Node() != eb.Node() {
				return false
			}
		}
	}
	return true
}

// sameNodeHeader reports whether a and b have the same roles, tags and
// instances as a node file writes them: a node without Tags has none, and an
// empty list or map is written as none.
func sameNodeHeader(a, b *NodeGraph) bool {
	var ra, rb, ta, tb []string
	var ia, ib map[string][]string
	if a.Tags != nil {
		ra, ta, ia = a.Tags.Roles, a.Tags.Resolution, a.Tags.Instances
	}
	if b.Tags != nil {
		rb, tb, ib = b.Tags.Roles, b.Tags.Resolution, b.Tags.Instances
	}
	return slices.Equal(ra, rb) && slices.Equal(ta, tb) && maps.EqualFunc(ia, ib, slices.Equal)
}

// sameDrawing reports whether graphs a and b (of one cluster) have the same
// DOT file, from what writeDOTLimits reads: the graph type, its task ids, its
// nodes in order (name, rank, class, resolution tags), their tasks in order
// and by id (id, type, position, held and shared edges, fan-in, the stages their
// definitions are required_for), each edge by its target's id, position and
// node's rank. Every node an edge, a fan-in or a stage names must be the
// graph's own of its rank, and a stage the task of its node and position, on
// both sides (the writer tells nodes and stages apart by identity). Exact, as
// sameNodeFile.
func sameDrawing(a, b *Graph) bool {
	if a.Type != b.Type || !slices.Equal(a.ids, b.ids) || len(a.Nodes) != len(b.Nodes) {
		return false
	}
	ra, rb := byRank(a), byRank(b)
	if ra == nil || rb == nil {
		return false
	}
	ma, mb := make([]*PlacedTask, len(a.ids)), make([]*PlacedTask, len(b.ids))
	for i, na := range a.Nodes {
		nb := b.Nodes[i]
		if na.Node != nb.Node || na.rank != nb.rank || na.class != nb.class ||
			(na.Tags == nil) != (nb.Tags == nil) || len(na.Tasks) != len(nb.Tasks) || len(na.byID) != len(nb.byID) {
			return false
		}
		if na.Tags != nil && !slices.Equal(na.Tags.Resolution, nb.Tags.Resolution) {
			return false
		}
		if !byIDOfTasks(na, ma) || !byIDOfTasks(nb, mb) {
			return false
		}
		for j, qa := range na.byID {
			if qa.idx != nb.byID[j].idx {
				return false
			}
		}
		for j, pa := range na.Tasks {
			pb := nb.Tasks[j]
			if pa.node != na || pb.node != nb || !samePlaced(ra, pa, rb, pb) {
				return false
			}
		}
	}
	return true
}

// byIDOfTasks reports whether n's tasks by id are its tasks, each once and
// of its own position (the writer reads both lists; sameDrawing compares the
// tasks). mark, one entry per task id of the graph, is left empty.
func byIDOfTasks(n *NodeGraph, mark []*PlacedTask) bool {
	ok := len(n.byID) == len(n.Tasks)
	for _, pt := range n.Tasks {
		if ok = ok && int(pt.idx) < len(mark) && mark[pt.idx] == nil; ok {
			mark[pt.idx] = pt
		}
	}
	for _, pt := range n.byID {
		ok = ok && int(pt.idx) < len(mark) && mark[pt.idx] == pt
	}
	for _, pt := range n.Tasks {
		if int(pt.idx) < len(mark) {
			mark[pt.idx] = nil
		}
	}
	return ok
}

// ranked are a graph's nodes by rank (nil where it has none) and its task ids.
type ranked struct {
	nodes []*NodeGraph
	ids   []string
	// sharedSame are the pairs of shared edge lists compared (sameShared).
	sharedSame map[[2]*sharedEdges]bool
}

// byRank indexes g's nodes by rank; nil when two have one rank or one has
// none.
func byRank(g *Graph) *ranked {
	r := &ranked{ids: g.ids}
	for _, n := range g.Nodes {
		if n.rank < 0 {
			return nil
		}
		if int(n.rank) >= len(r.nodes) {
			r.nodes = append(r.nodes, make([]*NodeGraph, int(n.rank)+1-len(r.nodes))...)
		}
		if r.nodes[n.rank] != nil {
			return nil
		}
		r.nodes[n.rank] = n
	}
	return r
}

// samePlaced reports whether placed tasks pa of a graph and pb of another
// (ra and rb) are drawn alike (sameDrawing).
func samePlaced(ra *ranked, pa *PlacedTask, rb *ranked, pb *PlacedTask) bool {
	if pa.ID() != pb.ID() || pa.Type() != pb.Type() || pa.idx != pb.idx || len(pa.requires) != len(pb.requires) ||
		(pa.gather() == nil) != (pb.gather() == nil) || (pa.Def == nil) != (pb.Def == nil) {
		return false
	}
	if !sameTargets(ra, pa, pa.requires, rb, pb, pb.requires) || !sameShared(ra, pa.sharing(), rb, pb.sharing()) {
		return false
	}
	if f, g := pa.gather(), pb.gather(); f != nil {
		if f.count != g.count || f.held != g.held || len(f.nodes) != len(g.nodes) {
			return false
		}
		for k, n := range f.nodes {
			if !ra.own(n) || !rb.own(g.nodes[k]) || n.rank != g.nodes[k].rank {
				return false
			}
		}
	}
	if pa.Def == nil {
		return true
	}
	sa, sb := pa.Def.stages, pb.Def.stages
	if len(sa) != len(sb) {
		return false
	}
	for k, se := range sa {
		ta, tb := se.stage, sb[k].stage
		if !ra.ownTask(ta) || !rb.ownTask(tb) || ta.idx != tb.idx || ta.node.rank != tb.node.rank {
			return false
		}
	}
	return true
}

// sameTargets reports whether edges ea of a graph and eb of another (ra and
// rb), held by pa and pb (nil for a shared list, which holds no template), go
// to alike tasks, in order: by id, position and node rank, each the graph's
// own node's.
func sameTargets(ra *ranked, pa *PlacedTask, ea []Edge, rb *ranked, pb *PlacedTask, eb []Edge) bool {
	if len(ea) != len(eb) {
		return false
	}
	for k, e := range ea {
		ta, tb := pa.edge(e).raw, pb.edge(eb[k]).raw
		if ta == nil || tb == nil || !ra.own(ta.node) || !rb.own(tb.node) ||
			ta.idx != tb.idx || ta.node.rank != tb.node.rank || ta.ID() != tb.ID() {
			return false
		}
	}
	return true
}

// sameShared reports whether two tasks share alike edges (sharedEdges): both
// none, or lists of alike targets of which each task has as many. A task's
// edges are its held ones merged with its list, but the task itself and the
// held ones' targets, so alike held edges and lists make alike edges. Each pair
// of lists is compared once (ra.sharedSame).
func sameShared(ra *ranked, sa *sharedRef, rb *ranked, sb *sharedRef) bool {
	if sa == nil || sb == nil {
		return sa == nil && sb == nil
	}
	if sa.n != sb.n || sa.waits != sb.waits {
		return false
	}
	key := [2]*sharedEdges{sa.list, sb.list}
	same, ok := ra.sharedSame[key]
	if !ok {
		same = sameTargets(ra, nil, sa.list.edges, rb, nil, sb.list.edges)
		if ra.sharedSame == nil {
			ra.sharedSame = map[[2]*sharedEdges]bool{}
		}
		ra.sharedSame[key] = same
	}
	return same
}

// own reports whether n is the graph's node of its rank.
func (r *ranked) own(n *NodeGraph) bool {
	return n != nil && n.rank >= 0 && int(n.rank) < len(r.nodes) && r.nodes[n.rank] == n
}

// ownTask reports whether t is the task of its position on one of the
// graph's nodes.
func (r *ranked) ownTask(t *PlacedTask) bool {
	return t != nil && r.own(t.node) && int(t.idx) < len(r.ids) && t.node.taskAt(t.idx) == t
}
