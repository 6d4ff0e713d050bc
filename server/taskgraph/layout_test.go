package taskgraph

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

var testSpacing = Spacing{MaxWidth: 400, Pad: 8, GapX: 10, SlotX: 6, GapY: 30, BandHead: 16}

// boxesOf is n boxes of width w, height 20, band 0.
func boxesOf(n, w int) []Box {
	b := make([]Box, n)
	for i := range b {
		b[i] = Box{W: w, H: 20}
	}
	return b
}

// TestLayering: each box is in a layer below every box it requires, the
// bands' layers follow one another, a layer is not wider than the picture
// allows, a box that requires nothing sits just above its first dependent,
// and no layer is empty.
func TestLayering(t *testing.T) {
	for _, tc := range []struct {
		name  string
		boxes []Box
		edges []Edge
		want  []int // the layers, when given
	}{
		{"chain", boxesOf(3, 50), []Edge{{0, 1}, {1, 2}}, []int{0, 1, 2}},
		{"diamond", boxesOf(4, 50), []Edge{{0, 1}, {0, 2}, {1, 3}, {2, 3}}, []int{0, 1, 1, 2}},
		{"longest path", boxesOf(4, 50), []Edge{{0, 1}, {1, 2}, {0, 2}, {2, 3}}, []int{0, 1, 2, 3}},
		// 3 requires nothing: it sits above its dependent 2, not at the top.
		{"a source sinks to its dependent", boxesOf(4, 50), []Edge{{0, 1}, {1, 2}, {3, 2}}, []int{0, 1, 2, 1}},
		// A band-1 box that requires nothing is below every band-0 box.
		{"bands", []Box{{W: 50, H: 20}, {W: 50, H: 20}, {W: 50, H: 20, Band: 1}, {W: 50, H: 20, Band: 1}},
			[]Edge{{0, 1}, {2, 3}}, []int{0, 1, 2, 3}},
		// A box requiring a later band's box is in that band.
		{"band inherited", []Box{{W: 50, H: 20, Band: 1}, {W: 50, H: 20}, {W: 50, H: 20}},
			[]Edge{{0, 1}, {2, 0}}, nil},
		// Ten 100 px boxes, 384 px for boxes in a layer: three a layer.
		{"wide layer continued", boxesOf(10, 100), nil, []int{0, 0, 0, 1, 1, 1, 2, 2, 2, 3}},
		{"one box wider than the picture", boxesOf(2, 900), nil, []int{0, 1}},
		{"cycle", boxesOf(3, 50), []Edge{{0, 1}, {1, 2}, {2, 0}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Place(tc.boxes, tc.edges, testSpacing)
			if tc.want != nil && fmt.Sprint(l.Layer) != fmt.Sprint(tc.want) {
				t.Errorf("layers %v, want %v", l.Layer, tc.want)
			}
			checkLayers(t, tc.boxes, tc.edges, l, testSpacing)
		})
	}
}

// checkLayers checks the layering rules on a layout.
func checkLayers(t *testing.T, boxes []Box, edges []Edge, l *Layout, sp Spacing) {
	t.Helper()
	preds, _ := adjacency(len(boxes), edges)
	band := effectiveBands(boxes, preds, topoOrder(len(boxes), preds, make([][]int, len(boxes))))
	cyclic := false
	for _, e := range edges {
		if l.Layer[e.To] <= l.Layer[e.From] {
			cyclic = true // only a cycle may leave an edge pointing up
		}
	}
	for _, e := range edges {
		if !cyclic && band[e.To] < band[e.From] {
			t.Errorf("box %d (band %d) requires box %d of a later band %d", e.To, band[e.To], e.From, band[e.From])
		}
	}
	if cyclic && !hasCycle(len(boxes), edges) {
		t.Errorf("an edge points up in an acyclic graph: %v", l.Layer)
	}
	width, used, lastOfBand := map[int]int{}, map[int]bool{}, map[int]int{}
	for i, b := range boxes {
		width[l.Layer[i]] += b.W + sp.GapX
		used[l.Layer[i]] = true
		lastOfBand[band[i]] = max(lastOfBand[band[i]], l.Layer[i])
	}
	for i := range boxes {
		for b2, last := range lastOfBand {
			if b2 < band[i] && l.Layer[i] <= last && !cyclic {
				t.Errorf("box %d of band %d in layer %d, not below band %d's last layer %d", i, band[i], l.Layer[i], b2, last)
			}
		}
	}
	for layer, w := range width {
		if w-sp.GapX > sp.MaxWidth-2*sp.Pad && w-sp.GapX > maxW(boxes) {
			t.Errorf("layer %d has %d px of boxes; at most %d", layer, w-sp.GapX, sp.MaxWidth-2*sp.Pad)
		}
	}
	for layer := range len(used) {
		if !used[layer] {
			t.Errorf("layer %d is empty: %v", layer, l.Layer)
		}
	}
}

