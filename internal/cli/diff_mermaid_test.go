package cli

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/render"
)

// TestMermaidEscapesAndBounds: a task id cannot end its label or inject
// Mermaid (a click with a javascript: link) or HTML; a diagram has at most
// mermaidMaxTasks boxes and says how many it leaves out; a comment at most
// mermaidMaxDiagrams diagrams.
func TestMermaidEscapesAndBounds(t *testing.T) {
	hostile := `x"]; click t0 "javascript:alert(1)"; y["<img src=x>`
	head := &render.NodeFile{Tasks: []render.NodeFileTask{
		{ID: hostile, Requires: []render.Requirement{{Task: "deploy_start", Node: "sync"}}},
		{ID: "after", Requires: []render.Requirement{{Task: hostile, Node: "node-1"}}},
	}}
	got := mermaidGraph("node-1", &diff.GraphChange{Graph: "default", Added: []string{hostile}}, nil, head)
	label := regexp.MustCompile(`(?m)^  t0\["([^"]*)"\]:::added$`).FindStringSubmatch(got)
	if label == nil || !regexp.MustCompile(`^\+ [A-Za-z0-9._@/:-]*(#\d+;[A-Za-z0-9._@/:-]*)*$`).MatchString(label[1]) || strings.Count(got, "click") != 1 {
		t.Errorf("the hostile id is not escaped:\n%s", got)
	}
	for _, want := range []string{`t1["deploy_start@sync"]:::neighbour`, `t2["after"]:::neighbour`, "t1 --> t0", "t0 --> t2"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	if lines := strings.Count(got, "\n"); strings.Count(got, `["`) != 3 || lines != 10 {
		t.Errorf("%d lines:\n%s", lines, got)
	}

	gc := &diff.GraphChange{Graph: "default"}
	for i := range 40 {
		gc.Changed = append(gc.Changed, &diff.TaskChange{ID: fmt.Sprintf("task-%02d", i)})
	}
	got = mermaidGraph("node-1", gc, nil, nil)
	if n := strings.Count(got, ":::changed"); n != mermaidMaxTasks || !strings.Contains(got, `more["15 more tasks not drawn"]`) {
		t.Errorf("%d boxes of 40 changed tasks:\n%s", n, got)
	}

	cs := &diff.ChangeSet{Clusters: []*diff.ClusterChange{{Name: "prod"}}}
	for i := range mermaidMaxDiagrams + 3 {
		cs.Clusters[0].Nodes = append(cs.Clusters[0].Nodes, &diff.NodeChange{Node: fmt.Sprintf("node-%d", i), Action: diff.Update,
			Graphs: []*diff.GraphChange{{Graph: "default", Added: []string{"a"}}}})
	}
	side := &diff.Side{Digests: map[string]string{}}
	ds, omitted := mermaidDiagrams(cs, side, side)
	md := markdownDiagrams(ds, omitted)
	if len(ds) != mermaidMaxDiagrams || omitted != 3 || strings.Count(md, "```mermaid") != mermaidMaxDiagrams || !strings.Contains(md, "3 more diagrams not drawn (at most 10 are).") {
		t.Errorf("%d diagrams, %d omitted:\n%s", len(ds), omitted, md)
	}
}
