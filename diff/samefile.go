package diff

import (
	"cmp"
	"slices"
)

// catalogueChanges remembers, for each graph of a cluster, the change of each
// task id whose catalogue entry differs between the sides (nil: the same):
// a release change edits a few definitions, which every node of the graph
// shares, so each is compared once a cluster, not once a node.
type catalogueChanges map[string]map[string]*TaskChange

// sameFileChange is the change of node file name (graph graph of cluster)
// whose bytes are the same on both sides while the graph's task catalogue
// changed. A side that is a render gives the node's task ids from its model,
// and a file fuelsync writes has no definition inline (render.catalogueOf):
// the node's tasks and requirements are the same, and each task whose
// catalogue entry differs changed in those fields. Nothing is read but the
// two catalogues, once a graph. ok is false when neither side is such a
// render, or a catalogue lacks a task of the node (the caller reads the file).
func sameFileChange(ov, nv *sideView, cluster, graph, name string, defs defFields, known catalogueChanges) (gc *GraphChange, ok bool, err error) {
	ids, ok := nv.modelIDs(name)
	if !ok {
		if ids, ok = ov.modelIDs(name); !ok {
			return nil, false, nil
		}
	}
	oc, err := ov.catalogue(cluster, graph)
	if err != nil {
		return nil, false, err
	}
	nc, err := nv.catalogue(cluster, graph)
	if err != nil {
		return nil, false, err
	}
	changes := known[graph]
	if changes == nil {
		changes = map[string]*TaskChange{}
		known[graph] = changes
	}
	gc = &GraphChange{Graph: graph}
	for _, id := range ids {
		tc, seen := changes[id]
		if !seen {
			o, n := oc.Tasks[id], nc.Tasks[id]
			if o == nil || n == nil {
				return nil, false, nil
			}
			tc = compareTask(&taskDoc{ID: id, def: o, shared: true}, &taskDoc{ID: id, def: n, shared: true}, defs)
			changes[id] = tc
		}
		if tc != nil {
			gc.Changed = append(gc.Changed, tc)
		}
	}
	if len(gc.Changed) == 0 {
		return nil, true, nil
	}
	slices.SortFunc(gc.Changed, func(a, b *TaskChange) int { return cmp.Compare(a.ID, b.ID) })
	return gc, true, nil
}
