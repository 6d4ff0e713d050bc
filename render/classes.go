package render

// PlaceByClass places the tasks of every graph type of the model on the first
// node of each class of nodes (the same resolution tags: every selector
// selects all of a class or none of it), without their edges or their order.
// It is what the causes of a change read of a render (which definition a task
// of a node has, the selector entry or group that put it there: Via), for the
// cost of a node a class rather than a node a node. Graph.Node of any node of
// the cluster returns the node of its class (named after that one); the
// result is not to be encoded, and its diagnostics are not reported (the
// model was rendered whole when it was applied).
func (m *Model) PlaceByClass() *Rendered {
	types := m.graphTypes()
	graphs := make([]*Graph, len(types))
	inParallel(len(types), func(_, i int) {
		gb := m.placeGraph(types[i], true)
		for _, a := range gb.aliases {
			gb.g.byNode[a.node] = gb.nodes[gb.members[a.c][0]]
		}
		for _, ng := range gb.nodes[len(gb.g.Nodes):] {
			if len(ng.byID) > 0 {
				gb.g.Nodes = append(gb.g.Nodes, ng)
			}
		}
		graphs[i] = gb.g
	})
	return &Rendered{Model: m, Graphs: graphs}
}