func maxW(boxes []Box) int {
	m := 0
	for _, b := range boxes {
		m = max(m, b.W)
	}
	return m
}

func hasCycle(n int, edges []Edge) bool {
	preds, succs := adjacency(n, edges)
	order := topoOrder(n, preds, succs)
	at := make([]int, n)
	for k, i := range order {
		at[i] = k
	}
	for _, e := range edges {
		if at[e.To] < at[e.From] {
			return true
		}
	}
	return false
}

// TestCrossings: the order within the layers removes the crossings that
// can be removed (the count the layout reports is the count of the drawing:
// recounted from the boxes' x), and a graph that must cross crosses the
// fewest times.
func TestCrossings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		boxes []Box
		edges []Edge
		want  int
	}{
		// In the given order, 0→3 and 1→2 cross.
		{"swap", boxesOf(4, 30), []Edge{{0, 3}, {1, 2}}, 0},
		// Two columns interleaved by the input order.
		{"interleaved", boxesOf(6, 30), []Edge{{0, 4}, {1, 3}, {2, 5}, {3, 5}}, 0},
		// K2,2 between two layers crosses once, whatever the order.
		{"complete bipartite", boxesOf(4, 30), []Edge{{0, 2}, {0, 3}, {1, 2}, {1, 3}}, 1},
		// A long edge passes its layers in a slot beside the chain, not across it.
		{"long edge", boxesOf(5, 30), []Edge{{0, 1}, {1, 2}, {2, 3}, {0, 3}, {4, 2}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Place(tc.boxes, tc.edges, testSpacing)
			if l.Crossings != tc.want {
				t.Errorf("%d crossings, want %d; layers %v, x %v", l.Crossings, tc.want, l.Layer, l.X)
			}
			if got := recount(l); got != l.Crossings {
				t.Errorf("the drawing crosses %d times; the layout says %d", got, l.Crossings)
			}
		})
	}
}

// recount counts the crossings of the drawn routes' curves: two curves
// through the same gap cross when their ends are in opposite orders.
func recount(l *Layout) int {
	type seg struct{ a, c Point }
	byGap := map[int][]seg{}
	seen := map[seg]bool{}
	for _, p := range l.Paths {
		for k := 1; k+1 < len(p); k += 2 {
			s := seg{p[k], p[k+1]}
			if !seen[s] {
				seen[s] = true
				byGap[s.a.Y*100000+s.c.Y] = append(byGap[s.a.Y*100000+s.c.Y], s)
			}
		}
	}
	n := 0
	for _, segs := range byGap {
		for i := range segs {
			for j := range i {
				if (segs[i].a.X-segs[j].a.X)*(segs[i].c.X-segs[j].c.X) < 0 {
					n++
				}
			}
		}
	}
	return n
}

