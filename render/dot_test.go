package render

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/loader"
)

// dotSpecs are generated repositories with cross-node dependencies (some with
// policy any) and stage fan-in: their classes have cross-node edges between and
// within them. Graphviz lays out the small one's graphs in a fraction of a second,
// the larger one's condensed graph in a minute: only the small one is laid out.
var dotSpecs = []struct {
	name     string
	spec     repogen.Spec
	graphviz bool
}{
	{"14 nodes", repogen.Spec{Plugins: 2, Tasks: 60, Nodes: 14, Clusters: 1, Seed: 5, CrossDepends: 60, StageFanIn: true}, true},
	{"60 nodes", repogen.Spec{Plugins: 4, Tasks: 240, Nodes: 60, Clusters: 1, Seed: 5, CrossDepends: 60, StageFanIn: true}, false},
}

func renderSpec(t *testing.T, spec repogen.Spec) []*Rendered {
	t.Helper()
	rs, diags := Render(loadSpec(t, spec), Options{})
	noErrors(t, diags)
	return rs
}

// loadSpec loads the repository generated from spec, which must load.
func loadSpec(t *testing.T, spec repogen.Spec) *loader.Repo {
	t.Helper()
	repo, diags := loader.Load(repogen.Generate(spec), loader.Options{})
	noErrors(t, diags)
	return repo
}

// loadHeavy loads the heavy generated shape with nodes nodes in clusters
// clusters.
func loadHeavy(t *testing.T, nodes, clusters int) *loader.Repo {
	t.Helper()
	spec := repogen.Heavy(nodes)
	spec.Clusters = clusters
	return loadSpec(t, spec)
}

func dotWith(cluster string, g *Graph, lim dotLimits) []byte {
	var b bytes.Buffer
	writeDOTLimits(&b, cluster, g, lim)
	return b.Bytes()
}

var unlimited = dotLimits{full: math.MaxInt, condensed: math.MaxInt}

// TestDOTForms: a graph whose full DOT file is at most the full limit is written in
// full, byte for byte; one byte more and it is condensed by node class (checked
// against the model); a condensed form over its limit gives a note. Each form stays
// within its limit, is the same on a second render, and is valid Graphviz when dot
// is installed.
func TestDOTForms(t *testing.T) {
	for _, sp := range dotSpecs {
		t.Run(sp.name, func(t *testing.T) { testDOTForms(t, sp.spec, sp.graphviz) })
	}
}

func testDOTForms(t *testing.T, spec repogen.Spec, graphviz bool) {
	rs := renderSpec(t, spec)
	again := renderSpec(t, spec)
	for ri, r := range rs {
		cluster := r.Model.Cluster.Name
		for gi, g := range r.Graphs {
			full := dotWith(cluster, g, unlimited)
			condensed := dotWith(cluster, g, dotLimits{full: len(full) - 1, condensed: math.MaxInt})
			t.Run(cluster+"/"+g.Type, func(t *testing.T) {
				if bytes.HasPrefix(full, []byte("//")) || !bytes.HasPrefix(full, []byte(`digraph "`)) {
					t.Fatalf("the unlimited form is not the full graph:\n%.300s", full)
				}
				t.Logf("%d nodes: full %d bytes, condensed %d bytes", len(g.Nodes), len(full), len(condensed))
				cases := map[string]struct {
					lim  dotLimits
					want string // full, condensed or note
				}{
					"at the full limit":          {dotLimits{full: len(full), condensed: 0}, "full"},
					"a byte over the full limit": {dotLimits{full: len(full) - 1, condensed: len(condensed)}, "condensed"},
					"condensed over its limit":   {dotLimits{full: len(full) - 1, condensed: len(condensed) - 1}, "note"},
				}
				if len(full) <= DOTFullLimit {
					cases["default limits"] = struct {
						lim  dotLimits
						want string
					}{defaultDOTLimits, "full"}
				}
				for name, tc := range cases {
					got := dotWith(cluster, g, tc.lim)
					switch tc.want {
					case "full":
						if !bytes.Equal(got, full) {
							t.Errorf("%s: not the full graph:\n%.400s", name, got)
						}
					case "condensed":
						if !bytes.Equal(got, condensed) {
							t.Errorf("%s: not the condensed graph:\n%.400s", name, got)
						}
						if len(got) > tc.lim.condensed {
							t.Errorf("%s: %d bytes, over the limit %d", name, len(got), tc.lim.condensed)
						}
					case "note":
						checkNote(t, got, cluster, g, graphviz)
					}
				}
				checkCondensed(t, condensed, cluster, g)
				if len(condensed) >= len(full) && len(g.Nodes) > 20 {
					t.Errorf("condensed %d bytes, full %d", len(condensed), len(full))
				}
				g2 := again[ri].Graphs[gi]
				if got := dotWith(cluster, g2, dotLimits{full: len(full) - 1, condensed: math.MaxInt}); !bytes.Equal(got, condensed) {
					t.Error("a second render gives another condensed graph")
				}
				if graphviz {
					graphvizValid(t, full)
					graphvizValid(t, condensed)
				}
			})
		}
	}
}

