package render

import (
	"bytes"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// sameSpec is a generated shape with cross-dependencies and the stages'
// fan-in, whose sync node's files leave out requirements the catalogue implies.
var sameSpec = repogen.Spec{Plugins: 4, Tasks: 200, Nodes: 24, Clusters: 1, Seed: 9, CrossDepends: 60, StageFanIn: true}

// encodedFiles are the node files and DOT files of r, encoded.
func encodedFiles(t *testing.T, r *Rendered) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	var mu sync.Mutex
	err := StreamCluster(r, func(name string, data []byte) error {
		if _, err := ParseAddress(name); err == nil || strings.HasSuffix(name, ".dot") {
			mu.Lock()
			files[name] = bytes.Clone(data)
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// dotLimitsTried are the limits each pair of graphs is drawn with: the
// defaults, and small ones that condense the graphs or leave only a note.
var dotLimitsTried = []dotLimits{defaultDOTLimits, {full: 1 << 10, condensed: 1 << 20}, {full: 1 << 10, condensed: 1 << 10}}

// checkSameFiles fails when SameFiles names a file of base and head whose
// bytes differ, or when sameDrawing holds two graphs that any of
// dotLimitsTried draws apart. It returns the files named and those of base.
func checkSameFiles(t *testing.T, base, head *Rendered) (same map[string]bool, files map[string][]byte) {
	t.Helper()
	files, other := encodedFiles(t, base), encodedFiles(t, head)
	same = SameFiles(base, head)
	for _, name := range slices.Sorted(maps.Keys(same)) {
		if !bytes.Equal(files[name], other[name]) || files[name] == nil {
			t.Errorf("%s: said the same on both sides, its bytes differ", name)
		}
	}
	for _, g := range base.Graphs {
		hg := head.Graph(g.Type)
		if hg == nil || !sameDrawing(g, hg) {
			continue
		}
		for _, lim := range dotLimitsTried {
			if !bytes.Equal(dotWith(base.Model.Cluster.Name, g, lim), dotWith(base.Model.Cluster.Name, hg, lim)) {
				t.Errorf("graph %s drawn alike, its DOT files differ with limits %+v", g.Type, lim)
			}
		}
	}
	return same, files
}

// TestSameFilesOfOneRevision: two renders of one repository (nothing shared
// between their graphs) have every node file and DOT file the same, and
// SameFiles names all of them: the examples, the real data and a generated
// shape with fan-in.
func TestSameFilesOfOneRevision(t *testing.T) {
	renders := map[string]func() []*Rendered{
		"generated": func() []*Rendered { return renderSpec(t, sameSpec) },
		"mitaka-ceph": func() []*Rendered {
			r, _ := renderMitakaCeph(t)
			return []*Rendered{r}
		},
	}
	for _, name := range []string{"quickstart", "fuel-mitaka", "tripleo-capabilities"} {
		renders[name] = func() []*Rendered {
			repo, ld := loader.Load(os.DirFS("../examples/"+name), loader.Options{})
			return loadRender(t, repo, ld)
		}
	}
	for name, render := range renders {
		t.Run(name, func(t *testing.T) {
			base, head := render(), render()
			for i, r := range base {
				same, files := checkSameFiles(t, r, head[i])
				for f := range files {
					if !same[f] {
						t.Errorf("%s: the same on both sides, not found so", f)
					}
				}
			}
		})
	}
}

// TestSameFilesTellsChanges: a render compared with another of the same
// repository changed in one way that changes a node file or a DOT file: the
// file is not said the same, and no file whose bytes differ is (a shortcut
// that left out what changed would fail here).
func TestSameFilesTellsChanges(t *testing.T) {
	cases := []struct {
		name string
		// change changes head and returns the files it changes (by their
		// names without the cluster's) and those it leaves the same.
		change func(t *testing.T, head *Rendered) (changed, kept []string)
	}{
		{"a node's roles", func(t *testing.T, r *Rendered) ([]string, []string) {
			ng := clusterNode(t, r, "default")
			tags := *ng.Tags
			tags.Roles = append(slices.Clone(tags.Roles), "extra")
			ng.Tags = &tags
			return []string{nodeFileName(ng, "default")}, []string{"graphs/default.dot"}
		}},
		{"a node's tags", func(t *testing.T, r *Rendered) ([]string, []string) {
			ng := clusterNode(t, r, "default")
			tags := *ng.Tags
			tags.Resolution = append(slices.Clone(tags.Resolution), "zz-extra")
			ng.Tags = &tags
			// The full graph does not show them; the condensed one does
			// (checkSameFiles draws both).
			return []string{nodeFileName(ng, "default")}, nil
		}},
		{"a node's instances", func(t *testing.T, r *Rendered) ([]string, []string) {
			ng := clusterNode(t, r, "default")
			tags := *ng.Tags
			tags.Instances = map[string][]string{"extra": {"one"}}
			ng.Tags = &tags
			return []string{nodeFileName(ng, "default")}, []string{"graphs/default.dot"}
		}},
		{"a requirement's node", func(t *testing.T, r *Rendered) ([]string, []string) {
			ng, pt, k, other := localEdgeElsewhere(t, r.Graph("default"))
			pt.requires = slices.Clone(pt.requires)
			pt.requires[k].raw = other
			return []string{nodeFileName(ng, "default"), "graphs/default.dot"}, nil
		}},
		{"a requirement's task", func(t *testing.T, r *Rendered) ([]string, []string) {
			ng, pt, k, _ := localEdgeElsewhere(t, r.Graph("default"))
			for _, t2 := range ng.Tasks {
				if t2 != pt && t2 != pt.edge(pt.requires[k]).raw && !slices.ContainsFunc(pt.requires, func(e Edge) bool { return pt.edge(e).raw == t2 }) {
					pt.requires = slices.Clone(pt.requires)
					pt.requires[k].raw = t2
					return []string{nodeFileName(ng, "default"), "graphs/default.dot"}, nil
				}
			}
			t.Fatal("no other task to require")
			return nil, nil
		}},
		{"the order of a node's tasks", func(t *testing.T, r *Rendered) ([]string, []string) {
			ng := clusterNode(t, r, "default")
			ng.Tasks = slices.Clone(ng.Tasks)
			ng.Tasks[0], ng.Tasks[1] = ng.Tasks[1], ng.Tasks[0]
			return []string{nodeFileName(ng, "default"), "graphs/default.dot"}, nil
		}},
		{"a task's type (drawn, not in its node file)", func(t *testing.T, r *Rendered) ([]string, []string) {
			ng := clusterNode(t, r, "default")
			pt := ng.Tasks[len(ng.Tasks)-1]
			d := *pt.Def // the type is its definition's
			if d.typ = "skipped"; pt.Type() == "skipped" {
				d.typ = "shell"
			}
			pt.Def = &d
			return []string{"graphs/default.dot"}, []string{nodeFileName(ng, "default")}
		}},
		{"a stage's fan-in", func(t *testing.T, r *Rendered) ([]string, []string) {
			for _, pt := range r.Graph("default").Node(SyncNode).Tasks {
				if pt.gather() != nil && len(pt.gather().nodes) >= 2 {
					f := *pt.gather()
					f.nodes = f.nodes[1:]
					pt.node.fanIns[pt.idx] = &f
					return []string{"graphs/default.dot"}, nil
				}
			}
			t.Fatal("no stage gathers from two nodes")
			return nil, nil
		}},
		{"the stages a definition is required_for", func(t *testing.T, r *Rendered) ([]string, []string) {
			g := r.Graph("default")
			for _, stage := range g.Node(SyncNode).Tasks {
				if stage.gather() == nil {
					continue
				}
				for _, ng := range stage.gather().nodes {
					for _, pt := range ng.Tasks {
						if stageSource(stage, pt) != nil && !stage.holds(pt) {
							d := *pt.Def
							d.stages = nil
							pt.Def = &d
							return []string{"graphs/default.dot"}, nil
						}
					}
				}
			}
			t.Fatal("no task gathered by a stage")
			return nil, nil
		}},
		{"the cluster's name", func(t *testing.T, r *Rendered) ([]string, []string) {
			c := *r.Model.Cluster
			c.Name += "-other"
			r.Model.Cluster = &c
			return nil, nil // no file has the same name on both sides
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base, head := renderSpec(t, sameSpec)[0], renderSpec(t, sameSpec)[0]
			changed, kept := tc.change(t, head)
			same, files := checkSameFiles(t, base, head)
			other := encodedFiles(t, head)
			cluster := base.Model.Cluster.Name + "/"
			for _, f := range changed {
				if bytes.Equal(files[cluster+f], other[cluster+f]) {
					t.Errorf("%s: the change leaves it the same (the case is wrong)", f)
				}
				if same[cluster+f] {
					t.Errorf("%s: changed, said the same", f)
				}
			}
			for _, f := range kept {
				if !same[cluster+f] {
					t.Errorf("%s: left the same, not found so", f)
				}
			}
			if len(same) == 0 && tc.name != "the cluster's name" {
				t.Error("no file found the same: the change should leave most of them")
			}
		})
	}
}

// clusterNode is the first cluster node (with tags) of graph typ of r with at
// least two tasks.
func clusterNode(t *testing.T, r *Rendered, typ string) *NodeGraph {
	t.Helper()
	for _, ng := range r.Graph(typ).Nodes {
		if ng.Tags != nil && len(ng.Tasks) >= 2 {
			return ng
		}
	}
	t.Fatalf("graph %s has no cluster node with two tasks", typ)
	return nil
}

// nodeFileName is the name of ng's node file of graph typ, without its cluster.
func nodeFileName(ng *NodeGraph, typ string) string {
	name := NodeAddress("c", ng.Node, typ).String()
	return strings.TrimPrefix(name, "c/")
}

// localEdgeElsewhere finds a requirement k of task pt of a cluster node ng of
// g on a task of ng that another cluster node has too (other).
func localEdgeElsewhere(t *testing.T, g *Graph) (ng *NodeGraph, pt *PlacedTask, k int, other *PlacedTask) {
	t.Helper()
	for _, ng := range g.Nodes {
		if ng.Tags == nil {
			continue
		}
		for _, pt := range ng.Tasks {
			for k, e := range pt.requires {
				if pt.edge(e).raw.node != ng {
					continue
				}
				for _, n2 := range g.Nodes {
					if o := n2.Task(e.Task()); n2 != ng && n2.Tags != nil && o != nil {
						return ng, pt, k, o
					}
				}
			}
		}
	}
	t.Fatal("no requirement between two tasks of a node that another node has")
	return nil, nil, 0, nil
}

// TestSameFilesSharedEdges: two renders whose tasks share their cross-depends
// edges (sharedEdges), alike but for the task the shared edges go to, are not
// drawn alike, and no node file or DOT file whose bytes differ is said the
// same; two renders of one such repository have every file the same.
func TestSameFilesSharedEdges(t *testing.T) {
	const tasks = `- {id: a, type: shell, role: '*'}
- {id: b, type: shell, role: '*'}
- {id: check, type: shell, role: '*', cross-depends: [{name: a}]}
`
	base, diags := renderSharedTasks(t, 1, tasks)
	noErrors(t, diags)
	head, diags := renderSharedTasks(t, 1, strings.Replace(tasks, "{name: a}", "{name: b}", 1))
	noErrors(t, diags)
	if pt := clusterNode(t, head, "default").Task("check"); pt == nil || pt.sharing() == nil {
		t.Fatal("check does not share its edges")
	}
	checkSameFiles(t, base, head)
	if sameDrawing(base.Graph("default"), head.Graph("default")) {
		t.Error("graphs whose shared edges differ drawn alike")
	}
	again, diags := renderSharedTasks(t, 1, tasks)
	noErrors(t, diags)
	same, files := checkSameFiles(t, base, again)
	for f := range files {
		if !same[f] {
			t.Errorf("%s: the same on both sides, not found so", f)
		}
	}
}
