package taskgraph

import (
	"cmp"
	"math"
	"slices"
)

// sweeps is how many down-and-up barycenter sweeps order the layers.
const sweeps = 12

// order chooses the order within each layer: the boxes first by topo (the
// boxes' topological order; an edge's slots after its source), then by
// barycenter sweeps, down (by the mean position of each vertex's neighbours
// above) and up (below); the order with the fewest crossings seen is kept,
// and their number returned.
func (g *layered) order(topo []int) int {
	rank := make([]int, len(g.v))
	for k, i := range topo {
		rank[i] = k
	}
	nl := 0
	for i, v := range g.v {
		if v.box < 0 {
			rank[i] = rank[v.src]
		}
		nl = max(nl, v.layer+1)
	}
	g.layers = make([][]int, nl)
	for i, v := range g.v {
		g.layers[v.layer] = append(g.layers[v.layer], i)
	}
	for _, l := range g.layers {
		slices.SortStableFunc(l, func(a, b int) int { return cmp.Compare(rank[a], rank[b]) })
	}
	g.pos = make([]int, len(g.v))
	g.setPos()
	best, bestC := g.snapshot(), g.crossings()
	for range sweeps {
		for l := 1; l < nl; l++ {
			g.sortLayer(l, g.up)
		}
		if c := g.crossings(); c < bestC {
			best, bestC = g.snapshot(), c
		}
		for l := nl - 2; l >= 0; l-- {
			g.sortLayer(l, g.down)
		}
		if c := g.crossings(); c < bestC {
			best, bestC = g.snapshot(), c
		}
	}
	g.layers = best
	g.setPos()
	return bestC
}

func (g *layered) setPos() {
	for _, l := range g.layers {
		for k, v := range l {
			g.pos[v] = k
		}
	}
}

func (g *layered) snapshot() [][]int {
	s := make([][]int, len(g.layers))
	for i, l := range g.layers {
		s[i] = slices.Clone(l)
	}
	return s
}

// sortLayer orders layer l by the mean position of each vertex's
// neighbours (nbr: those above, or below); a vertex without any keeps its
// position, and ties keep their order.
func (g *layered) sortLayer(l int, nbr [][]int) {
	bc := map[int]float64{}
	for _, v := range g.layers[l] {
		if len(nbr[v]) == 0 {
			bc[v] = float64(g.pos[v])
			continue
		}
		s := 0.0
		for _, n := range nbr[v] {
			s += float64(g.pos[n])
		}
		bc[v] = s / float64(len(nbr[v]))
	}
	slices.SortStableFunc(g.layers[l], func(a, b int) int { return cmp.Compare(bc[a], bc[b]) })
	for k, v := range g.layers[l] {
		g.pos[v] = k
	}
}

// crossings counts the pairs of segments between adjacent layers that
// cross: the inversions of their lower ends, sorted by their upper ends.
func (g *layered) crossings() int {
	total := 0
	for l := 0; l+1 < len(g.layers); l++ {
		var segs [][2]int
		for _, a := range g.layers[l] {
			for _, b := range g.down[a] {
				segs = append(segs, [2]int{g.pos[a], g.pos[b]})
			}
		}
		total += inversions(segs, len(g.layers[l+1]))
	}
	return total
}

