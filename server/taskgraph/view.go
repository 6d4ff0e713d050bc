// Package taskgraph draws a node's task graph (its expanded view: the node's
// tasks and what each requires, on this node and on others) as a readable SVG
// picture, server-side and without script: the tasks layered by dependency
// depth within bands, one for each stage of the deployment (pre_deployment,
// deploy, post_deployment) the tasks come after; the requirements routed as
// curves through the gaps between the layers, never across a box; the order
// within each layer chosen to reduce the crossings; the other nodes' tasks
// that a task waits for as small badges on it, not as boxes. A filter draws
// one task's requirements and dependents (Options.Focus), or what the failed
// tasks blocked (Options.Failed).
//
// The layout (layout.go, layout_place.go) is pure: boxes and edges in,
// coordinates out. The selection (view.go) picks what is drawn, within
// bounds: at most MaxBoxes boxes, MaxBadges badges a box and MaxEdges lines.
package taskgraph

import (
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/base/safetext"
)

// Graph is what the picture needs of a node's expanded view.
type Graph struct {
	Node  string `yaml:"node"`
	Tasks []Task `yaml:"tasks"`
}

// Task is a task of the node, with its requirements.
type Task struct {
	ID       string `yaml:"id"`
	Type     string `yaml:"type"`
	Requires []Ref  `yaml:"requires"`
}

// Ref is a requirement: a task on a node ("" or the graph's node: its own).
type Ref struct {
	Node string `yaml:"node"`
	Task string `yaml:"task"`
}

// Read decodes an expanded view.
func Read(data []byte) (*Graph, error) {
	var g Graph
	if err := yaml.Unmarshal(data, &g); err != nil {
		return nil, fmt.Errorf("reading the graph: %w", err)
	}
	return &g, nil
}

// Options say what to draw.
type Options struct {
	// Node is the node whose graph it is; a requirement on another node is
	// a badge, or on StageNode a stage.
	Node string
	// Status colours the tasks, by id (a report's or a run's statuses).
	Status map[string]string
	// Focus, when set, draws only that task, what it requires and what
	// requires it, each transitively.
	Focus string
	// Failed draws only the failed tasks (by Status) and what they blocked:
	// the tasks that require them, transitively.
	Failed bool
	// Link, when set, is the address a task's box links to ("": none).
	Link func(task string) string
}

// The bounds of a picture.
const (
	// MaxBoxes bounds the boxes drawn (a Fuel controller's default graph has
	// about 150 tasks); beyond, the first tasks in the graph's order are
	// drawn and the picture says how many are left out.
	MaxBoxes = 300
	// MaxBadges bounds the badges of a box; one more says how many other
	// tasks it waits for.
	MaxBadges = 3
	// MaxEdges bounds the requirements drawn (a line each).
	MaxEdges = 3000
	// maxLabel bounds a box's label and a badge's, in characters.
	maxLabel = 40
	// maxListed bounds the names a tooltip lists.
	maxListed = 10
)

// StageNode is the node whose tasks are the deployment's stages.
const StageNode = "sync"

// fuelStages are Fuel's stages in their order; other tasks of StageNode
// come after them, in the order they are first required.
var fuelStages = []string{"pre_deployment_start", "pre_deployment_end", "deploy_start", "deploy_end", "post_deployment_start", "post_deployment_end"}

// view is what is drawn of a graph.
type view struct {
	boxes []drawnBox
	edges []Edge
	bands []string // each band's name: the stage its tasks come after ("" for none)
	notes []string
	heads bool // whether the bands have heads with their names
}

// drawnBox is a task's box.
type drawnBox struct {
	id, kind, status, title string
	badges                  []badge
	band                    int
	focus                   bool
}

// badge is another node's task that a box waits for (or several tasks'
// count, the last badge when there are more than MaxBadges).
type badge struct{ text, title string }

