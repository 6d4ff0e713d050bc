package cli

import (
	"fmt"
	"strings"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/render"
)

// The pull-request comment (diff --format markdown) draws, for each changed
// node, the tasks that changed in each of its graphs and their neighbours as
// a small Mermaid flowchart (GitHub and GitLab draw them), bounded in size.

const (
	// mermaidMaxTasks bounds the boxes of one diagram: the changed tasks
	// first, then their neighbours, each in the graph's order.
	mermaidMaxTasks = 25
	// mermaidMaxDiagrams bounds the diagrams of one comment.
	mermaidMaxDiagrams = 10
)

// nodeDiagram is one node's graph's diagram.
type nodeDiagram struct {
	cluster, node, graph string
	text                 string // the mermaid source, without the fence
}

// mermaidDiagrams draws the changed tasks of the updated nodes of cs, read
// from the node files of both sides, and how many diagrams were left out.
func mermaidDiagrams(cs *diff.ChangeSet, base, head *diff.Side) ([]nodeDiagram, int) {
	var out []nodeDiagram
	omitted := 0
	for _, cc := range cs.Clusters {
		for _, nc := range cc.Nodes {
			if nc.Pseudo || nc.Action != diff.Update {
				continue // a new or removed node: every task is new or gone
			}
			for _, gc := range nc.Graphs {
				if len(gc.Added)+len(gc.Removed)+len(gc.Changed) == 0 {
					continue
				}
				if len(out) == mermaidMaxDiagrams {
					omitted++
					continue
				}
				name := render.NodeAddress(cc.Name, nc.Node, gc.Graph).String()
				text := mermaidGraph(nc.Node, gc, nodeFile(base, name), nodeFile(head, name))
				out = append(out, nodeDiagram{cc.Name, nc.Node, gc.Graph, text})
			}
		}
	}
	return out, omitted
}

// nodeFile reads a node file of side (nil when it is not there or does not
// read: the diagram then shows the changed tasks alone).
func nodeFile(side *diff.Side, name string) *render.NodeFile {
	data, ok, err := side.Kept(name)
	if !ok || err != nil {
		return nil
	}
	if nf, ok := render.ScanNodeFile(data); ok {
		return nf
	}
	nf, err := render.ParseNodeFile(data)
	if err != nil {
		return nil
	}
	return nf
}

// mermaidGraph is the flowchart of gc: its added, removed and changed tasks,
// and the tasks they require or that require them (on either side), with
// the requirements between them.
func mermaidGraph(node string, gc *diff.GraphChange, base, head *render.NodeFile) string {
	g := newTaskGraph(gc)
	g.edges = requirementEdges(node, head, base)
	g.addNeighbours()
	return g.flowchart()
}

// taskEdge is a requirement: task from before task to.
type taskEdge struct{ from, to string }

// taskGraph is what a node's flowchart draws: each task's kind (added,
// removed, changed or neighbour), the tasks in the order drawn (the changed
// ones first), and the requirements.
type taskGraph struct {
	kind    map[string]string
	order   []string
	changed int // the changed tasks, first in order
	edges   []taskEdge
}

// newTaskGraph is the graph of gc's changed tasks.
func newTaskGraph(gc *diff.GraphChange) *taskGraph {
	g := &taskGraph{kind: map[string]string{}}
	for _, id := range gc.Added {
		g.mark(id, "added")
	}
	for _, id := range gc.Removed {
		g.mark(id, "removed")
	}
	for _, tc := range gc.Changed {
		g.mark(tc.ID, "changed")
	}
	g.changed = len(g.order)
	return g
}

// mark gives task id its kind, unless it has one.
func (g *taskGraph) mark(id, k string) {
	if _, ok := g.kind[id]; !ok {
		g.kind[id] = k
		g.order = append(g.order, id)
	}
}

