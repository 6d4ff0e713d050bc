package taskgraph

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// graphOf reads a graph written as lines "task: req req@node …".
func graphOf(t *testing.T, node string, lines ...string) *Graph {
	t.Helper()
	g := &Graph{Node: node}
	for _, l := range lines {
		id, reqs, _ := strings.Cut(l, ":")
		task := Task{ID: id, Type: "puppet"}
		for _, r := range strings.Fields(reqs) {
			name, on, _ := strings.Cut(r, "@")
			task.Requires = append(task.Requires, Ref{Node: on, Task: name})
		}
		g.Tasks = append(g.Tasks, task)
	}
	return g
}

func ids(v *view) []string {
	var s []string
	for _, b := range v.boxes {
		s = append(s, b.id)
	}
	return s
}

func edgesOf(v *view) []string {
	var s []string
	for _, e := range v.edges {
		s = append(s, v.boxes[e.From].id+"→"+v.boxes[e.To].id)
	}
	slices.Sort(s)
	return s
}

// TestSelect: the filters keep the right tasks (the focus: what it requires
// and what requires it, transitively; failed: the failed tasks and what they
// blocked), implied requirements are not drawn, other nodes' tasks are
// badges (one per task, its nodes together), and each task is in the band
// of the latest stage it comes after.
func TestSelect(t *testing.T) {
	g := graphOf(t, "node-1",
		"a: pre_deployment_start@sync",
		"b: a",
		"c: b a deploy_start@sync",
		"d: c rabbitmq@node-2 rabbitmq@node-3",
		"e: a",
		"f: e keystone@node-2",
		"g: d f post_deployment_start@sync",
	)
	status := map[string]string{"c": "failed", "d": "dep_failed", "e": "success"}
	for _, tc := range []struct {
		name         string
		o            Options
		boxes, edges string
		notes        string
	}{
		{"all", Options{}, "[a b c d e f g]", "[a→b a→e b→c c→d d→g e→f f→g]", "[]"},
		{"focus", Options{Focus: "c"}, "[a b c d g]", "[a→b b→c c→d d→g]", "[c: the 2 tasks it requires and the 2 that require it, each directly or through others.]"},
		{"focus on a source", Options{Focus: "a"}, "[a b c d e f g]", "[a→b a→e b→c c→d d→g e→f f→g]", "[a: the 0 tasks it requires and the 6 that require it, each directly or through others.]"},
		{"focus on no task", Options{Focus: "zz"}, "[]", "[]", "[There is no task zz in this graph.]"},
		{"failed", Options{Failed: true, Status: status}, "[c d g]", "[c→d d→g]", "[The failed tasks (c) and the 2 tasks they blocked.]"},
		{"nothing failed", Options{Failed: true}, "[]", "[]", "[No task of this graph failed.]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Node = "node-1"
			v := selectView(g, tc.o)
			if got := fmt.Sprint(ids(v)); got != tc.boxes {
				t.Errorf("boxes %s, want %s", got, tc.boxes)
			}
			if got := fmt.Sprint(edgesOf(v)); got != tc.edges {
				t.Errorf("edges %s, want %s", got, tc.edges)
			}
			if got := fmt.Sprint(v.notes); got != tc.notes {
				t.Errorf("notes %s, want %s", got, tc.notes)
			}
		})
	}
	v := selectView(g, Options{Node: "node-1"})
	bands := map[string]string{}
	badges := map[string]string{}
	for _, b := range v.boxes {
		bands[b.id] = v.bands[b.band]
		for _, bg := range b.badges {
			badges[b.id] += bg.text + " (" + bg.title + ");"
		}
	}
	wantBands := map[string]string{"a": "pre_deployment_start", "b": "pre_deployment_start", "c": "deploy_start", "d": "deploy_start",
		"e": "pre_deployment_start", "f": "pre_deployment_start", "g": "post_deployment_start"}
	if fmt.Sprint(bands) != fmt.Sprint(wantBands) {
		t.Errorf("bands %v, want %v", bands, wantBands)
	}
	wantBadges := map[string]string{"d": "rabbitmq ×2 (waits for rabbitmq on 2 nodes: node-2, node-3);", "f": "keystone@node-2 (waits for keystone on node-2);"}
	if fmt.Sprint(badges) != fmt.Sprint(wantBadges) {
		t.Errorf("badges %v, want %v", badges, wantBadges)
	}
}

