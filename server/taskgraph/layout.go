package taskgraph

import (
	"cmp"
	"slices"
)

// The layout is a layered (Sugiyama) drawing, pure: boxes and edges in,
// coordinates out. Each box is placed in a layer below every box it requires,
// the layers of a band (a stage) below those of the bands before it, and no
// layer wider than the picture allows (a layer that would be is continued in
// the next). An edge that spans layers passes each layer between through a
// slot of its own (a dummy vertex), shared by the edges of one source, so
// that no line crosses a box. The order within each layer is chosen by
// barycenter sweeps (the order with the fewest crossings seen is kept), and
// the boxes' x by isotonic regression towards their neighbours' centres.

// Box is a box to place: its size, in pixels, and its band.
type Box struct{ W, H, Band int }

// Edge is a requirement: box From is required by box To (From is above).
type Edge struct{ From, To int }

// Point is a point of the picture, in pixels.
type Point struct{ X, Y int }

// Span is the vertical extent of a band (Y0 to Y1) and the top of its head
// (its name's row); Used is false for a band with no box.
type Span struct {
	Y0, Y1, Head int
	Used         bool
}

// Spacing is the layout's measures, in pixels.
type Spacing struct {
	MaxWidth int // the picture's width the layout keeps within when it can
	Pad      int // around the picture
	GapX     int // between two boxes of a layer
	SlotX    int // between an edge's slot and its neighbour in a layer
	GapY     int // between two layers, where the edges run
	BandHead int // above a band's first layer, for its name (0: no band heads)
}

// Layout is where everything goes.
type Layout struct {
	X, Y, Layer []int // each box's top left corner and its layer
	// Paths are the edges' routes, one for each Edge given (nil for an edge
	// that does not point down): points from the source's bottom to the
	// target's top, joined alternately by a straight line (down from a box to
	// its layer's bottom, or through a slot) and by a curve through the gap
	// between two layers: segment k, from point k to k+1, is straight when k
	// is even.
	Paths [][]Point
	Bands []Span // each band's extent, by band number
	// Width and Height are the picture's size; Crossings counts the edges'
	// crossings between adjacent layers in the order chosen.
	Width, Height, Crossings int
}

// vertex is a box, or a slot an edge passes a layer through.
type vertex struct {
	box         int // the box, or -1 for a slot
	src         int // a slot's source box
	layer, x, w int
}

// layered is the layered graph being laid out.
type layered struct {
	v      []vertex
	layers [][]int // vertices by layer, in order
	up     [][]int // a vertex's neighbours in the layer above
	down   [][]int // and in the layer below
	chains [][]int // each edge's vertices, top to bottom
	pos    []int   // a vertex's index in its layer
	slots  map[[2]int]int
	// layerY and layerH are each layer's top and height, once placed.
	layerY, layerH []int
}

// Place lays the boxes and edges out. Edges that do not point down (a
// cycle, which the loader refuses) are left without a path.
func Place(boxes []Box, edges []Edge, sp Spacing) *Layout {
	budget := sp.MaxWidth - 2*sp.Pad
	var best *Layout
	for range 8 {
		l := placeWithin(boxes, edges, sp, budget)
		if best == nil || l.Width < best.Width {
			best = l
		}
		if l.Width <= sp.MaxWidth {
			return l
		}
		budget = budget * 85 / 100
	}
	return best
}

// placeWithin lays out with at most budget pixels of boxes in a layer.
func placeWithin(boxes []Box, edges []Edge, sp Spacing, budget int) *Layout {
	preds, succs := adjacency(len(boxes), edges)
	order := topoOrder(len(boxes), preds, succs)
	band := effectiveBands(boxes, preds, order)
	layer := assignLayers(boxes, band, preds, succs, order, budget, sp.GapX)
	g := buildLayered(boxes, edges, layer)
	crossings := g.order(order)
	g.assignX(sp)
	out := &Layout{X: make([]int, len(boxes)), Y: make([]int, len(boxes)), Layer: layer, Crossings: crossings}
	g.assignY(boxes, band, sp, out)
	g.route(boxes, edges, out)
	return out
}

// adjacency lists each box's requirements and dependents.
func adjacency(n int, edges []Edge) (preds, succs [][]int) {
	preds, succs = make([][]int, n), make([][]int, n)
	for _, e := range edges {
		if e.From == e.To || e.From < 0 || e.To < 0 || e.From >= n || e.To >= n {
			continue
		}
		preds[e.To] = append(preds[e.To], e.From)
		succs[e.From] = append(succs[e.From], e.To)
	}
	return preds, succs
}