// requirementEdges are the requirements of the node files (head's first),
// once each; a task of another node is named task@node.
func requirementEdges(node string, files ...*render.NodeFile) []taskEdge {
	key := func(r render.Requirement) string {
		if r.Node == "" || r.Node == node {
			return r.Task
		}
		return r.Task + "@" + r.Node
	}
	var edges []taskEdge
	seen := map[taskEdge]bool{}
	for _, nf := range files {
		if nf == nil {
			continue
		}
		for _, t := range nf.Tasks {
			for _, r := range t.Requires {
				e := taskEdge{key(r), t.ID}
				if !seen[e] {
					seen[e] = true
					edges = append(edges, e)
				}
			}
		}
	}
	return edges
}

// addNeighbours marks the tasks a changed task requires, or that require
// it, as neighbours.
func (g *taskGraph) addNeighbours() {
	for _, e := range g.edges {
		_, from := g.kind[e.from]
		_, to := g.kind[e.to]
		if from && g.kind[e.from] != "neighbour" && !to {
			g.mark(e.to, "neighbour")
		}
		if to && g.kind[e.to] != "neighbour" && !from {
			g.mark(e.from, "neighbour")
		}
	}
}

// flowchart draws the graph in Mermaid: at most mermaidMaxTasks tasks (a
// note says how many more there are), the requirements between them but
// those between two neighbours, and the classes of the kinds.
func (g *taskGraph) flowchart() string {
	drawn := g.order
	if len(drawn) > mermaidMaxTasks {
		drawn = drawn[:mermaidMaxTasks]
	}
	ids := map[string]string{}
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	for i, id := range drawn {
		ids[id] = fmt.Sprintf("t%d", i)
		label := mermaidText(id)
		switch g.kind[id] {
		case "added":
			label = "+ " + label
		case "removed":
			label = "- " + label
		case "changed":
			label = "~ " + label
		}
		fmt.Fprintf(&b, "  t%d[\"%s\"]:::%s\n", i, label, g.kind[id])
	}
	for _, e := range g.edges {
		f, okf := ids[e.from]
		t, okt := ids[e.to]
		if okf && okt && (g.kind[e.from] != "neighbour" || g.kind[e.to] != "neighbour") {
			fmt.Fprintf(&b, "  %s --> %s\n", f, t)
		}
	}
	if left := len(g.order) - len(drawn); left > 0 {
		what := "neighbours"
		if g.changed > mermaidMaxTasks {
			what = "tasks"
		}
		fmt.Fprintf(&b, "  more[\"%d more %s not drawn\"]:::neighbour\n", left, what)
	}
	b.WriteString("  classDef added fill:#d8f0d8,stroke:#070\n")
	b.WriteString("  classDef removed fill:#f6d0d0,stroke:#b00,stroke-dasharray:4 3\n")
	b.WriteString("  classDef changed fill:#fff2c0,stroke:#a60\n")
	b.WriteString("  classDef neighbour fill:#fff,stroke:#999\n")
	return b.String()
}

// mermaidText escapes repository text for a quoted Mermaid label: every
// character but letters, digits and "._-@/:" becomes an entity code
// (#35; for "#"), so that nothing in it ends the label, opens a link or
// markup, or is read as Mermaid syntax.
func mermaidText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("._-@/:", r):
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "#%d;", r)
		}
	}
	return b.String()
}

// markdownDiagrams is the comment's block of diagrams ("" when none).
func markdownDiagrams(ds []nodeDiagram, omitted int) string {
	if len(ds) == 0 {
		return ""
	}
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintf(&b, "%s %s, graph %s:\n\n```mermaid\n%s```\n\n", mdCode(d.cluster), mdCode(d.node), mdCode(d.graph), d.text)
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "%s not drawn (at most %d are).\n\n", plural(omitted, "more diagram"), mermaidMaxDiagrams)
	}
	summary := fmt.Sprintf("Changed tasks of %s (Mermaid)", plural(len(ds), "node graph"))
	return details(summary, strings.TrimRight(b.String(), "\n"))
}