// TestBadgesBounded: a task waiting for one task on 2,000 nodes has one
// badge; one waiting for many other nodes' tasks has MaxBadges and one
// counting the rest.
func TestBadgesBounded(t *testing.T) {
	var many, nodes strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&nodes, " nova-compute@node-%d", 100+i)
	}
	for i := range 7 {
		fmt.Fprintf(&many, " t%d@node-2", i)
	}
	v := selectView(graphOf(t, "node-1", "controller:"+nodes.String(), "other:"+many.String()), Options{Node: "node-1"})
	got := fmt.Sprint(v.boxes[0].badges, v.boxes[1].badges)
	want := "[{nova-compute ×2,000 waits for nova-compute on 2,000 nodes: node-100, node-101, node-102, node-103, node-104, node-105, node-106, node-107, node-108, node-109, …}]" +
		" [{t0@node-2 waits for t0 on node-2} {t1@node-2 waits for t1 on node-2} {t2@node-2 waits for t2 on node-2} {+4 waits for t3, t4, t5, t6}]"
	if got != want {
		t.Errorf("badges\n%s\nwant\n%s", got, want)
	}
	if p := Draw(graphOf(t, "node-1", "controller:"+nodes.String()), Options{Node: "node-1"}); len(p.SVG) > 5000 || p.Boxes != 1 {
		t.Errorf("one task waiting for 2,000 nodes: %d boxes, %d bytes", p.Boxes, len(p.SVG))
	}
}

// TestDrawBounded: at most MaxBoxes boxes, the first in the graph's order,
// and a note of the rest.
func TestDrawBounded(t *testing.T) {
	var lines []string
	for i := range MaxBoxes + 5 {
		lines = append(lines, "t-"+strconv.Itoa(i)+":")
	}
	p := Draw(graphOf(t, "node-1", lines...), Options{Node: "node-1"})
	if n := strings.Count(p.SVG, `<g class="task">`); n != MaxBoxes || p.Boxes != MaxBoxes || !strings.Contains(p.SVG, "5 more tasks not drawn (at most 300 boxes are)") {
		t.Errorf("%d boxes for %d tasks; the note: %v", n, MaxBoxes+5, strings.Contains(p.SVG, "more tasks not drawn"))
	}
	if p.Width > MaxWidth {
		t.Errorf("%d px wide", p.Width)
	}
}

// TestDrawEscapes: every name in the picture is escaped, the links too;
// statuses colour the boxes, the focused box is marked.
func TestDrawEscapes(t *testing.T) {
	g := graphOf(t, `node-1"><x`, "<script>alert(1)</script>: x&y@sync", "b&c: <script>alert(1)</script> k\"@node-2")
	p := Draw(g, Options{Node: `node-1"><x`, Status: map[string]string{"b&c": "failed"}, Focus: "b&c",
		Link: func(task string) string { return "?focus=" + task + "&x=<" }})
	for _, bad := range []string{"<script", `"><x`, "b&c", `k"@`, "&x=<"} {
		if strings.Contains(p.SVG, bad) {
			t.Errorf("%q is not escaped:\n%s", bad, p.SVG)
		}
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "b&amp;c (puppet): failed", `fill="#f6c8c8"`, `stroke="#0550ae"`,
		"k&#34;@node-2", "after stage x&amp;y", `<a href="?focus=b&amp;c&amp;x=&lt;">`, `<path class="edge"`} {
		if !strings.Contains(p.SVG, want) {
			t.Errorf("the picture lacks %q:\n%s", want, p.SVG)
		}
	}
}

// TestMitakaController: the 146 tasks of a mitaka controller fit MaxWidth,
// every task drawn once, with the stages as bands; the figures are logged.
// (It drew 8,903 × 2,698 px of straight lines through boxes before.)
func TestMitakaController(t *testing.T) {
	data, err := os.ReadFile("testdata/mitaka-controller.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Read(data)
	if err != nil {
		t.Fatal(err)
	}
	p := Draw(g, Options{Node: "node-1"})
	t.Logf("%d boxes: %d × %d px, %d bytes", p.Boxes, p.Width, p.Height, len(p.SVG))
	if p.Boxes != 146 || p.Width > MaxWidth {
		t.Errorf("%d boxes, %d px wide; want 146, at most %d", p.Boxes, p.Width, MaxWidth)
	}
	var bands []string
	for _, m := range regexp.MustCompile(`<text class="band"[^>]*>([^<]*)<`).FindAllStringSubmatch(p.SVG, -1) {
		bands = append(bands, m[1])
	}
	if fmt.Sprint(bands) != "[no stage after stage pre_deployment_start after stage deploy_start after stage post_deployment_start]" {
		t.Errorf("bands %v", bands)
	}
}
