package diff

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/fuelsync/fuelsync/render"
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
// two catalogues, once a graph, and only their entries whose bytes differ are
// decoded (a whole catalogue when it is not in render's shape). ok is false when neither side is such a
// render, or a catalogue lacks a task of the node (the caller reads the file).
func sameFileChange(ov, nv *sideView, cluster, graph, name string, defs defFields, known catalogueChanges) (gc *GraphChange, ok bool, err error) {
	ids, ok := nv.modelIDs(name)
	if !ok {
		if ids, ok = ov.modelIDs(name); !ok {
			return nil, false, nil
		}
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
			if tc, ok, err = catalogueTaskChange(ov, nv, cluster, graph, id, defs); err != nil || !ok {
				return nil, false, err
			}
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

// catalogueTaskChange is the change of task id's entry in the task catalogue
// of graph between the sides: nil when its bytes are the same (the fields
// compared are decoded from them), else from both entries decoded. ok is
// false when a side's catalogue lacks the task.
func catalogueTaskChange(ov, nv *sideView, cluster, graph, id string, defs defFields) (tc *TaskChange, ok bool, err error) {
	oe, err := ov.catalogueEntries(cluster, graph)
	if err != nil {
		return nil, false, err
	}
	ne, err := nv.catalogueEntries(cluster, graph)
	if err != nil {
		return nil, false, err
	}
	if oe != nil && ne != nil {
		o, ook := oe[id]
		n, nok := ne[id]
		if !ook || !nok {
			return nil, false, nil
		}
		// The same entry, with a body (an empty one is no definition).
		if bytes.Equal(o, n) && bytes.IndexByte(o, '\n') < len(o)-1 {
			return nil, true, nil
		}
	}
	o, err := ov.catalogueDef(cluster, graph, id, oe)
	if err != nil {
		return nil, false, err
	}
	n, err := nv.catalogueDef(cluster, graph, id, ne)
	if err != nil || o == nil || n == nil {
		return nil, false, err
	}
	return compareTask(&taskDoc{ID: id, def: o, shared: true}, &taskDoc{ID: id, def: n, shared: true}, defs), true, nil
}

// catalogueEntries are the entries of the task catalogue of graph by task id,
// as bytes (splitCatalogue); nil when it is not in the shape render writes.
func (v *sideView) catalogueEntries(cluster, graph string) (map[string][]byte, error) {
	if e, ok := v.entries[graph]; ok {
		return e, nil
	}
	_, data, err := v.readCatalogue(cluster, graph)
	if err != nil {
		return nil, err
	}
	e, _ := splitCatalogue(data)
	if v.entries == nil {
		v.entries = map[string]map[string][]byte{}
	}
	v.entries[graph] = e
	return e, nil
}

// catalogueDef is the definition of task id in the task catalogue of graph
// (nil: none there): its entry alone decoded, or, without entries, from the
// whole catalogue decoded.
func (v *sideView) catalogueDef(cluster, graph, id string, entries map[string][]byte) (*taskDef, error) {
	if entries == nil {
		c, err := v.catalogue(cluster, graph)
		if err != nil {
			return nil, err
		}
		return c.Tasks[id], nil
	}
	raw, ok := entries[id]
	if !ok {
		return nil, nil
	}
	doc, err := decodeCatalogue(render.CataloguePath(cluster, graph), append([]byte("tasks:\n"), raw...))
	if err != nil {
		return nil, err
	}
	return doc.Tasks[id], nil
}

// splitCatalogue splits a task catalogue in the shape render writes it (keys
// at the top level without indentation, then "tasks:" and its entries, each
// under a task id yaml.v3 writes plain, render.PlainWord, indented by two
// spaces, its lines indented by four or more, or empty in a block scalar) into
// each entry's bytes, key line included, by task id. ok is false for any
// other shape (which yaml.v3 reads whole).
func splitCatalogue(data []byte) (entries map[string][]byte, ok bool) {
	header, rest, found := bytes.Cut(data, []byte("\ntasks:\n"))
	if !found || bytes.Contains(header, []byte("\n ")) || bytes.HasPrefix(header, []byte(" ")) {
		return nil, false
	}
	entries = map[string][]byte{}
	id, start := "", -1
	for pos := 0; pos < len(rest); {
		end := bytes.IndexByte(rest[pos:], '\n')
		if end < 0 {
			return nil, false
		}
		line := rest[pos : pos+end+1]
		switch {
		case len(line) == 1 && start >= 0: // an empty line of a block scalar
		case bytes.HasPrefix(line, []byte("    ")) && start >= 0:
		case len(line) > 3 && line[0] == ' ' && line[1] == ' ' && line[2] != ' ' && bytes.HasSuffix(line, []byte(":\n")):
			key := string(line[2 : len(line)-2])
			if _, dup := entries[key]; dup || (start >= 0 && key == id) || !render.PlainWord(key) {
				return nil, false
			}
			if start >= 0 {
				entries[id] = rest[start:pos]
			}
			id, start = key, pos
		default:
			return nil, false
		}
		pos += end + 1
	}
	if start >= 0 {
		entries[id] = rest[start:]
	}
	return entries, true
}