// TestNoOverlap: no two boxes overlap (nor come closer than the gap), no
// box is outside the picture, the picture is no wider than MaxWidth when
// every layer can fit, and no route crosses a box: its straight pieces run
// beside the boxes, its curves through the gaps between layers. On the
// mitaka controller's graph, on its compute's, and on random graphs.
func TestNoOverlap(t *testing.T) {
	type input struct {
		name  string
		boxes []Box
		edges []Edge
		sp    Spacing
	}
	var inputs []input
	for _, f := range []string{"mitaka-controller", "mitaka-compute"} {
		data, err := os.ReadFile("testdata/" + f + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		g, err := Read(data)
		if err != nil {
			t.Fatal(err)
		}
		v := selectView(g, Options{Node: g.Node})
		boxes := make([]Box, len(v.boxes))
		for i, b := range v.boxes {
			boxes[i] = Box{W: b.width(), H: b.height(), Band: b.band}
		}
		inputs = append(inputs, input{f, boxes, v.edges, spacing})
	}
	r := rand.New(rand.NewPCG(35, 1))
	for k := range 20 {
		n := 5 + r.IntN(80)
		boxes := make([]Box, n)
		var edges []Edge
		for i := range boxes {
			boxes[i] = Box{W: 20 + r.IntN(200), H: 20 + 17*r.IntN(2), Band: i * 3 / n}
			for range r.IntN(3) {
				if i > 0 {
					edges = append(edges, Edge{r.IntN(i), i})
				}
			}
		}
		inputs = append(inputs, input{fmt.Sprintf("random-%d", k), boxes, edges, Spacing{MaxWidth: 700, Pad: 8, GapX: 12, SlotX: 6, GapY: 30, BandHead: 18}})
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			l := Place(in.boxes, in.edges, in.sp)
			checkLayers(t, in.boxes, in.edges, l, in.sp)
			checkNoOverlap(t, in.boxes, l, in.sp)
			if l.Width > in.sp.MaxWidth {
				t.Errorf("%d px wide; at most %d", l.Width, in.sp.MaxWidth)
			}
			t.Logf("%d boxes, %d edges: %d × %d px, %d crossings", len(in.boxes), len(in.edges), l.Width, l.Height, l.Crossings)
		})
	}
}

func checkNoOverlap(t *testing.T, boxes []Box, l *Layout, sp Spacing) {
	t.Helper()
	for i, a := range boxes {
		if l.X[i] < sp.Pad || l.Y[i] < sp.Pad || l.X[i]+a.W > l.Width || l.Y[i]+a.H > l.Height {
			t.Errorf("box %d at (%d,%d) %d×%d is outside the picture %d×%d", i, l.X[i], l.Y[i], a.W, a.H, l.Width, l.Height)
		}
		for j := range i {
			b := boxes[j]
			if l.X[i] < l.X[j]+b.W+sp.GapX && l.X[j] < l.X[i]+a.W+sp.GapX && l.Y[i] < l.Y[j]+b.H && l.Y[j] < l.Y[i]+a.H {
				t.Errorf("boxes %d (%d,%d %d×%d) and %d (%d,%d %d×%d) overlap", i, l.X[i], l.Y[i], a.W, a.H, j, l.X[j], l.Y[j], b.W, b.H)
			}
		}
	}
	inside := func(i int, x, y0, y1 int) bool { // the open rectangle of box i meets the vertical x, y0..y1
		return x > l.X[i] && x < l.X[i]+boxes[i].W && y0 < l.Y[i]+boxes[i].H && y1 > l.Y[i]
	}
	for e, p := range l.Paths {
		for k := 0; k+1 < len(p); k++ {
			a, c := p[k], p[k+1]
			for i := range boxes {
				if k%2 == 0 {
					if a.X != c.X {
						t.Fatalf("edge %d: segment %d is straight but not vertical: %v", e, k, p)
					}
					if inside(i, a.X, a.Y, c.Y) {
						t.Errorf("edge %d runs through box %d: %v", e, i, p)
					}
				} else if a.Y < l.Y[i]+boxes[i].H && c.Y > l.Y[i] {
					t.Errorf("edge %d curves through box %d's rows (%d..%d): %v", e, i, a.Y, c.Y, p)
				}
			}
		}
	}
}