// inversions counts the pairs of segments (upper, lower position) that
// cross, with a Fenwick tree over the n lower positions.
func inversions(segs [][2]int, n int) int {
	slices.SortFunc(segs, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	tree := make([]int, n+1)
	count, seen := 0, 0
	for _, s := range segs {
		le := 0 // segments seen whose lower end is at or left of s's
		for i := s[1] + 1; i > 0; i -= i & -i {
			le += tree[i]
		}
		count += seen - le
		for i := s[1] + 1; i <= n; i += i & -i {
			tree[i]++
		}
		seen++
	}
	return count
}

// xPasses is how many passes, alternately down and up, move the vertices
// towards their neighbours' centres.
const xPasses = 8

// assignX places the vertices of each layer in their order, each towards
// the mean centre of its neighbours in the layer above (or below), keeping
// their separation and the picture within sp.MaxWidth where the layer fits.
func (g *layered) assignX(sp Spacing) {
	for l := range g.layers {
		g.placeLayer(l, nil, sp)
	}
	for pass := range xPasses {
		if pass%2 == 0 {
			for l := 1; l < len(g.layers); l++ {
				g.placeLayer(l, g.up, sp)
			}
		} else {
			for l := len(g.layers) - 2; l >= 0; l-- {
				g.placeLayer(l, g.down, sp)
			}
		}
	}
}

// placeLayer places layer l by isotonic regression: with off the packed
// offset of each vertex (the widths and separations before it), x = y + off
// with y non-decreasing keeps the order and the separations, and the
// weighted least-squares y towards the desired positions is found by pool
// adjacent violators. nbr nil packs the layer from the left.
func (g *layered) placeLayer(l int, nbr [][]int, sp Spacing) {
	vs := g.layers[l]
	off := make([]float64, len(vs))
	for k := 1; k < len(vs); k++ {
		sep := sp.SlotX
		if g.v[vs[k-1]].box >= 0 && g.v[vs[k]].box >= 0 {
			sep = sp.GapX
		}
		off[k] = off[k-1] + float64(g.v[vs[k-1]].w+sep)
	}
	lo := float64(sp.Pad)
	last := len(vs) - 1
	hi := max(lo, float64(sp.MaxWidth-sp.Pad)-off[last]-float64(g.v[vs[last]].w))
	target, weight := make([]float64, len(vs)), make([]float64, len(vs))
	for k, v := range vs {
		target[k], weight[k] = lo, 1
		if nbr == nil {
			continue
		}
		c, w := float64(g.v[v].x)+float64(g.v[v].w)/2, 0.05 // no neighbour: stay
		if len(nbr[v]) > 0 {
			c, w = 0, 1
			for _, n := range nbr[v] {
				c += float64(g.v[n].x) + float64(g.v[n].w)/2
			}
			c /= float64(len(nbr[v]))
			if g.v[v].box < 0 {
				w = 2 // an edge's slot: keep long edges straight
			}
		}
		target[k], weight[k] = c-float64(g.v[v].w)/2-off[k], w
	}
	y := isotonic(target, weight)
	for k, v := range vs {
		g.v[v].x = int(math.Round(min(max(y[k], lo), hi) + off[k]))
	}
}

// isotonic is the non-decreasing sequence nearest to t in weighted least
// squares (pool adjacent violators).
func isotonic(t, w []float64) []float64 {
	type block struct {
		mean, weight float64
		n            int
	}
	var bs []block
	for i := range t {
		bs = append(bs, block{t[i], w[i], 1})
		for len(bs) > 1 && bs[len(bs)-2].mean > bs[len(bs)-1].mean {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			ww := a.weight + b.weight
			bs = append(bs[:len(bs)-2], block{(a.mean*a.weight + b.mean*b.weight) / ww, ww, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(t))
	for _, b := range bs {
		for range b.n {
			out = append(out, b.mean)
		}
	}
	return out
}

// assignY places the layers top to bottom, a band's head above its first
// layer, and sets the boxes' coordinates, the bands' extents and the
// picture's size.
func (g *layered) assignY(boxes []Box, band []int, sp Spacing, out *Layout) {
	nb := 0
	for _, b := range band {
		nb = max(nb, b+1)
	}
	out.Bands = make([]Span, nb)
	layerY, layerH := make([]int, len(g.layers)), make([]int, len(g.layers))
	y, prev := sp.Pad, -1
	for l, vs := range g.layers {
		b := -1
		for _, v := range vs {
			if i := g.v[v].box; i >= 0 {
				layerH[l], b = max(layerH[l], boxes[i].H), band[i]
			}
		}
		if b != prev && b >= 0 {
			if prev >= 0 {
				out.Bands[prev].Y1 = y - sp.GapY/2
				out.Bands[b].Y0 = y - sp.GapY/2
			}
			out.Bands[b].Used, out.Bands[b].Head = true, y
			y += sp.BandHead
			prev = b
		}
		layerY[l] = y
		y += layerH[l] + sp.GapY
	}
	out.Height = y - sp.GapY + sp.Pad
	if prev >= 0 {
		out.Bands[prev].Y1 = out.Height
	}
	for _, v := range g.v {
		if v.box >= 0 {
			out.X[v.box], out.Y[v.box] = v.x, layerY[v.layer]
		}
		out.Width = max(out.Width, v.x+v.w+sp.Pad)
	}
	g.layerY, g.layerH = layerY, layerH
}

// route sets each edge's path through the chain of its vertices: down from
// its source box's bottom to its layer's bottom, then through the gap to the
// next vertex's top, down through a slot to its layer's bottom, and so on to
// the target's top; at ports spread along the boxes' edges in the order of
// the other ends, so that the lines into one box do not meet before it.
func (g *layered) route(boxes []Box, edges []Edge, out *Layout) {
	outPort, inPort := map[[2]int]int{}, map[[2]int]int{}
	centre := func(v int) int { return g.v[v].x + g.v[v].w/2 }
	spread := func(v int, others []int, port map[[2]int]int, key func(o int) [2]int) {
		if g.v[v].box < 0 {
			for _, o := range others {
				port[key(o)] = g.v[v].x
			}
			return
		}
		sorted := slices.Clone(others)
		slices.SortStableFunc(sorted, func(a, b int) int { return cmp.Compare(centre(a), centre(b)) })
		for k, o := range sorted {
			port[key(o)] = g.v[v].x + g.v[v].w*(k+1)/(len(sorted)+1)
		}
	}
	for v := range g.v {
		spread(v, g.down[v], outPort, func(o int) [2]int { return [2]int{v, o} })
		spread(v, g.up[v], inPort, func(o int) [2]int { return [2]int{o, v} })
	}
	top := func(v int) int { return g.layerY[g.v[v].layer] }
	bottom := func(v int) int { return top(v) + g.layerH[g.v[v].layer] }
	out.Paths = make([][]Point, len(edges))
	for k, chain := range g.chains {
		if chain == nil {
			continue
		}
		from := chain[0]
		x := outPort[[2]int{from, chain[1]}]
		p := []Point{{x, top(from) + boxes[g.v[from].box].H}, {x, bottom(from)}}
		for j := 1; j < len(chain); j++ {
			a, b := chain[j-1], chain[j]
			if j > 1 {
				p = append(p, Point{outPort[[2]int{a, b}], bottom(a)})
			}
			p = append(p, Point{inPort[[2]int{a, b}], top(b)})
		}
		out.Paths[k] = p
	}
}
