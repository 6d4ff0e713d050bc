package render

import (
	"fmt"
	"math/rand/v2"
	"path"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	yaml "go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// Tests of the stages' fan-in: the edges of a stage of the sync node to the tasks
// of other nodes that are required_for it, which the stage does not hold but
// Requires computes (see fanIn).

// edgeLines are the edges of pt as "task@node (origin) line:column".
func edgeLines(pt *PlacedTask) []string {
	var out []string
	for e := range pt.Requires() {
		out = append(out, fmt.Sprintf("%s@%s (%s) line %d column %d", e.Task(), e.Node(), e.Describe(), e.Range.Start.Line, e.Range.Start.Column))
	}
	return out
}

// TestStageFanInOrigins: a stage's edges to the tasks it gathers come in node then
// id order, merged with its other edges, each with the origin a list of every
// edge, sorted with the first edge of a pair kept, reported before the fan-in was
// implicit: the first required_for entry that names the stage; a task's
// cross-depended-by on the stage, bound before the task is gathered, over its
// required_for; the fan-in over the stage's own cross-depends, bound after.
func TestStageFanInOrigins(t *testing.T) {
	const file = "plugins/base/graphs/default.yaml"
	tasks := `- {id: deploy_start, type: stage}
- id: deploy_end
  type: stage
  requires: [deploy_start]
  cross-depends: [{name: d, role: [cinder]}, {name: e, role: [cinder]}, {name: a, role: [compute]}]
- {id: a, type: shell, role: [compute], required_for: [deploy_end]}
- {id: b, type: shell, role: [compute], required_for: [deploy_end, '/deploy_e/']}
- id: c
  type: shell
  role: [cinder]
  required_for: [deploy_end]
  cross-depended-by: [{name: deploy_end, role: null}]
- {id: d, type: shell, role: [cinder], required_for: [deploy_end]}
- {id: e, type: shell, role: [cinder]}
- {id: f, type: shell, role: [controller], required_for: [deploy_start]}
`
	files := graphFiles(semRelease, map[string]string{"default": tasks}, semCluster)
	r, diags := renderFiles(t, files, nil)
	noErrors(t, diags)
	sync := r.Graph("default").Node(SyncNode)
	end := sync.Task("deploy_end")
	if end == nil {
		t.Fatal("no deploy_end on sync")
	}
	want := []string{
		"a@node-4 (required_for of a) line 6 column 56",
		"b@node-4 (required_for of b) line 7 column 56", // the first entry naming the stage
		"a@node-5 (required_for of a) line 6 column 56", // not the stage's cross-depends
		"b@node-5 (required_for of b) line 7 column 56",
		"c@node-5 (cross-depended-by of c) line 12 column 23",
		"d@node-5 (required_for of d) line 13 column 55", // not the stage's cross-depends
		"e@node-5 (cross-depends) line 5 column 46",
		"deploy_start@sync (requires) line 4 column 14",
	}
	if diff := cmp.Diff(want, edgeLines(end)); diff != "" {
		t.Errorf("deploy_end's edges (-want +got):\n%s", diff)
	}
	if n := end.NumRequires(); n != len(want) {
		t.Errorf("NumRequires = %d, want %d", n, len(want))
	}
	if got := end.AllRequires(); len(got) != len(want) || got[4].Origin != "cross-depended-by of c" {
		t.Errorf("AllRequires = %v", got)
	}
	want = []string{
		"f@node-2 (required_for of f) line 15 column 59",
		"f@node-3 (required_for of f) line 15 column 59",
	}
	if diff := cmp.Diff(want, edgeLines(sync.Task("deploy_start"))); diff != "" {
		t.Errorf("deploy_start's edges (-want +got):\n%s", diff)
	}
}

// TestStageFanInCycle: a cycle through a stage's fan-in is found and printed as
// before: a task required_for a stage that also cross-depends on the stage.
func TestStageFanInCycle(t *testing.T) {
	const file = "plugins/base/graphs/default.yaml"
	tasks := `- {id: deploy_end, type: stage}
- {id: a, type: shell, role: [compute], required_for: [deploy_end]}
- id: b
  type: shell
  role: [cinder]
  required_for: [deploy_end]
  cross-depends: [{name: deploy_end, role: null}]
`
	files := graphFiles(semRelease, map[string]string{"default": tasks}, semCluster)
	r, diags := renderFiles(t, files, nil)
	expectDiags(t, files, diags, diagAt{file: file, lineOf: "id: deploy_end", token: "deploy_end",
		summary: "graph default: dependency cycle: deploy_end@sync -> b@node-5 -> deploy_end@sync"})
	for _, d := range cycleErrors(diags) {
		checkCycle(t, r.Graph("default"), d)
	}
	// Every task is still in the artifacts, the ordered ones first.
	var got []string
	for _, ng := range r.Graph("default").Nodes {
		for _, pt := range ng.Tasks {
			got = append(got, pt.ID()+"@"+ng.Node)
		}
	}
	want := []string{"a@node-4", "a@node-5", "b@node-5", "deploy_end@sync"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
}

// TestStageFanInGenerated: on a generated fleet where every task is required_for two
// stages and tasks cross-depend across nodes, the stages hold only their other
// edges; Requires yields what sorting the held and the gathered edges together
// (held first, the first of a pair kept) gives, NumRequires counts it, a loop that
// stops early sees a prefix of it, and the expanded sync node file lists it.
func TestStageFanInGenerated(t *testing.T) {
	spec := repogen.Spec{Plugins: 4, Tasks: 300, Nodes: 60, Clusters: 1, Seed: 7, CrossDepends: 40, StageFanIn: true}
	repo, ld := loader.Load(repogen.Generate(spec), loader.Options{})
	rs := loadRender(t, repo, ld)
	expanded, err := FilesExpanded(rs, "rev", "test")
	if err != nil {
		t.Fatal(err)
	}
	stages := 0
	for _, r := range rs {
		for _, g := range r.Graphs {
			sync := g.Node(SyncNode)
			if sync == nil {
				continue
			}
			file := expanded[path.Join(r.Model.Cluster.Name, "nodes", SyncNode, g.Type+".yaml")]
			var nf struct {
				Tasks []struct {
					ID       string
					Requires []struct{ Node, Task string }
				}
			}
			if err := yaml.Unmarshal(file, &nf); err != nil || len(nf.Tasks) == 0 {
				t.Fatalf("%s sync: %d tasks, %v", g.Type, len(nf.Tasks), err)
			}
			written := map[string][]string{}
			for _, task := range nf.Tasks {
				for _, q := range task.Requires {
					written[task.ID] = append(written[task.ID], q.Task+"@"+q.Node)
				}
			}
			for _, pt := range sync.Tasks {
				want := referenceRequires(g, pt)
				got := pt.AllRequires()
				if diff := cmp.Diff(edgeStrings(want), edgeStrings(got)); diff != "" {
					t.Errorf("%s %s (-reference +Requires):\n%s", g.Type, pt.ID(), diff)
				}
				if pt.NumRequires() != len(got) {
					t.Errorf("%s %s: NumRequires %d, Requires yields %d", g.Type, pt.ID(), pt.NumRequires(), len(got))
				}
				var ids []string
				for _, e := range got {
					ids = append(ids, e.Task()+"@"+e.Node())
				}
				if diff := cmp.Diff(ids, written[pt.ID()]); diff != "" {
					t.Errorf("%s %s: the expanded sync file (-Requires +file):\n%s", g.Type, pt.ID(), diff)
				}
				if pt.gather() == nil {
					continue
				}
				stages++
				if len(pt.requires)*10 > len(got) {
					t.Errorf("%s %s holds %d of its %d edges", g.Type, pt.ID(), len(pt.requires), len(got))
				}
				for _, k := range []int{0, 1, len(got) / 2, len(got) - 1} {
					var prefix []Edge
					for e := range pt.Requires() {
						if len(prefix) == k {
							break
						}
						prefix = append(prefix, e)
					}
					if diff := cmp.Diff(edgeStrings(got[:k]), edgeStrings(prefix)); diff != "" {
						t.Errorf("%s %s: the first %d edges (-all +stopped):\n%s", g.Type, pt.ID(), k, diff)
					}
				}
			}
		}
	}
	if stages < 2 {
		t.Errorf("%d stages gather tasks; the test wants fan-in", stages)
	}
}

// referenceRequires are the edges of a task of the sync node computed as a list,
// the way the model held them before the fan-in was implicit: the held edges, then
// one edge per gathered task, stable-sorted by node then task, the first of a pair
// kept.
func referenceRequires(g *Graph, pt *PlacedTask) []Edge {
	all := slices.Clone(pt.requires)
	for _, ng := range g.Nodes {
		if ng.Node == SyncNode || ng.Task(pt.ID()) != nil {
			continue
		}
		for _, x := range ng.byID {
			for _, se := range x.Def.stages {
				if se.stage == pt {
					all = append(all, Edge{EdgeSource: se.src, raw: x})
				}
			}
		}
	}
	slices.SortStableFunc(all, func(a, b Edge) int {
		ka, kb := edgeKey(a.raw), edgeKey(b.raw)
		switch {
		case ka < kb:
			return -1
		case ka > kb:
			return 1
		}
		return 0
	})
	return slices.CompactFunc(all, func(a, b Edge) bool { return a.raw == b.raw })
}

// edgeStrings are edges as "task@node origin file:line:column".
func edgeStrings(edges []Edge) []string {
	out := make([]string, len(edges))
	for i, e := range edges {
		out[i] = fmt.Sprintf("%s@%s %s %s:%d:%d", e.Task(), e.Node(), e.Describe(), e.Range.Filename, e.Range.Start.Line, e.Range.Start.Column)
	}
	return out
}

// TestStageFanInOrder: a stage comes after every task it gathers and its other
// requirements, each counted once: a task required_for the stage by two entries,
// and a task whose cross-depended-by on the stage duplicates its required_for.
// a_end is ready only once z_start is done, though the tasks it gathers (ids
// before z_start) are done first.
func TestStageFanInOrder(t *testing.T) {
	tasks := `- {id: z_start, type: stage}
- {id: a_end, type: stage, requires: [z_start]}
- {id: b, type: shell, role: [compute], required_for: [a_end, '/a_e/']}
- id: c
  type: shell
  role: [cinder]
  required_for: [a_end]
  cross-depended-by: [{name: a_end, role: null}]
`
	r, diags := renderFiles(t, graphFiles(semRelease, map[string]string{"default": tasks}, semCluster), nil)
	noErrors(t, diags)
	want := map[string][]string{
		"node-4": {"b shell"},
		"node-5": {"b shell", "c shell"},
		"sync":   {"z_start stage", "a_end stage <- b@node-4 b@node-5 c@node-5 z_start@sync"},
	}
	if diff := cmp.Diff(want, nonEmpty(taskSets(r.Graph("default")))); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
}

// TestEdgeSorter: sortCompact orders edges by target node rank then task, keeps
// the first edge of each target (by position), and agrees with a stable sort of
// the edges, on its integer-key path and on its fallback.
func TestEdgeSorter(t *testing.T) {
	const ids, ranks = 7, 5
	var targets []*PlacedTask
	for r := range ranks {
		ng := &NodeGraph{Node: fmt.Sprintf("n%d", r), rank: int32(r)}
		for i := range ids {
			targets = append(targets, &PlacedTask{Def: defWithID(fmt.Sprintf("t%d", i)), node: ng, idx: int32(i)})
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var s edgeSorter
	for trial := range 300 {
		edges := make([]Edge, rng.IntN(40))
		for i := range edges {
			to := targets[rng.IntN(len(targets))]
			edges[i] = Edge{EdgeSource: &EdgeSource{Origin: fmt.Sprint(i)}, raw: to}
		}
		if trial%3 == 0 {
			slices.SortStableFunc(edges, func(a, b Edge) int { return int(edgeKey(a.raw) - edgeKey(b.raw)) })
		}
		want := slices.Clone(edges)
		slices.SortStableFunc(want, func(a, b Edge) int { return int(edgeKey(a.raw) - edgeKey(b.raw)) })
		want = slices.CompactFunc(want, func(a, b Edge) bool { return a.raw == b.raw })
		for _, nodes := range []int{ranks, 1 << 31} { // the second takes the fallback
			got := s.sortCompact(slices.Clone(edges), ids, nodes)
			if diff := cmp.Diff(edgeStrings(want), edgeStrings(got)); diff != "" {
				t.Fatalf("trial %d, %d nodes (-stable sort +sortCompact):\n%s", trial, nodes, diff)
			}
		}
	}
}

// TestRequiresDoesNotAllocate: iterating the edges of every task, a stage's
// gathered ones included, allocates nothing.
func TestRequiresDoesNotAllocate(t *testing.T) {
	spec := repogen.Spec{Plugins: 2, Tasks: 100, Nodes: 20, Clusters: 1, Seed: 3, CrossDepends: 10, StageFanIn: true}
	repo, ld := loader.Load(repogen.Generate(spec), loader.Options{})
	rs := loadRender(t, repo, ld)
	g := rs[0].Graph("default")
	edges, gathered := 0, 0
	allocs := testing.AllocsPerRun(5, func() {
		edges = 0
		for _, ng := range g.Nodes {
			for _, pt := range ng.Tasks {
				for e := range pt.Requires() {
					if e.raw != nil {
						edges++
					}
				}
			}
		}
	})
	for _, pt := range g.Node(SyncNode).Tasks {
		if pt.gather() != nil {
			gathered += pt.NumRequires() - len(pt.requires)
		}
	}
	if allocs != 0 {
		t.Errorf("%v allocations per pass over %d edges", allocs, edges)
	}
	if gathered == 0 {
		t.Error("no stage gathers tasks; the test wants fan-in")
	}
}
