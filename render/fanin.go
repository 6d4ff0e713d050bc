package render

import (
	"cmp"
	"iter"
	"slices"
)

// The fan-in of the sync node's stages.
//
// A stage of the sync node (deploy_end, post_deployment_start, ...) requires every
// task of every other node whose definition is required_for it, unless that node
// has a task of the stage's id itself (the node's own copy then gathers them
// through its local edges). That is one edge per node and task: millions at a few
// thousand nodes, all implied by the definitions' stages and the nodes' tasks. The
// model does not hold them: the stage keeps its other edges (among the sync node's
// tasks, cross-dependencies) and a fanIn, the nodes it gathers from, and Requires
// computes the gathered edges on demand, merged with the held ones in the order
// and with the sources a list of every edge, sorted by node then task id with the
// first edge of a pair kept, would have:
//
//   - a gathered edge's source is the definition's required_for entry that names
//     the stage (the first one, when several do);
//   - when the stage also holds an edge to a gathered task, the one that came
//     first wins: a cross-depended-by of the gathered task (bound while that task's
//     edges are built, before it is gathered) is kept, and a cross-depends of the
//     stage itself (bound when the sync node's edges are built, after every other
//     node's) is not held at all (crossEdges leaves it out).

// fanIn is the tasks of other nodes a stage gathers.
type fanIn struct {
	// nodes are the nodes gathered from, by rank: nodes other than sync without a
	// task of the stage's id that have a task required_for it.
	nodes []*NodeGraph
	// count is the number of gathered edges not also held by the stage.
	count int
	// held is the number of gathered tasks the stage also holds an edge to.
	held int
}

// stageSource returns the source of the edge from stage to t when t's definition
// is required_for it (the first entry that names it), or nil.
func stageSource(stage, t *PlacedTask) *EdgeSource {
	for _, se := range t.Def.stages {
		if se.stage == stage {
			return se.src
		}
	}
	return nil
}

// gathers reports whether stage gathers task t of another node (t's node has no
// task of the stage's id and t's definition is required_for it).
func (gb *graphBuilder) gathers(stage, t *PlacedTask) bool {
	return stage.node == gb.sync && t.node != gb.sync &&
		!gb.runs(t.node.rank, stage.idx) && stageSource(stage, t) != nil
}

// gatheredBy calls f with each stage that gathers task idx of the node of rank r
// through its fan-in (and holds no edge to it itself): the stages whose Requires
// yields a gathered edge to it. The order calls it with what it knows of the task
// without following the task's pointer.
func (gb *graphBuilder) gatheredBy(r, idx int32, f func(stage *PlacedTask)) {
	if r == gb.sync.rank {
		return
	}
	stages := gb.defAt[idx].stages
	for i, se := range stages {
		stage := se.stage
		if gb.runs(r, stage.idx) || seenStage(stages[:i], stage) || stage.holdsKey(rankKey(r, idx)) {
			continue
		}
		f(stage)
	}
}

// holds reports whether stage pt, which gathers t, also holds an edge to it (its
// held edges are sorted).
func (pt *PlacedTask) holds(t *PlacedTask) bool { return pt.holdsKey(edgeKey(t)) }

// holdsKey is holds of the task of edgeKey k.
func (pt *PlacedTask) holdsKey(k int64) bool {
	if pt.gather().held == 0 {
		return false
	}
	_, ok := slices.BinarySearchFunc(pt.requires, k, func(e Edge, k int64) int { return cmp.Compare(edgeKey(e.raw), k) })
	return ok
}

// buildFanIns gives each stage of the sync node the nodes it gathers from and
// counts its gathered edges (before the cross-dependencies are bound).
func (gb *graphBuilder) buildFanIns() {
	for _, ng := range gb.nodes {
		if ng == gb.sync {
			continue
		}
		for _, pt := range ng.byID {
			stages := pt.Def.stages
			for i, se := range stages {
				stage := se.stage
				if gb.runs(ng.rank, stage.idx) || seenStage(stages[:i], stage) {
					continue
				}
				f := stage.gather()
				if f == nil {
					f = &fanIn{}
					sn := stage.node // the sync node
					if sn.fanIns == nil {
						sn.fanIns = make([]*fanIn, len(gb.ids))
					}
					sn.fanIns[stage.idx] = f
				}
				if len(f.nodes) == 0 || f.nodes[len(f.nodes)-1] != ng {
					f.nodes = append(f.nodes, ng)
				}
				f.count++
			}
		}
	}
}

// seenStage reports whether stage is among the entries before.
func seenStage(before []stageEdge, stage *PlacedTask) bool {
	for _, se := range before {
		if se.stage == stage {
			return true
		}
	}
	return false
}

// settleFanIns discounts from each stage's count the gathered tasks the stage also
// holds an edge to (its held edges are sorted and compacted by now).
func (gb *graphBuilder) settleFanIns() {
	for _, pt := range gb.sync.byID {
		f := pt.gather()
		if f == nil {
			continue
		}
		for _, e := range pt.requires {
			if gb.gathers(pt, e.raw) {
				f.count--
				f.held++
			}
		}
	}
}

// Requires are the edges on this task as the dependent, sorted by node (cluster
// nodes by id, master, sync) then task id, with their sources. A stage of the sync
// node does not hold the edges to the tasks of other nodes that are required_for
// it: they are computed as the sequence is iterated, so a loop over the edges of
// every task allocates nothing. NumRequires counts them; AllRequires returns them
// as a slice.
func (pt *PlacedTask) Requires() iter.Seq[Edge] {
	return func(yield func(Edge) bool) {
		if pt.gather() == nil {
			pt.eachHeld(yield)
			return
		}
		pt.eachGathered(yield)
	}
}

// eachGathered yields the edges of a stage with a fanIn: its held edges merged with
// the gathered ones, a held edge winning over a gathered one to the same task. (A
// stage of the sync node holds no template: see classEdges.)
func (pt *PlacedTask) eachGathered(yield func(Edge) bool) {
	held := pt.requires
	for _, ng := range pt.gather().nodes {
		for _, t := range ng.byID {
			src := stageSource(pt, t)
			if src == nil {
				continue
			}
			k := edgeKey(t)
			for len(held) > 0 && edgeKey(held[0].raw) < k {
				if !yield(held[0]) {
					return
				}
				held = held[1:]
			}
			if len(held) > 0 && held[0].raw == t {
				continue
			}
			if !yield(Edge{EdgeSource: src, raw: t}) {
				return
			}
		}
	}
	for _, e := range held {
		if !yield(e) {
			return
		}
	}
}

// NumRequires is the number of edges Requires yields.
func (pt *PlacedTask) NumRequires() int {
	if f := pt.gather(); f != nil {
		return pt.numHeld() + f.count
	}
	return pt.numHeld()
}

// AllRequires returns the edges of Requires as a new slice (nil when none).
func (pt *PlacedTask) AllRequires() []Edge {
	k := pt.NumRequires()
	if k == 0 {
		return nil
	}
	out := make([]Edge, 0, k)
	for e := range pt.Requires() {
		out = append(out, e)
	}
	return out
}