// TestDOTDefaultLimitsHeavy: on the heavy generated shape (clusters of 100 nodes,
// each node some 200 KB of full DOT), the DOT file is condensed under the default
// limits, within DOTCondensedLimit and under a quarter of the full graph.
func TestDOTDefaultLimitsHeavy(t *testing.T) {
	if testing.Short() {
		t.Skip("renders 400 nodes of 5,000 tasks")
	}
	rs := renderSpec(t, repogen.Heavy(400))
	r := rs[0]
	g := r.Graph("default")
	got := DOT(r.Model.Cluster.Name, g)
	full := dotWith(r.Model.Cluster.Name, g, unlimited)
	t.Logf("%d nodes: full %d bytes, condensed %d bytes", len(g.Nodes), len(full), len(got))
	if len(full) <= DOTFullLimit {
		t.Fatalf("the full graph is %d bytes, not over the limit", len(full))
	}
	if len(got) > DOTCondensedLimit || len(got)*4 > len(full) {
		t.Errorf("DOT is %d bytes (full %d): want at most %d and a quarter of the full graph", len(got), len(full), DOTCondensedLimit)
	}
	checkCondensed(t, got, r.Model.Cluster.Name, g)
}

// checkNote checks a note-only graph: no task, a note that says why and what to
// use instead.
func checkNote(t *testing.T, got []byte, cluster string, g *Graph, graphviz bool) {
	t.Helper()
	s := string(got)
	for _, want := range []string{"not drawn", "fuelsync explain --cluster " + cluster + " --graph " + g.Type, "note [shape=note"} {
		if !strings.Contains(s, want) {
			t.Errorf("the note lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "->") || strings.Contains(s, "subgraph") || len(got) > 2000 {
		t.Errorf("the note draws more than a note (%d bytes):\n%.400s", len(got), s)
	}
	if graphviz {
		graphvizValid(t, got)
	}
}

// dotBox is a box of a parsed DOT file.
type dotBox struct {
	label string
	tasks []string // Graphviz ids
}

var (
	dotBoxRE   = regexp.MustCompile(`^  subgraph cluster_(\d+) \{$`)
	dotLabelRE = regexp.MustCompile(`^    label="(.*)";$`)
	dotTaskRE  = regexp.MustCompile(`^    "([^"]*)" \[label="([^"]*)"(, style=dashed)?\];$`)
	dotEdgeRE  = regexp.MustCompile(`^  "([^"]*)" -> "([^"]*)"( \[color=blue(?:, label="×(\d+)")?\])?;$`)
)

// parseDOT reads the lines fuelsync's DOT writer writes: the leading comment, the
// boxes and the edges: local ones with 0, blue ones with their label's node pairs,
// or -1 without a label.
func parseDOT(t *testing.T, data []byte) (comment string, newrank bool, boxes []dotBox, edges map[string]int) {
	t.Helper()
	edges = map[string]int{}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	i := 0
	for ; i < len(lines) && strings.HasPrefix(lines[i], "// "); i++ {
		comment += lines[i][3:] + "\n"
	}
	if i+3 > len(lines) || !strings.HasPrefix(lines[i], `digraph "`) || lines[i+1] != "  rankdir=LR;" || lines[len(lines)-1] != "}" {
		t.Fatalf("not a fuelsync DOT file:\n%.400s", data)
	}
	i += 2
	if lines[i] == "  newrank=true;" {
		newrank = true
		i++
	}
	if lines[i] != "  node [shape=box, fontsize=10];" {
		t.Fatalf("unexpected line %q", lines[i])
	}
	for _, line := range lines[i+1 : len(lines)-1] {
		if m := dotBoxRE.FindStringSubmatch(line); m != nil {
			if n, _ := strconv.Atoi(m[1]); n != len(boxes) {
				t.Fatalf("box %d numbered %s", len(boxes), m[1])
			}
			boxes = append(boxes, dotBox{})
			continue
		}
		if m := dotLabelRE.FindStringSubmatch(line); m != nil && len(boxes) > 0 {
			boxes[len(boxes)-1].label = m[1]
			continue
		}
		if m := dotTaskRE.FindStringSubmatch(line); m != nil && len(boxes) > 0 {
			boxes[len(boxes)-1].tasks = append(boxes[len(boxes)-1].tasks, m[1])
			continue
		}
		if line == "  }" {
			continue
		}
		m := dotEdgeRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("unexpected line %q", line)
		}
		key := m[1] + " -> " + m[2]
		n := 0
		if m[3] != "" {
			n = -1
			if m[4] != "" {
				n, _ = strconv.Atoi(m[4])
				if n < 1 {
					t.Errorf("edge %s labelled with %d node pairs", key, n)
				}
			}
			key += " (cross)"
		}
		if _, dup := edges[key]; dup {
			t.Errorf("edge %s written twice", key)
		}
		edges[key] = n
	}
	return comment, newrank, boxes, edges
}

// checkCondensed checks a condensed DOT file against the model, recomputed here
// the plain way: the nodes grouped by class, tasks and local edges; a box per
// group with its first node's tasks and a label that counts and names its nodes;
// the first node's local edges; every other edge of every node, counted by the
// groups and tasks at its ends.
func checkCondensed(t *testing.T, data []byte, cluster string, g *Graph) {
	t.Helper()
	comment, newrank, boxes, edges := parseDOT(t, data)
	if !newrank {
		t.Error("a condensed graph without newrank=true (Graphviz cannot rank it)")
	}
	// Group the nodes.
	var groups [][]*NodeGraph
	byKey := map[string]int{}
	groupOf := map[string]int{}
	clusterNodes := 0
	for _, ng := range g.Nodes {
		key := ""
		if ng.Tags != nil {
			clusterNodes++
			var b strings.Builder
			fmt.Fprintf(&b, "%q|", classKey(ng.Tags.Resolution))
			ids := make([]string, 0, len(ng.Tasks))
			for _, pt := range ng.Tasks {
				var local []string
				for _, e := range pt.AllRequires() {
					if e.Node() == ng.Node {
						local = append(local, e.Task())
					}
				}
				slices.Sort(local)
				ids = append(ids, fmt.Sprintf("%s %s <- %v", pt.ID(), pt.Type(), local))
			}
			slices.Sort(ids)
			b.WriteString(strings.Join(ids, ";"))
			key = b.String()
		} else {
			key = "pseudo " + ng.Node
		}
		gi, ok := byKey[key]
		if !ok {
			gi = len(groups)
			byKey[key] = gi
			groups = append(groups, nil)
		}
		groups[gi] = append(groups[gi], ng)
		groupOf[ng.Node] = gi
	}
	if len(boxes) != len(groups) {
		t.Fatalf("%d boxes, want %d (one per group of nodes)", len(boxes), len(groups))
	}
	// Box names: the node of a box of one; else the class's tags (up to 24 bytes,
	// else a hash), and ~<first node> for all but the largest box of a class.
	boxID := make([]string, len(groups))
	largest := map[string]int{}
	for gi, members := range groups {
		if len(members) == 1 {
			continue
		}
		k := classKey(members[0].Tags.Resolution)
		if l, ok := largest[k]; !ok || len(members) > len(groups[l]) {
			largest[k] = gi
		}
	}
	for gi, members := range groups {
		f := members[0]
		if len(members) == 1 {
			boxID[gi] = f.Node
			continue
		}
		k := classKey(f.Tags.Resolution)
		boxID[gi] = strings.ReplaceAll(k, "\x00", "+")
		if len(boxID[gi]) > 24 {
			sum := sha256.Sum256([]byte(k))
			boxID[gi] = fmt.Sprintf("class-%x", sum[:3])
		}
		if largest[k] != gi {
			boxID[gi] += "~" + f.Node
		}
	}
	// Boxes of several nodes by name, then the others in node order.
	order := make([]int, len(groups))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		sa, sb := len(groups[a]) == 1, len(groups[b]) == 1
		if sa || sb {
			return cmp.Compare(btoi(sa), btoi(sb))
		}
		return strings.Compare(boxID[a], boxID[b])
	})
	sortedGroups := make([][]*NodeGraph, len(order))
	sortedIDs := make([]string, len(order))
	for i, gi := range order {
		sortedGroups[i], sortedIDs[i] = groups[gi], boxID[gi]
		for _, ng := range groups[gi] {
			groupOf[ng.Node] = i
		}
	}
	groups, boxID = sortedGroups, sortedIDs
	sizeOf := map[string]int{}
	for gi, members := range groups {
		sizeOf[boxID[gi]] = len(members)
	}
	boxSize := func(id string) int { return sizeOf[id[strings.LastIndex(id, "@")+1:]] }
	want := map[string]int{}
	for gi, members := range groups {
		at := func(task string, _ *NodeGraph) string { return task + "@" + boxID[gi] }
		first := members[0]
		var wantLabel string
		if first.Tags == nil {
			wantLabel = first.Node
		} else {
			tags := strings.Split(classKey(first.Tags.Resolution), "\x00")
			var names []string
			for i, ng := range members {
				if i == 3 && len(members) > 4 {
					names = append(names, fmt.Sprintf("… (%d more)", len(members)-3))
					break
				}
				names = append(names, ng.Node)
			}
			wantLabel = fmt.Sprintf("%s ×%d: %s", strings.Join(tags, ", "), len(members), strings.Join(names, ", "))
		}
		if boxes[gi].label != wantLabel {
			t.Errorf("box %d: label %q, want %q", gi, boxes[gi].label, wantLabel)
		}
		var wantTasks []string
		for _, pt := range first.Tasks {
			wantTasks = append(wantTasks, at(pt.ID(), first))
		}
		if diff := gocmp.Diff(wantTasks, boxes[gi].tasks); diff != "" {
			t.Errorf("box %d (%s): tasks (-want +got):\n%s", gi, wantLabel, diff)
		}
		for _, ng := range members {
			for _, pt := range ng.Tasks {
				for _, e := range pt.AllRequires() {
					if e.Node() == ng.Node {
						if ng == first {
							want[at(e.Task(), first)+" -> "+at(pt.ID(), first)] = 0
						}
						continue
					}
					want[e.Task()+"@"+boxID[groupOf[e.Node()]]+" -> "+at(pt.ID(), first)+" (cross)"]++
				}
			}
		}
	}
	// An edge between every node of one box and every node of the other has no label.
	for key, n := range want {
		if n == 0 {
			continue
		}
		src, dst, _ := strings.Cut(strings.TrimSuffix(key, " (cross)"), " -> ")
		if n == boxSize(src)*boxSize(dst) {
			want[key] = -1
		}
	}
	if diff := gocmp.Diff(want, edges); diff != "" {
		t.Errorf("edges (-want +got):\n%s", diff)
	}
	cross := 0
	for key, n := range edges {
		if n < 0 {
			src, dst, _ := strings.Cut(strings.TrimSuffix(key, " (cross)"), " -> ")
			n = boxSize(src) * boxSize(dst)
		}
		cross += n
	}
	t.Logf("%d nodes in %d boxes; %d edges drawn, blue ones for %d cross-node edges", clusterNodes, len(boxes), len(edges), cross)
	for _, s := range []string{
		cluster + "/" + g.Type + ": condensed by node class",
		fmt.Sprintf("%d nodes drawn as %d boxes", clusterNodes, len(groups)-(len(g.Nodes)-clusterNodes)),
		"fuelsync explain --cluster " + cluster + " --graph " + g.Type + " --node NODE",
	} {
		if !strings.Contains(comment, s) {
			t.Errorf("the comment lacks %q:\n%s", s, comment)
		}
	}
}

