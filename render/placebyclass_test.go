package render

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// TestPlaceByClassAsRender: on the examples, a generated repository and the
// class cluster, every node of every graph of PlaceByClass has the tasks the
// full render puts on it, each with the same definition, type and Via, and
// no other: the causes of a change read the same from either.
func TestPlaceByClassAsRender(t *testing.T) {
	repos := map[string]*loader.Repo{}
	dirs, _ := filepath.Glob("../examples/*")
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(dir, "clusters")); err != nil {
			continue
		}
		repo, ld := loader.Load(os.DirFS(dir), loader.Options{})
		noErrors(t, ld)
		repos[filepath.Base(dir)] = repo
	}
	gen, ld := loader.Load(repogen.Generate(repogen.Spec{Plugins: 5, Tasks: 300, Nodes: 120, Clusters: 3, Seed: 2, CrossDepends: 20}), loader.Options{})
	noErrors(t, ld)
	repos["generated"] = gen
	cls, ld := loader.Load(mapFS(graphFiles(semRelease, map[string]string{"default": `- {id: a, type: shell, role: [cinder]}
- {id: b, type: shell, roles: [compute], requires: [a]}
- {id: c, type: shell, tags: [controller, compute]}
- {id: g, type: group, role: [controller], tasks: [d]}
- {id: d, type: shell}
`}, classCluster)), loader.Options{})
	noErrors(t, ld)
	repos["classes"] = cls
	if len(repos) < 4 {
		t.Fatalf("%d repositories, want the examples too", len(repos))
	}
	for name, repo := range repos {
		rs, diags := Render(repo, Options{})
		noErrors(t, diags)
		for _, r := range rs {
			pc := r.Model.PlaceByClass()
			for _, g := range r.Graphs {
				cg := pc.Graph(g.Type)
				if cg == nil {
					t.Errorf("%s/%s: no graph %s by class", name, r.Model.Cluster.Name, g.Type)
					continue
				}
				for _, ng := range g.Nodes {
					comparePlaced(t, name+"/"+r.Model.Cluster.Name+"/"+g.Type, ng, cg.Node(ng.Node))
				}
			}
		}
	}
}

// comparePlaced compares a node's tasks in a full render (ng) and by class (cn).
func comparePlaced(t *testing.T, where string, ng, cn *NodeGraph) {
	t.Helper()
	if cn == nil {
		t.Errorf("%s: node %s missing by class", where, ng.Node)
		return
	}
	ids := func(n *NodeGraph) []string {
		var out []string
		for _, pt := range n.byID {
			out = append(out, pt.ID())
		}
		return out
	}
	if d := cmp.Diff(ids(ng), ids(cn)); d != "" {
		t.Errorf("%s: node %s's tasks (-render +by class):\n%s", where, ng.Node, d)
		return
	}
	for _, pt := range ng.byID {
		ct := cn.Task(pt.ID())
		if ct.Def.Task != pt.Def.Task || ct.Type() != pt.Type() || !slices.Equal(ct.Via(), pt.Via()) {
			t.Errorf("%s: task %s on %s: by class %s %v %v, rendered %s %v %v", where, pt.ID(), ng.Node,
				ct.Type(), ct.Def.Task.Range, ct.Via(), pt.Type(), pt.Def.Task.Range, pt.Via())
		}
	}
}
