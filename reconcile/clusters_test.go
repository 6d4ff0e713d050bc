package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestLoopRendersChangedClusterOnly: a commit changing one cluster's spec is
// reconciled by rendering that cluster alone; the other keeps its applied
// artifacts and its status, and the applied set and state are those of a
// work directory that rendered everything.
func TestLoopRendersChangedClusterOnly(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	wd := state.Open(filepath.Join(t.TempDir(), "wd"))
	var renders [][]string
	loop := &Loop{Workdir: wd, Source: &source.LocalSource{Path: dir}, ToolVersion: "test", onRender: func(c []string) { renders = append(renders, c) }}
	if o := loop.ReconcileOnce(ctx); o != Applied || len(renders) != 1 || len(renders[0]) != 2 {
		t.Fatalf("first reconcile: %s, renders %v %q", o, renders, loop.Status().Errors)
	}
	before := loop.Status().Clusters

	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute]}\n  node-7: {id: 7, roles: [compute]}")
	gittest.Commit(t, repo, "a new node")
	renders = nil
	if o := loop.ReconcileOnce(ctx); o != Applied || len(renders) != 1 || !slices.Equal(renders[0], []string{"demo"}) {
		t.Fatalf("a new node in demo: %s, renders %v (want demo only) %q", o, renders, loop.Status().Errors)
	}
	after := loop.Status().Clusters
	if len(after) != 2 || after[0].Name != before[0].Name || after[1].Name != before[1].Name {
		t.Fatalf("status clusters %+v, before %+v", after, before)
	}
	for i, c := range after {
		b, _ := json.Marshal(before[i])
		a, _ := json.Marshal(c)
		if changed := !bytes.Equal(a, b); changed != (c.Name == "demo") {
			t.Errorf("status of cluster %s: changed %v\n%s\n%s", c.Name, changed, b, a)
		}
	}

	// A work directory that renders everything: the same artifacts and state.
	full := state.Open(filepath.Join(t.TempDir(), "full"))
	renders = nil
	other := &Loop{Workdir: full, Source: &source.LocalSource{Path: dir}, ToolVersion: "test", onRender: func(c []string) { renders = append(renders, c) }}
	if o := other.ReconcileOnce(ctx); o != Applied || len(renders) != 1 || len(renders[0]) != 2 {
		t.Fatalf("full reconcile: %s, renders %v %q", o, renders, other.Status().Errors)
	}
	st, err := wd.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	fst, err := full.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	for what, pair := range map[string][2]any{
		"artifacts":      {st.Artifacts, fst.Artifacts},
		"clusters":       {clusterRecords(st), clusterRecords(fst)},
		"inputs":         {st.Inputs, fst.Inputs},
		"cluster inputs": {st.ClusterInputs, fst.ClusterInputs},
		"revision":       {st.Revision, fst.Revision},
	} {
		a, _ := json.Marshal(pair[0])
		b, _ := json.Marshal(pair[1])
		if !bytes.Equal(a, b) {
			t.Errorf("state %s: kept %s, full %s", what, a, b)
		}
	}
	if len(st.ClusterInputs) != 2 {
		t.Errorf("cluster inputs %v", st.ClusterInputs)
	}
	kept, fullFiles := setFiles(t, wd.SetFS(st.Serial)), setFiles(t, full.SetFS(fst.Serial))
	if len(kept) != len(fullFiles) || len(kept) == 0 {
		t.Errorf("%d files kept, %d rendered", len(kept), len(fullFiles))
	}
	for name, data := range fullFiles {
		if !bytes.Equal(kept[name], data) {
			t.Errorf("%s differs from the full render's", name)
		}
	}
}

// clusterRecords are the records of st's clusters but their serials (the
// history of the work directory).
func clusterRecords(st *state.State) map[string]state.ClusterState {
	out := map[string]state.ClusterState{}
	for name, cs := range st.Clusters {
		c := *cs
		c.Serial = 0
		out[name] = c
	}
	return out
}

