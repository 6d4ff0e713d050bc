package repogen

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/hashicorp/hcl/v2"
)

func diagText(repo *loader.Repo, diags hcl.Diagnostics) string {
	var b bytes.Buffer
	w := hcl.NewDiagnosticTextWriter(&b, repo.Sources.Files(), 100, false)
	_ = w.WriteDiagnostics(diags)
	return b.String()
}

func TestGenerateLoads(t *testing.T) {
	s := Spec{Plugins: 5, Tasks: 200, Nodes: 50, Clusters: 3, Seed: 1}
	fsys := Generate(s)
	repo, diags := loader.Load(fsys, loader.Options{})
	if diags.HasErrors() {
		t.Fatalf("Load: errors:\n%s", diagText(repo, diags))
	}
	if len(diags) > 0 {
		t.Errorf("Load: unexpected warnings:\n%s", diagText(repo, diags))
	}
	if got := len(repo.Plugins); got != s.Plugins {
		t.Errorf("plugins = %d, want %d", got, s.Plugins)
	}
	if got := len(repo.Releases); got != 1 || repo.Releases[0].Version != ReleaseVersion {
		t.Errorf("releases = %d, want 1 (%s)", got, ReleaseVersion)
	}
	if got := Count(repo, 0).Tasks; got != s.Tasks {
		t.Errorf("tasks = %d, want %d", got, s.Tasks)
	}
	if got := len(repo.Clusters); got != s.Clusters {
		t.Errorf("clusters = %d, want %d", got, s.Clusters)
	}
	if got := Count(repo, 0).Nodes; got != s.Nodes {
		t.Errorf("nodes = %d, want %d", got, s.Nodes)
	}
	hcl := 0
	for _, c := range repo.Clusters {
		if strings.HasSuffix(c.File, ".hcl") {
			hcl++
		}
	}
	if hcl == 0 {
		t.Errorf("no HCL cluster among %d clusters", len(repo.Clusters))
	}
	// The release graphs: default spread over several files, and provision.
	var types []string
	for _, g := range repo.Releases[0].Graphs {
		types = append(types, g.Type)
	}
	if !reflect.DeepEqual(types, []string{"default", "provision"}) {
		t.Errorf("release graphs = %v, want [default provision]", types)
	}
	graphFiles := 0
	for name := range fsys {
		if strings.HasPrefix(name, "plugins/"+ReleasePlugin+"/graphs/") {
			graphFiles++
		}
	}
	if graphFiles < 2 {
		t.Errorf("release graph files = %d, want several", graphFiles)
	}
}