// selectView picks what is drawn of g: the tasks the filter keeps, at most
// MaxBoxes, their badges and bands, and the requirements between them that
// no other path implies (a → b → c implies a → c), at most MaxEdges.
func selectView(g *Graph, o Options) *view {
	idx := map[string]int{}
	for i, t := range g.Tasks {
		if _, dup := idx[t.ID]; !dup {
			idx[t.ID] = i
		}
	}
	own := func(r Ref) bool { return r.Node == "" || r.Node == o.Node }
	preds := make([][]int, len(g.Tasks))
	for i, t := range g.Tasks {
		for _, r := range t.Requires {
			if j, ok := idx[r.Task]; ok && own(r) && j != i && !slices.Contains(preds[i], j) {
				preds[i] = append(preds[i], j)
			}
		}
	}
	v := &view{}
	keep := v.filter(g, o, idx, preds)
	var chosen []int
	for i, t := range g.Tasks {
		if keep[i] && idx[t.ID] == i {
			chosen = append(chosen, i)
		}
	}
	if len(chosen) > MaxBoxes {
		v.notes = append(v.notes, fmt.Sprintf("%d more tasks not drawn (at most %d boxes are)", len(chosen)-MaxBoxes, MaxBoxes))
		chosen = chosen[:MaxBoxes]
	}
	kept := map[int]int{} // task → box
	for _, i := range chosen {
		t := g.Tasks[i]
		kept[i] = len(v.boxes)
		v.boxes = append(v.boxes, drawnBox{id: t.ID, kind: t.Type, status: o.Status[t.ID], focus: t.ID == o.Focus})
	}
	v.addBands(g, o, kept, preds)
	v.addBadges(g, o, kept, preds)
	v.addEdges(g, kept, preds)
	return v
}

// filter says which tasks the options keep, with a note of the filter.
func (v *view) filter(g *Graph, o Options, idx map[string]int, preds [][]int) map[int]bool {
	keep := map[int]bool{}
	succs := make([][]int, len(g.Tasks))
	for i, ps := range preds {
		for _, p := range ps {
			succs[p] = append(succs[p], i)
		}
	}
	switch {
	case o.Focus != "":
		f, ok := idx[o.Focus]
		if !ok {
			v.notes = append(v.notes, fmt.Sprintf("There is no task %s in this graph.", o.Focus))
			return keep
		}
		up, down := closure(f, preds), closure(f, succs)
		for i := range up {
			keep[i] = true
		}
		for i := range down {
			keep[i] = true
		}
		v.notes = append(v.notes, fmt.Sprintf("%s: the %d tasks it requires and the %d that require it, each directly or through others.", o.Focus, len(up)-1, len(down)-1))
	case o.Failed:
		var failed []string
		for i, t := range g.Tasks {
			if o.Status[t.ID] == "failed" && idx[t.ID] == i {
				failed = append(failed, t.ID)
				for j := range closure(i, succs) {
					keep[j] = true
				}
			}
		}
		if len(failed) == 0 {
			v.notes = append(v.notes, "No task of this graph failed.")
			return keep
		}
		v.notes = append(v.notes, fmt.Sprintf("The failed tasks (%s) and the %d tasks they blocked.", listed(failed), len(keep)-len(failed)))
	default:
		for i := range g.Tasks {
			keep[i] = true
		}
	}
	return keep
}

// closure is the tasks reachable from i through next, i included.
func closure(i int, next [][]int) map[int]bool {
	seen := map[int]bool{i: true}
	stack := []int{i}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, m := range next[n] {
			if !seen[m] {
				seen[m] = true
				stack = append(stack, m)
			}
		}
	}
	return seen
}

// listed joins at most maxListed names, with "…" when there are more.
func listed(names []string) string {
	s := strings.Join(names[:min(len(names), maxListed)], ", ")
	if len(names) > maxListed {
		s += ", …"
	}
	return s
}

// addBands puts each box in the band of the latest stage it comes after,
// directly or through the tasks it requires (band 0: none).
func (v *view) addBands(g *Graph, o Options, kept map[int]int, preds [][]int) {
	rank := map[string]int{}
	for i, s := range fuelStages {
		rank[s] = i + 1
	}
	for _, t := range g.Tasks {
		for _, r := range t.Requires {
			if r.Node == StageNode && r.Node != o.Node && rank[r.Task] == 0 {
				rank[r.Task] = len(rank) + 1
			}
		}
	}
	names := make([]string, len(rank)+1)
	for s, r := range rank {
		names[r] = s
	}
	after := make([]int, len(g.Tasks)) // the rank of the latest stage
	done := make([]bool, len(g.Tasks))
	var visit func(i int) int
	visit = func(i int) int { // the graph is topologically ordered, but need not be
		if done[i] {
			return after[i]
		}
		done[i] = true
		for _, r := range g.Tasks[i].Requires {
			if r.Node == StageNode && r.Node != o.Node {
				after[i] = max(after[i], rank[r.Task])
			}
		}
		for _, p := range preds[i] {
			after[i] = max(after[i], visit(p))
		}
		return after[i]
	}
	used := map[int]bool{}
	for i := range kept {
		used[visit(i)] = true
	}
	bandOf := map[int]int{}
	for r := range names {
		if used[r] {
			bandOf[r] = len(v.bands)
			v.bands = append(v.bands, names[r])
		}
	}
	for i, b := range kept {
		v.boxes[b].band = bandOf[after[i]]
	}
}

