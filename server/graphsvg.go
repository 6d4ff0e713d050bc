package server

import (
	"fmt"
	"html"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The node page draws the node's own task graph (its expanded view: the
// tasks of this node, and the other nodes' tasks they require) as SVG, laid
// out here in Go: no Graphviz on the server, no script in the browser, the
// same picture for the same graph. Bounded: at most maxDrawnTasks boxes,
// the other nodes' tasks among them, grouped by task when waited for on
// many nodes, and maxDrawnEdges lines.

const (
	// maxDrawnTasks bounds the boxes drawn, the node's tasks and the other
	// nodes' tasks they wait for together (a Fuel controller's default
	// graph has about 150 tasks); beyond, the first tasks in the graph's
	// order are drawn and the picture says how many are left out.
	maxDrawnTasks = 300
	// maxLabel bounds a box's label, in characters.
	maxLabel = 40
)

// taskGraph is what the picture needs of an expanded view.
type taskGraph struct {
	Tasks []struct {
		ID       string `yaml:"id"`
		Type     string `yaml:"type"`
		Requires []struct {
			Node string `yaml:"node"`
			Task string `yaml:"task"`
		} `yaml:"requires"`
	} `yaml:"tasks"`
}

// drawnNode is a box of the picture.
type drawnNode struct {
	key, label, kind string // kind: the task's type, or "external"
	title            string // the tooltip (key when "")
	status           string
	layer, x, y, w   int
}

// groupAbove is how many other nodes' copies of one task are drawn as boxes
// of their own; a task waited for on more nodes is one box ("nova-compute on
// 2,000 nodes"), so that one controller task waiting for every compute draws
// a few boxes, not thousands.
const groupAbove = 3

// maxDrawnEdges bounds the requirements drawn (a line each).
const maxDrawnEdges = 3000

// drawnGraph is what is drawn of a graph: the boxes in order, the edges
// (from the box required to the box that requires it), and what is left out.
type drawnGraph struct {
	nodes map[string]*drawnNode
	order []string
	edges [][2]string
	preds map[string][]string
	// omittedOwn, omittedOthers and omittedEdges count the node's tasks,
	// the other nodes' boxes and the requirements left out by the bounds.
	omittedOwn, omittedOthers, omittedEdges int
}

// graphSVG draws the expanded view data of node (its tasks coloured by
// status, task id → status, from the node's last report when it ran this
// graph) as an SVG element. Every name is escaped. At most maxDrawnTasks
// boxes are drawn, the other nodes' tasks counted; the node's tasks in the
// graph's order, each with the boxes of what it waits for, until the next
// would go over.
func graphSVG(data []byte, node string, status map[string]string) (string, error) {
	var g taskGraph
	if err := yaml.Unmarshal(data, &g); err != nil {
		return "", fmt.Errorf("reading the graph: %w", err)
	}
	d := selectBoxes(&g, node, status)
	layers := d.layers()
	return d.svg(node, layers), nil
}

// external is the box of a task of another node that a task of node waits
// for: its own (task@node) or its group's when the task is waited for on
// more than groupAbove nodes.
func external(task, other string, groups map[string][]string) (key, label, title string) {
	if nodes := groups[task]; len(nodes) > groupAbove {
		n := thousands(len(nodes))
		shown := nodes[:min(len(nodes), 10)]
		title = "waits for " + task + " on " + n + " nodes: " + strings.Join(shown, ", ")
		if len(nodes) > len(shown) {
			title += ", …"
		}
		return task + "@*", task + " on " + n + " nodes", title
	}
	key = task + "@" + other
	return key, key, ""
}

// selectBoxes picks the boxes and edges drawn of g, within the bounds.
func selectBoxes(g *taskGraph, node string, status map[string]string) *drawnGraph {
	groups := map[string][]string{} // another node's task → the nodes it is waited for on
	seen := map[[2]string]bool{}
	for _, t := range g.Tasks {
		for _, r := range t.Requires {
			if r.Node != "" && r.Node != node && !seen[[2]string{r.Task, r.Node}] {
				seen[[2]string{r.Task, r.Node}] = true
				groups[r.Task] = append(groups[r.Task], r.Node)
			}
		}
	}
	d := &drawnGraph{nodes: map[string]*drawnNode{}, preds: map[string][]string{}}
	add := func(key, label, kind, title string) {
		if d.nodes[key] == nil {
			d.nodes[key] = &drawnNode{key: key, label: label, kind: kind, title: title, status: status[key]}
			d.order = append(d.order, key)
		}
	}
	left := map[string]bool{} // the other nodes' boxes of the tasks left out
	for i, t := range g.Tasks {
		fresh := map[string]bool{t.ID: true}
		for _, r := range t.Requires {
			if r.Node != "" && r.Node != node {
				key, _, _ := external(r.Task, r.Node, groups)
				if d.nodes[key] == nil {
					fresh[key] = true
				}
			}
		}
		if len(d.order)+len(fresh) > maxDrawnTasks {
			d.omittedOwn = len(g.Tasks) - i
			for _, rest := range g.Tasks[i:] {
				for _, r := range rest.Requires {
					if r.Node != "" && r.Node != node {
						if key, _, _ := external(r.Task, r.Node, groups); d.nodes[key] == nil {
							left[key] = true
						}
					}
				}
			}
			break
		}
		add(t.ID, t.ID, t.Type, "")
		for _, r := range t.Requires {
			if r.Node != "" && r.Node != node {
				key, label, title := external(r.Task, r.Node, groups)
				add(key, label, "external", title)
			}
		}
	}
	d.omittedOthers = len(left)
	d.addEdges(g, node, groups)
	return d
}

// addEdges adds the requirements between drawn boxes, each once, at most
// maxDrawnEdges.
func (d *drawnGraph) addEdges(g *taskGraph, node string, groups map[string][]string) {
	drawn := map[[2]string]bool{}
	for _, t := range g.Tasks {
		if d.nodes[t.ID] == nil {
			break // the rest are left out too
		}
		for _, r := range t.Requires {
			key := r.Task
			if r.Node != "" && r.Node != node {
				key, _, _ = external(r.Task, r.Node, groups)
			} else if d.nodes[key] == nil {
				continue // a task of this node left out by the bound
			}
			e := [2]string{key, t.ID}
			if drawn[e] {
				continue
			}
			drawn[e] = true
			if len(d.edges) == maxDrawnEdges {
				d.omittedEdges++
				continue
			}
			d.edges = append(d.edges, e)
			d.preds[t.ID] = append(d.preds[t.ID], key)
		}
	}
}

// layers lays the boxes out: each box one layer below the deepest box it
// requires (a cycle, which the loader refuses, would stop at the bound of
// the passes); within a layer, by the mean position of the requirements (one
// pass), then by name: fewer crossings, and the same picture every time.
func (d *drawnGraph) layers() [][]*drawnNode {
	for pass := 0; pass < len(d.order)+1; pass++ {
		changed := false
		for _, k := range d.order {
			n := d.nodes[k]
			for _, p := range d.preds[k] {
				if l := d.nodes[p].layer + 1; l > n.layer {
					n.layer, changed = l, true
				}
			}
		}
		if !changed {
			break
		}
	}
	var layers [][]*drawnNode
	for _, k := range d.order {
		n := d.nodes[k]
		for len(layers) <= n.layer {
			layers = append(layers, nil)
		}
		layers[n.layer] = append(layers[n.layer], n)
	}
	pos := map[string]float64{}
	for li, layer := range layers {
		mean := func(n *drawnNode) float64 {
			ps := d.preds[n.key]
			if len(ps) == 0 {
				return 0
			}
			var s float64
			for _, p := range ps {
				s += pos[p]
			}
			return s / float64(len(ps))
		}
		slices.SortStableFunc(layer, func(a, b *drawnNode) int {
			if ma, mb := mean(a), mean(b); ma != mb {
				if ma < mb {
					return -1
				}
				return 1
			}
			return strings.Compare(a.key, b.key)
		})
		x := pad
		for i, n := range layer {
			n.label = shorten(n.label, maxLabel)
			n.w = utf8.RuneCountInString(n.label)*charW + 2*pad
			n.x, n.y = x, pad+li*(boxH+gapY)
			pos[n.key] = float64(i)
			x += n.w + gapX
		}
	}
	return layers
}

// The picture's measures, in pixels.
const boxH, gapY, gapX, charW, pad = 24, 40, 16, 7, 10

// svg writes the laid out boxes and edges as an SVG element, with a note of
// what the bounds left out.
func (d *drawnGraph) svg(node string, layers [][]*drawnNode) string {
	width := 0
	for _, layer := range layers {
		if len(layer) > 0 {
			last := layer[len(layer)-1]
			width = max(width, last.x+last.w+gapX)
		}
	}
	note := d.note()
	height := pad + len(layers)*(boxH+gapY)
	if note != "" {
		height += 20
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="taskgraph" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="task graph of node %s">`,
		max(width, 200), height, max(width, 200), height, html.EscapeString(node))
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#888"/></marker></defs>`)
	for _, e := range d.edges {
		f, t := d.nodes[e[0]], d.nodes[e[1]]
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888" marker-end="url(#arrow)"/>`, f.x+f.w/2, f.y+boxH, t.x+t.w/2, t.y)
	}
	for _, k := range d.order {
		n := d.nodes[k]
		fill, dash := "#fff", ""
		switch n.status {
		case "success":
			fill = "#d8f0d8"
		case "failed":
			fill = "#f6d0d0"
		case "running":
			fill = "#fff2c0"
		case "skipped":
			fill = "#eee"
		}
		if n.kind == "external" {
			dash = ` stroke-dasharray="4 3"`
		}
		title := n.title
		if title == "" {
			title = n.key
		}
		if n.status != "" {
			title += ": " + n.status
		}
		fmt.Fprintf(&b, `<g class="task"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="%s" stroke="#555"%s/><text x="%d" y="%d" font-family="monospace" font-size="12">%s</text></g>`,
			html.EscapeString(title), n.x, n.y, n.w, boxH, fill, dash, n.x+pad, n.y+16, html.EscapeString(n.label))
	}
	if note != "" {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-family="sans-serif" font-size="12">%s</text>`, pad, height-8, html.EscapeString(note))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// note says what the bounds left out ("" when nothing).
func (d *drawnGraph) note() string {
	var parts []string
	switch {
	case d.omittedOthers > 0:
		parts = append(parts, fmt.Sprintf("%d more tasks not drawn (%d of this node's, %d of other nodes'); at most %d boxes are",
			d.omittedOwn+d.omittedOthers, d.omittedOwn, d.omittedOthers, maxDrawnTasks))
	case d.omittedOwn > 0:
		parts = append(parts, fmt.Sprintf("%d more tasks not drawn (at most %d boxes are)", d.omittedOwn, maxDrawnTasks))
	}
	if d.omittedEdges > 0 {
		parts = append(parts, fmt.Sprintf("%d more requirements not drawn (at most %d lines are)", d.omittedEdges, maxDrawnEdges))
	}
	return strings.Join(parts, "; ")
}

// thousands writes n with a comma between thousands: 2,000.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// shorten cuts s to n characters, ending with "…" when cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
