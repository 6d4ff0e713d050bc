package render

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// TestNodeFileTasks: the tasks a render gives of a node file from its model are
// those its encoded bytes hold, read back by ParseNodeFile, for every node file
// of the examples and the real data (whose sync stages hold requirements the
// catalogue implies, which the file leaves out), of a generated shape with cross-dependencies and the
// stages' fan-in (the sync node's implied requirements left out), and of names
// that need quoting or hold an '@'.
func TestNodeFileTasks(t *testing.T) {
	var rs []*Rendered
	ceph, _ := renderMitakaCeph(t)
	rs = append(rs, ceph)
	for _, name := range []string{"quickstart", "fuel-mitaka", "tripleo-capabilities"} {
		repo, ld := loader.Load(os.DirFS("../examples/"+name), loader.Options{})
		rs = append(rs, loadRender(t, repo, ld)...)
	}
	rs = append(rs, renderSpec(t, repogen.Spec{Plugins: 4, Tasks: 300, Nodes: 30, Clusters: 2, Seed: 9, CrossDepends: 60, StageFanIn: true})...)
	// deploy_end holds edges its catalogue implies (c's cross-depended-by,
	// d's required_for beside the stage's cross-depends): the file leaves
	// them out.
	held, diags := renderFiles(t, graphFiles(semRelease, map[string]string{"default": `- {id: deploy_start, type: stage}
- {id: deploy_end, type: stage, requires: [deploy_start], cross-depends: [{name: d, role: [cinder]}, {name: e, role: [cinder]}]}
- {id: a, type: shell, role: [compute], required_for: [deploy_end]}
- {id: c, type: shell, role: [cinder], required_for: [deploy_end], cross-depended-by: [{name: deploy_end, role: null}]}
- {id: d, type: shell, role: [cinder], required_for: [deploy_end]}
- {id: e, type: shell, role: [cinder]}
`}, semCluster), nil)
	noErrors(t, diags)
	rs = append(rs, held)
	awkward, diags := renderFiles(t, awkwardFiles(), nil)
	noErrors(t, diags)
	rs = append(rs, awkward)
	files := 0
	for _, r := range rs {
		err := StreamCluster(r, func(name string, data []byte) error {
			a, err := ParseAddress(name)
			if err != nil || !strings.HasSuffix(name, ".yaml") {
				return nil
			}
			files++
			nf, err := ParseNodeFile(data)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				return nil
			}
			got, ok := r.NodeFileTasks(a.Graph, a.Node)
			if !ok {
				t.Errorf("%s: the render has no such node", name)
				return nil
			}
			if diff := cmp.Diff(nf.Tasks, got, cmpopts.IgnoreUnexported(NodeFileTask{}), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s: the model's tasks differ from the file's (-file +model):\n%s", name, diff)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files < 100 {
		t.Fatalf("%d node files compared: the renders should have written more", files)
	}
}

// TestNodeFileTasksAbsent: no tasks for a graph or node the render does not
// have, nor for a node a class stands for (PlaceByClass places one node a class).
func TestNodeFileTasksAbsent(t *testing.T) {
	r := renderSpec(t, repogen.Spec{Plugins: 2, Tasks: 60, Nodes: 12, Clusters: 1, Seed: 3})[0]
	g := r.Graphs[0]
	node := g.Nodes[0].Node
	if _, ok := r.NodeFileTasks(g.Type, node); !ok {
		t.Fatalf("%s/%s: no tasks", g.Type, node)
	}
	if _, ok := r.NodeFileTasks("no-such-graph", node); ok {
		t.Error("a graph the render does not have gave tasks")
	}
	if _, ok := r.NodeFileTasks(g.Type, "no-such-node"); ok {
		t.Error("a node the cluster does not have gave tasks")
	}
	byClass := r.Model.PlaceByClass()
	aliases := 0
	for _, n := range r.Model.Cluster.Nodes {
		ng := byClass.Graph(g.Type).Node(n.Name)
		if ng == nil || ng.Node == n.Name {
			continue
		}
		aliases++
		if _, ok := byClass.NodeFileTasks(g.Type, n.Name); ok {
			t.Errorf("%s: a node its class stands for gave tasks", n.Name)
		}
	}
	if aliases == 0 {
		t.Fatal("no node of the cluster was placed through its class")
	}
}