// addBadges gives each box a badge for each other node's task it waits
// for (the nodes of one task together), at most MaxBadges and one that
// counts the rest, and its tooltip.
func (v *view) addBadges(g *Graph, o Options, kept map[int]int, preds [][]int) {
	for i, b := range kept {
		t := g.Tasks[i]
		var order []string
		nodes := map[string][]string{}
		var stages []string
		for _, r := range t.Requires {
			switch {
			case r.Node == "" || r.Node == o.Node:
			case r.Node == StageNode:
				stages = append(stages, r.Task)
			default:
				if _, ok := nodes[r.Task]; !ok {
					order = append(order, r.Task)
				}
				if !slices.Contains(nodes[r.Task], r.Node) {
					nodes[r.Task] = append(nodes[r.Task], r.Node)
				}
			}
		}
		box := &v.boxes[b]
		var waits []string
		for k, task := range order {
			ns := nodes[task]
			text, title := task+"@"+ns[0], "waits for "+task+" on "+ns[0]
			if len(ns) > 1 {
				text, title = task+" ×"+safetext.Thousands(len(ns)), "waits for "+task+" on "+safetext.Thousands(len(ns))+" nodes: "+listed(ns)
			}
			waits = append(waits, title)
			if k < MaxBadges || len(order) == MaxBadges+1 {
				box.badges = append(box.badges, badge{safetext.Cut(text, maxLabel), title})
			}
		}
		if rest := len(order) - len(box.badges); rest > 0 {
			box.badges = append(box.badges, badge{fmt.Sprintf("+%d", rest), "waits for " + listed(order[len(box.badges):])})
		}
		box.title = tooltip(t, box.status, g, preds[i], stages, waits)
	}
}

// tooltip is a box's title: the task, its type and status, and what it
// requires (each list bounded).
func tooltip(t Task, status string, g *Graph, preds []int, stages, waits []string) string {
	s := t.ID + " (" + t.Type + ")"
	if status != "" {
		s += ": " + status
	}
	if len(preds) > 0 {
		names := make([]string, len(preds))
		for k, p := range preds {
			names[k] = g.Tasks[p].ID
		}
		s += "\nrequires " + listed(names)
	}
	if len(stages) > 0 {
		s += "\nafter stage " + listed(stages)
	}
	for _, w := range waits[:min(len(waits), maxListed)] {
		s += "\n" + w
	}
	if len(waits) > maxListed {
		s += fmt.Sprintf("\nand waits for %d more tasks of other nodes", len(waits)-maxListed)
	}
	return s
}

// addEdges adds the requirements between drawn boxes that no other path
// implies, at most MaxEdges.
func (v *view) addEdges(g *Graph, kept map[int]int, preds [][]int) {
	n := len(v.boxes)
	bp := make([][]int, n)
	for i, b := range kept {
		for _, p := range preds[i] {
			if pb, ok := kept[p]; ok {
				bp[b] = append(bp[b], pb)
			}
		}
		slices.Sort(bp[b])
	}
	succs := make([][]int, n)
	for b, ps := range bp {
		for _, p := range ps {
			succs[p] = append(succs[p], b)
		}
	}
	words := (n + 63) / 64
	anc := make([][]uint64, n) // each box's requirements, transitively
	for _, b := range topoOrder(n, bp, succs) {
		anc[b] = make([]uint64, words)
		for _, p := range bp[b] {
			for w := range words {
				anc[b][w] |= anc[p][w]
			}
			anc[b][p/64] |= 1 << (p % 64)
		}
	}
	var drawn []Edge
	for b := range n {
		for _, p := range bp[b] {
			if slices.ContainsFunc(bp[b], func(q int) bool { return q != p && anc[q] != nil && anc[q][p/64]&(1<<(p%64)) != 0 }) {
				continue
			}
			drawn = append(drawn, Edge{From: p, To: b})
		}
	}
	if len(drawn) > MaxEdges {
		v.notes = append(v.notes, fmt.Sprintf("%d more requirements not drawn (at most %d lines are)", len(drawn)-MaxEdges, MaxEdges))
		drawn = drawn[:MaxEdges]
	}
	v.edges = drawn
}