func TestGenerateSizes(t *testing.T) {
	for _, s := range []Spec{
		{Plugins: 1, Tasks: 0, Nodes: 1, Clusters: 1},
		{Plugins: 2, Tasks: 1000, Nodes: 7, Clusters: 6, Seed: 3},
		{Plugins: 12, Tasks: 777, Nodes: 101, Clusters: 9, Seed: 4},
	} {
		fsys := Generate(s)
		repo, diags := loader.Load(fsys, loader.Options{})
		if diags.HasErrors() {
			t.Fatalf("%+v: Load: errors:\n%s", s, diagText(repo, diags))
		}
		want := max(s.Tasks, s.MinTasks())
		if got := Count(repo, 0).Tasks; got != want {
			t.Errorf("%+v: tasks = %d, want %d", s, got, want)
		}
		if got := Count(repo, 0).Nodes; got != max(s.Nodes, s.Clusters) {
			t.Errorf("%+v: nodes = %d, want %d", s, got, s.Nodes)
		}
		if got := len(repo.Plugins); got != s.Plugins {
			t.Errorf("%+v: plugins = %d, want %d", s, got, s.Plugins)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	s := Spec{Plugins: 5, Tasks: 200, Nodes: 50, Clusters: 3, Seed: 42}
	a, b := Generate(s), Generate(s)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("Generate gave different repositories for the same Spec")
	}
	s.Seed++
	if reflect.DeepEqual(a, Generate(s)) {
		t.Error("Generate ignored the seed")
	}
}

func TestWriteDir(t *testing.T) {
	s := Spec{Plugins: 3, Tasks: 100, Nodes: 10, Clusters: 2, Seed: 7}
	fsys := Generate(s)
	dir := t.TempDir()
	if err := WriteDir(fsys, dir); err != nil {
		t.Fatal(err)
	}
	for name, f := range fsys {
		if f.Mode.IsDir() {
			continue
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.Data) {
			t.Errorf("%s: written bytes differ", name)
		}
	}
	repo, diags := loader.Load(os.DirFS(dir), loader.Options{})
	if diags.HasErrors() {
		t.Fatalf("Load from disk: errors:\n%s", diagText(repo, diags))
	}
	if got := Count(repo, 0).Nodes; got != s.Nodes {
		t.Errorf("nodes from disk = %d, want %d", got, s.Nodes)
	}
}

// TestHeavyRenders: the heavy shape is valid at a small size (it loads without
// diagnostics and renders), and has what makes it heavy: four clusters, more
// cross-depends entries than the usual shape, and stage post_deployment_start
// on sync requiring the tasks of every node.
func TestHeavyRenders(t *testing.T) {
	s := Heavy(120)
	fsys := Generate(s)
	repo, diags := loader.Load(fsys, loader.Options{})
	if len(diags) > 0 {
		t.Fatalf("Load:\n%s", diagText(repo, diags))
	}
	if got := Count(repo, 0); got.Clusters != 4 || got.Nodes != 120 || got.Tasks != 5000 || got.Plugins != 51 {
		t.Errorf("counts %+v", got)
	}
	rs, diags := render.Render(repo, render.Options{})
	if diags.HasErrors() {
		t.Fatalf("Render:\n%s", diagText(repo, diags))
	}
	crossEntries := func(fsys fstest.MapFS) int {
		n := 0
		for _, f := range fsys {
			n += bytes.Count(f.Data, []byte("\n    - name: "))
		}
		return n
	}
	usual := Generate(Spec{Plugins: 51, Tasks: 5000, Nodes: 120, Clusters: 4, Seed: 1})
	if h, u := crossEntries(fsys), crossEntries(usual); h < 3*u {
		t.Errorf("%d cross-depends entries, the usual shape %d: want over 3 times as many", h, u)
	}
	// post_deployment_start on sync requires a task of each of the cluster's nodes.
	r := rs[0]
	sync := r.Graph("default").Node(render.SyncNode)
	if sync == nil {
		t.Fatal("no sync node")
	}
	stage := sync.Task("post_deployment_start")
	if stage == nil {
		t.Fatal("no post_deployment_start on sync")
	}
	nodes := map[string]bool{}
	for _, e := range stage.AllRequires() {
		nodes[e.Node()] = true
	}
	if len(nodes) < len(r.Model.Cluster.Nodes) {
		t.Errorf("post_deployment_start requires tasks of %d nodes of %d", len(nodes), len(r.Model.Cluster.Nodes))
	}
}

// TestMitakaRenders: the real-data shape is valid at a small size: it loads
// and renders with the example's own warnings only (those of its upstream
// files), and has its four kinds of clusters with every example
// plugin enabled in one, and nodes of several roles.
func TestMitakaRenders(t *testing.T) {
	fsys := Generate(Mitaka(60))
	repo, diags := loader.Load(fsys, loader.Options{})
	rs, more := render.Render(repo, render.Options{})
	for _, d := range append(diags, more...) {
		if d.Severity == hcl.DiagError || !strings.HasPrefix(d.Subject.Filename, "plugins/") {
			t.Errorf("%s: %s", d.Subject, d.Summary)
		}
	}
	if got := Count(repo, 0); got.Clusters != 4 || got.Nodes != 60 || len(rs) != 4 {
		t.Fatalf("counts %+v, %d rendered", got, len(rs))
	}
	plugins := map[string]bool{}
	multi := 0
	for _, r := range rs {
		for _, p := range r.Model.Plugins {
			plugins[p.Plugin.Name] = true
		}
		for _, n := range r.Model.Cluster.Nodes {
			if len(n.Roles) > 1 {
				multi++
			}
		}
	}
	if len(plugins) != 4 {
		t.Errorf("plugins enabled: %v, want the example's four", plugins)
	}
	if multi < 30 {
		t.Errorf("%d nodes of several roles of 60", multi)
	}
}
