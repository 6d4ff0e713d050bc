package render

import (
	"cmp"
	"os"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// flatGraph is a ClusterGraph as comparable data: per node, its tasks with
// their type, fields and requirements (sorted: the expanded view sorts the
// stages' requirements, format 2 implies them after the written ones).
type flatTask struct {
	ID, Type string
	Fields   map[string]any
	Requires []Requirement
}

func flatten(t *testing.T, g *ClusterGraph) map[string][]flatTask {
	t.Helper()
	out := map[string][]flatTask{}
	for _, n := range g.Nodes {
		for _, tk := range n.Tasks {
			f, err := tk.Def.Fields()
			if err != nil {
				t.Fatalf("%s/%s: %v", n.Name, tk.ID, err)
			}
			reqs := slices.Clone(tk.Requires)
			slices.SortFunc(reqs, func(a, b Requirement) int { return cmp.Or(cmp.Compare(a.Node, b.Node), cmp.Compare(a.Task, b.Task)) })
			out[n.Name] = append(out[n.Name], flatTask{tk.ID, tk.Def.Type, f, reqs})
		}
	}
	return out
}

func storedFS(files map[string][]byte) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: data}
	}
	return fsys
}

// TestReadClusterGraphFormats: a cluster's graph read from the stored set
// (format 2: catalogue, implied stage fan-in) equals the one read from the
// expanded set (format 1), for every example and a generated fleet with
// cross-node edges and fan-in.
func TestReadClusterGraphFormats(t *testing.T) {
	cases := map[string]func() (*loader.Repo, hcl.Diagnostics){}
	for _, name := range []string{"quickstart", "fuel-mitaka"} {
		cases[name] = func() (*loader.Repo, hcl.Diagnostics) {
			return loader.Load(os.DirFS("../examples/"+name), loader.Options{})
		}
	}
	cases["generated"] = func() (*loader.Repo, hcl.Diagnostics) {
		spec := repogen.Spec{Plugins: 4, Tasks: 200, Nodes: 60, Clusters: 1, Seed: 3, CrossDepends: 60, StageFanIn: true}
		return loader.Load(repogen.Generate(spec), loader.Options{})
	}
	for name, load := range cases {
		t.Run(name, func(t *testing.T) {
			repo, ld := load()
			rs := loadRender(t, repo, ld)
			stored, err := Files(rs, "rev", "test")
			if err != nil {
				t.Fatal(err)
			}
			expanded, err := FilesExpanded(rs, "rev", "test")
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rs {
				for _, g := range r.Graphs {
					two, err := ReadClusterGraph(storedFS(stored), r.Model.Cluster.Name, g.Type)
					if err != nil {
						t.Fatal(err)
					}
					one, err := ReadClusterGraph(storedFS(expanded), r.Model.Cluster.Name, g.Type)
					if err != nil {
						t.Fatal(err)
					}
					if d := gocmp.Diff(flatten(t, one), flatten(t, two)); d != "" {
						t.Errorf("%s/%s: format 2 differs from format 1 (-1 +2):\n%s", r.Model.Cluster.Name, g.Type, d)
					}
					if d := gocmp.Diff(one.Groups, two.Groups); d != "" || len(g.Nodes) != len(two.Nodes) {
						t.Errorf("%s/%s: groups differ or %d nodes, want %d: %s", r.Model.Cluster.Name, g.Type, len(two.Nodes), len(g.Nodes), d)
					}
				}
			}
		})
	}
}