// graphvizValid lays data out with dot -Tsvg when dot is installed.
func graphvizValid(t *testing.T, data []byte) {
	t.Helper()
	dot, ok := testenv.Have(t, "dot", "Graphviz: apt-get install graphviz")
	if !ok {
		t.Log("dot is not installed: the DOT file is not checked with Graphviz")
		return
	}
	path := filepath.Join(t.TempDir(), "graph.dot")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(dot, "-Tsvg", "-o", os.DevNull, path).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("dot -Tsvg: %v\n%s", err, out)
	}
}

// TestDOTBoxIDs: a box of one node is named by the node; a box of several by their
// tags joined by +, or class-<hash> when that is over 24 bytes; the smaller boxes of
// a class split into several add ~<first node>; a name taken by a box of one node
// gets ~<first node> too.
func TestDOTBoxIDs(t *testing.T) {
	node := func(name string, class int32, tags ...string) *NodeGraph {
		return &NodeGraph{Node: name, Tags: &NodeTags{Resolution: tags}, class: class}
	}
	long := []string{"controller", "database", "keystone", "neutron"}
	sum := sha256.Sum256([]byte(strings.Join(long, "\x00")))
	gr := &dotGrouping{groups: []*dotGroup{
		{nodes: []*NodeGraph{node("node-1", 0, long...)}},
		{nodes: []*NodeGraph{node("node-2", 0, long...), node("node-3", 0, long...)}},
		{nodes: []*NodeGraph{node("node-4", 1, "compute", "cinder"), node("node-6", 1, "cinder", "compute")}},
		{nodes: []*NodeGraph{node("node-5", 1, "compute", "cinder"), node("node-7", 1, "cinder", "compute"), node("node-8", 1, "cinder", "compute")}},
		{nodes: []*NodeGraph{node("node-9", 2, "node-10"), node("node-11", 2, "node-10")}},
		{nodes: []*NodeGraph{node("node-10", 3)}},
		{nodes: []*NodeGraph{node("node-12", 4), node("node-13", 4)}},
		{nodes: []*NodeGraph{{Node: "sync"}}},
	}}
	want := []string{
		"node-1",
		fmt.Sprintf("class-%x", sum[:3]),
		"cinder+compute~node-4",
		"cinder+compute",
		"node-10~node-9",
		"node-10",
		"(no tags)",
		"sync",
	}
	if diff := gocmp.Diff(want, gr.boxIDs()); diff != "" {
		t.Errorf("box ids (-want +got):\n%s", diff)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