// setFiles reads the artifacts of an applied set (SetFS).
func setFiles(t *testing.T, set fs.FS) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := fs.WalkDir(set, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(path.Base(name), ".") {
			return err
		}
		out[name], err = fs.ReadFile(set, name)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReusable: a cluster is reusable only with the same fingerprint, tool
// version and applied nodes and primaries, when its artifacts were applied.
func TestReusable(t *testing.T) {
	cs := &state.ClusterState{Nodes: map[string]state.NodeState{"n1": {ID: 1}}, Primary: map[string]string{"controller": "n1"}}
	st := &state.State{Serial: 1, Clusters: map[string]*state.ClusterState{"a": cs, "b": cs},
		Artifacts:     map[string]string{"a/cluster.yaml": "x", "b/cluster.yaml": "y"},
		ClusterInputs: map[string]string{"a": state.ClusterInputsKey("fa", "v1", cs), "b": state.ClusterInputsKey("fb", "v1", cs)}}
	for _, tc := range []struct {
		name  string
		files map[string]string
		tool  string
		want  []string
	}{
		{"same", map[string]string{"a": "fa", "b": "fb"}, "v1", []string{"a", "b"}},
		{"b changed", map[string]string{"a": "fa", "b": "fb2"}, "v1", []string{"a"}},
		{"another tool", map[string]string{"a": "fa", "b": "fb"}, "v2", nil},
		{"b unfingerprinted", map[string]string{"a": "fa"}, "v1", []string{"a"}},
	} {
		if got := st.Reusable(tc.files, tc.tool); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	moved := *st
	moved.Clusters = map[string]*state.ClusterState{"a": {Nodes: cs.Nodes, Primary: map[string]string{"controller": "n2"}}, "b": cs}
	if got := moved.Reusable(map[string]string{"a": "fa", "b": "fb"}, "v1"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("another primary in a: %v", got)
	}
	noSet := *st
	noSet.Artifacts = map[string]string{"b/cluster.yaml": "y"}
	if got := noSet.Reusable(map[string]string{"a": "fa", "b": "fb"}, "v1"); !slices.Equal(got, []string{"b"}) {
		t.Errorf("a not applied: %v", got)
	}
	old := *st
	old.ClusterInputs = nil
	if got := old.Reusable(map[string]string{"a": "fa", "b": "fb"}, "v1"); got != nil {
		t.Errorf("a state without cluster fingerprints: %v", got)
	}
}

// TestPlanAppliedRenderOfChangedClusters: the applied revision is rendered
// again for the clusters whose artifacts differ only, and the change set —
// its causes included — is the one made with a render of every cluster; so is
// the plan that keeps the unchanged cluster's applied artifacts.
func TestPlanAppliedRenderOfChangedClusters(t *testing.T) {
	dir, repo, loop, st := appliedTestRepo(t)
	wd := loop.Workdir
	load := func(rev string) *loader.Repo {
		t.Helper()
		fsys, _, err := loader.OpenRevision(dir, rev)
		if err != nil {
			t.Fatal(err)
		}
		r, diags := loader.Load(fsys, loader.Options{})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		return r
	}
	oldRepo := load(st.Revision)
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "roles: [compute, storage]", "roles: [compute]")
	rev := gittest.Commit(t, repo, "node-5 is no longer a storage node")
	newRepo := load(rev)

	rs, diags := render.Render(newRepo, render.Options{State: st})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	old, _ := render.Render(oldRepo, render.Options{State: st})
	want, err := MakePlan(wd, st, rs, old, rev, "test")
	if err != nil {
		t.Fatal(err)
	}
	var asked [][]string
	applied := func(clusters []string) []*render.Rendered {
		asked = append(asked, clusters)
		rs, _ := render.Render(oldRepo, render.Options{Clusters: clusters, State: st})
		return rs
	}
	got, err := PlanWith(wd, st, PlanInput{Rendered: rs, Applied: applied, Revision: rev, ToolVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	demo, _ := render.Render(newRepo, render.Options{Clusters: []string{"demo"}, State: st})
	kept, err := PlanWith(wd, st, PlanInput{Rendered: demo, Kept: []string{"demo-hcl"}, Applied: applied, Revision: rev, ToolVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if len(asked) != 2 || !slices.Equal(asked[0], []string{"demo"}) || !slices.Equal(asked[1], []string{"demo"}) {
		t.Errorf("the applied revision was rendered for %v, want demo twice", asked)
	}
	wj, _ := json.MarshalIndent(want, "", " ")
	if !strings.Contains(string(wj), `"role_removed"`) || !strings.Contains(string(wj), `"removed"`) {
		t.Fatalf("the change set has no role_removed cause with tasks taken away:\n%s", wj)
	}
	for what, p := range map[string]*Plan{"restricted": got, "kept": kept} {
		if j, _ := json.MarshalIndent(p, "", " "); !bytes.Equal(j, wj) {
			t.Errorf("the %s plan differs from the full one:\n%s\nfull:\n%s", what, j, wj)
		}
	}
}

// TestApplyKeptFileDamaged: a kept cluster's file changed in place in the
// applied set is taken from the object store (another set still links it);
// changed there too, it is not published: the apply fails and the state
// stays.
func TestApplyKeptFileDamaged(t *testing.T) {
	ctx := context.Background()
	dir, repo, loop, st := appliedTestRepo(t)
	wd := loop.Workdir
	const file = "demo-hcl/cluster.yaml"
	want, err := os.ReadFile(filepath.Join(wd.SetDir(1), file))
	if err != nil {
		t.Fatal(err)
	}
	damage := func(name string) {
		t.Helper()
		if err := os.Remove(name); err != nil { // linked: replaced, not written through
			t.Fatal(err)
		}
		if err := os.WriteFile(name, []byte("damaged\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	node := 7
	newNode := func() {
		t.Helper()
		gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}",
			fmt.Sprintf("node-4: {id: 4, roles: [compute]}\n  node-%d: {id: %d, roles: [compute]}", node, node))
		gittest.Commit(t, repo, "a new node")
		node++
	}

	// Set 2 links the kept file to the same object as set 1.
	newNode()
	if o := loop.ReconcileOnce(ctx); o != Applied {
		t.Fatalf("a new node: %s %q", o, loop.Status().Errors)
	}
	damage(filepath.Join(wd.SetDir(2), file))
	newNode()
	if o := loop.ReconcileOnce(ctx); o != Applied {
		t.Fatalf("a commit over a kept file changed in the set: %s %q", o, loop.Status().Errors)
	}
	if got, err := os.ReadFile(filepath.Join(wd.SetDir(3), file)); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the kept file published: %v %q", err, got)
	}

	sum := st.Artifacts[file]
	damage(filepath.Join(wd.SetDir(3), file))
	damage(filepath.Join(wd.Dir, "objects", sum[:2], sum))
	// Changed in the set and the store: the cluster is rendered again from
	// its applied revision and the file written anew (it wedged every apply).
	newNode()
	if o := loop.ReconcileOnce(ctx); o != Applied {
		t.Fatalf("a commit over a kept file changed in the set and the store: %s %q", o, loop.Status().Errors)
	}
	if got, err := os.ReadFile(filepath.Join(wd.SetDir(4), file)); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the kept file published after the repair: %v %q", err, got)
	}
	if st, err := wd.ReadState(); err != nil || st.Serial != 4 {
		t.Fatalf("the state after the repairing apply: %v %+v", err, st)
	}
}

// appliedTestRepo is testRepo reconciled once by a loop into a new work
// directory, with the state that apply recorded.
func appliedTestRepo(t *testing.T) (string, *git.Repository, *Loop, *state.State) {
	t.Helper()
	dir, repo := gittest.Quickstart(t)
	loop := &Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	if o := loop.ReconcileOnce(context.Background()); o != Applied {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	st, err := loop.Workdir.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	return dir, repo, loop, st
}