// topoOrder orders the boxes requirements first, otherwise by index; a box
// in a cycle comes when nothing else can, smallest index first.
func topoOrder(n int, preds, succs [][]int) []int {
	indeg := make([]int, n)
	for i := range n {
		indeg[i] = len(preds[i])
	}
	done := make([]bool, n)
	order := make([]int, 0, n)
	for len(order) < n {
		pick, first := -1, -1
		for i := range n {
			if !done[i] {
				if first < 0 {
					first = i
				}
				if indeg[i] <= 0 {
					pick = i
					break
				}
			}
		}
		if pick < 0 { // a cycle
			pick = first
		}
		done[pick] = true
		order = append(order, pick)
		for _, s := range succs[pick] {
			indeg[s]--
		}
	}
	return order
}

// effectiveBands is each box's band, or the latest of its requirements'
// when later: a box cannot be drawn above what it requires.
func effectiveBands(boxes []Box, preds [][]int, order []int) []int {
	band := make([]int, len(boxes))
	for _, i := range order {
		band[i] = boxes[i].Band
		for _, p := range preds[i] {
			band[i] = max(band[i], band[p])
		}
	}
	return band
}

// assignLayers puts each box in the first layer below its requirements and
// its band's start that has room for it (at most budget pixels of boxes,
// unless the box alone is wider), then moves each box that requires nothing
// down to just above its first dependent when that layer has room. Empty
// layers are taken out.
func assignLayers(boxes []Box, band []int, preds, succs [][]int, order []int, budget, gap int) []int {
	byBand := slices.Clone(order)
	slices.SortStableFunc(byBand, func(a, b int) int { return cmp.Compare(band[a], band[b]) })
	layer := make([]int, len(boxes))
	var width []int // the boxes' width in each layer
	bandStart, bandEnd := map[int]int{}, map[int]int{}
	fits := func(l, w int) bool { return l >= len(width) || width[l] == 0 || width[l]+gap+w <= budget }
	put := func(i, l int) {
		for len(width) <= l {
			width = append(width, 0)
		}
		if width[l] > 0 {
			width[l] += gap
		}
		width[l] += boxes[i].W
		layer[i] = l
	}
	for k, i := range byBand {
		if k == 0 || band[i] != band[byBand[k-1]] {
			bandStart[band[i]] = len(width)
		}
		l := bandStart[band[i]]
		for _, p := range preds[i] {
			l = max(l, layer[p]+1)
		}
		for !fits(l, boxes[i].W) {
			l++
		}
		put(i, l)
		bandEnd[band[i]] = max(bandEnd[band[i]], l)
	}
	for k := len(byBand) - 1; k >= 0; k-- {
		i := byBand[k]
		if len(preds[i]) > 0 || len(succs[i]) == 0 {
			continue
		}
		target := bandEnd[band[i]]
		for _, s := range succs[i] {
			target = min(target, layer[s]-1)
		}
		for l := target; l > layer[i]; l-- {
			if width[l]+gap+boxes[i].W <= budget {
				width[layer[i]] -= boxes[i].W
				put(i, l)
				break
			}
		}
	}
	return compact(layer)
}

// compact renumbers the layers without the empty ones.
func compact(layer []int) []int {
	used := slices.Clone(layer)
	slices.Sort(used)
	used = slices.Compact(used)
	for i, l := range layer {
		layer[i], _ = slices.BinarySearch(used, l)
	}
	return layer
}

// buildLayered adds the slots of the edges that span layers (one per source
// and layer) and the neighbours of each vertex.
func buildLayered(boxes []Box, edges []Edge, layer []int) *layered {
	g := &layered{slots: map[[2]int]int{}}
	for i, b := range boxes {
		g.v = append(g.v, vertex{box: i, layer: layer[i], w: b.W})
	}
	link := map[[2]int]bool{}
	g.chains = make([][]int, len(edges))
	for k, e := range edges {
		if e.From < 0 || e.To < 0 || e.From >= len(boxes) || e.To >= len(boxes) || layer[e.To] <= layer[e.From] {
			continue
		}
		chain := []int{e.From}
		for l := layer[e.From] + 1; l < layer[e.To]; l++ {
			key := [2]int{e.From, l}
			s, ok := g.slots[key]
			if !ok {
				s = len(g.v)
				g.slots[key] = s
				g.v = append(g.v, vertex{box: -1, src: e.From, layer: l})
			}
			chain = append(chain, s)
		}
		chain = append(chain, e.To)
		g.chains[k] = chain
		for j := 1; j < len(chain); j++ {
			link[[2]int{chain[j-1], chain[j]}] = true
		}
	}
	g.up, g.down = make([][]int, len(g.v)), make([][]int, len(g.v))
	pairs := make([][2]int, 0, len(link))
	for p := range link {
		pairs = append(pairs, p)
	}
	slices.SortFunc(pairs, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, p := range pairs {
		g.down[p[0]] = append(g.down[p[0]], p[1])
		g.up[p[1]] = append(g.up[p[1]], p[0])
	}
	return g
}
