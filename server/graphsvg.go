package server

import (
	"fmt"
	"html"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// The node page draws the node's own task graph (its expanded view: the
// tasks of this node, and the other nodes' tasks they require) as SVG, laid
// out here in Go: no Graphviz on the server, no script in the browser, the
// same picture for the same graph. Bounded: at most maxDrawnTasks tasks.

const (
	// maxDrawnTasks bounds the tasks drawn (a Fuel controller's default
	// graph has about 150); beyond, the first ones in the graph's order are
	// drawn and the picture says how many are left out.
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
	status           string
	layer, x, y, w   int
}

// graphSVG draws the expanded view data of node (its tasks coloured by
// status, task id → status, from the node's last report when it ran this
// graph) as an SVG element. Every name is escaped.
func graphSVG(data []byte, node string, status map[string]string) (string, error) {
	var g taskGraph
	if err := yaml.Unmarshal(data, &g); err != nil {
		return "", fmt.Errorf("reading the graph: %w", err)
	}
	omitted := 0
	if len(g.Tasks) > maxDrawnTasks {
		omitted = len(g.Tasks) - maxDrawnTasks
		g.Tasks = g.Tasks[:maxDrawnTasks]
	}
	nodes := map[string]*drawnNode{}
	var order []string
	add := func(key, label, kind string) *drawnNode {
		if n := nodes[key]; n != nil {
			return n
		}
		n := &drawnNode{key: key, label: label, kind: kind, status: status[key]}
		nodes[key] = n
		order = append(order, key)
		return n
	}
	for _, t := range g.Tasks {
		add(t.ID, t.ID, t.Type)
	}
	type edge struct{ from, to string }
	var edges []edge
	preds := map[string][]string{}
	for _, t := range g.Tasks {
		for _, r := range t.Requires {
			key := r.Task
			if r.Node != "" && r.Node != node {
				key = r.Task + "@" + r.Node
				add(key, key, "external")
			} else if nodes[key] == nil {
				continue // a task of this node left out by the bound
			}
			edges = append(edges, edge{key, t.ID})
			preds[t.ID] = append(preds[t.ID], key)
		}
	}
	// Layers: the longest path from a task without requirements (a cycle,
	// which the loader refuses, would stop at the bound of the passes).
	for pass := 0; pass < len(order)+1; pass++ {
		changed := false
		for _, k := range order {
			n := nodes[k]
			for _, p := range preds[k] {
				if l := nodes[p].layer + 1; l > n.layer {
					n.layer, changed = l, true
				}
			}
		}
		if !changed {
			break
		}
	}
	var layers [][]*drawnNode
	for _, k := range order {
		n := nodes[k]
		for len(layers) <= n.layer {
			layers = append(layers, nil)
		}
		layers[n.layer] = append(layers[n.layer], n)
	}
	// Within a layer, by the mean position of the requirements (one pass),
	// then by name: fewer crossings, and the same picture every time.
	const boxH, gapY, gapX, charW, pad = 24, 40, 16, 7, 10
	pos := map[string]float64{}
	width := 0
	for li, layer := range layers {
		mean := func(n *drawnNode) float64 {
			ps := preds[n.key]
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
		width = max(width, x)
	}
	height := pad + len(layers)*(boxH+gapY)
	if omitted > 0 {
		height += 20
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="taskgraph" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="task graph of node %s">`,
		max(width, 200), height, max(width, 200), height, html.EscapeString(node))
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="6" markerHeight="6" orient="auto"><path d="M0,0L10,5L0,10z" fill="#888"/></marker></defs>`)
	for _, e := range edges {
		f, t := nodes[e.from], nodes[e.to]
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888" marker-end="url(#arrow)"/>`, f.x+f.w/2, f.y+boxH, t.x+t.w/2, t.y)
	}
	for _, k := range order {
		n := nodes[k]
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
		title := n.key
		if n.status != "" {
			title += ": " + n.status
		}
		fmt.Fprintf(&b, `<g class="task"><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" rx="4" fill="%s" stroke="#555"%s/><text x="%d" y="%d" font-family="monospace" font-size="12">%s</text></g>`,
			html.EscapeString(title), n.x, n.y, n.w, boxH, fill, dash, n.x+pad, n.y+16, html.EscapeString(n.label))
	}
	if omitted > 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-family="sans-serif" font-size="12">%d more tasks not drawn (at most %d are)</text>`, pad, height-8, omitted, maxDrawnTasks)
	}
	b.WriteString(`</svg>`)
	return b.String(), nil
}

// shorten cuts s to n characters, ending with "…" when cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
