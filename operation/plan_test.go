package operation_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	git "github.com/go-git/go-git/v5"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

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
	want, err := operation.MakePlan(wd, st, rs, old, rev, "test")
	if err != nil {
		t.Fatal(err)
	}
	var asked [][]string
	applied := func(clusters []string) []*render.Rendered {
		asked = append(asked, clusters)
		rs, _ := render.Render(oldRepo, render.Options{Clusters: clusters, State: st})
		return rs
	}
	got, err := operation.PlanWith(wd, st, operation.PlanInput{Rendered: rs, Applied: applied, Revision: rev, ToolVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	demo, _ := render.Render(newRepo, render.Options{Clusters: []string{"demo"}, State: st})
	kept, err := operation.PlanWith(wd, st, operation.PlanInput{Rendered: demo, Kept: []string{"demo-hcl"}, Applied: applied, Revision: rev, ToolVersion: "test"})
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
	for what, p := range map[string]*operation.Plan{"restricted": got, "kept": kept} {
		if j, _ := json.MarshalIndent(p, "", " "); !bytes.Equal(j, wj) {
			t.Errorf("the %s plan differs from the full one:\n%s\nfull:\n%s", what, j, wj)
		}
	}
	// An Operation places the applied revision's tasks one node a class, and
	// only for the causes that need it: the same change set, here and with a
	// task of the release renamed (removed from every node: its cause needs
	// the applied placement).
	opPlanLikeFull(t, dir, wd, st, rev, want, "demo")
	gittest.EditFile(t, filepath.Join(dir, "plugins", "quickstart", "graphs", "deletion.yaml"), "id: erase_node\n", "id: erase_node_v2\n")
	rev = gittest.Commit(t, repo, "erase_node renamed")
	rs, diags = render.Render(load(rev), render.Options{State: st})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if want, err = operation.MakePlan(wd, st, rs, old, rev, "test"); err != nil {
		t.Fatal(err)
	}
	if wj, _ := json.Marshal(want); !strings.Contains(string(wj), `{"kind":"task_undefined","subject":"erase_node","source":"plugins/quickstart/graphs/deletion.yaml:5","removed":["deletion/erase_node"]}`) {
		t.Fatalf("the change set has no task_undefined cause of erase_node:\n%s", wj)
	}
	opPlanLikeFull(t, dir, wd, st, rev, want, "demo", "demo-hcl")
}

// opPlanLikeFull fails the test unless an Operation's plan of rev in the
// repository dir, work directory wd at state st, has the change set of want,
// made with full renders of both sides; the applied revision is placed for
// the clusters placed only (sorted).
func opPlanLikeFull(t *testing.T, dir string, wd *state.Workdir, st *state.State, rev string, want *operation.Plan, placed ...string) {
	t.Helper()
	open := func(rev string) (fs.FS, error) {
		fsys, _, err := loader.OpenRevision(dir, rev)
		return fsys, err
	}
	fsys, err := open(rev)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // clusters are compared on several goroutines
	var asked []string
	op := &operation.Operation{Workdir: wd, ToolVersion: "test", OpenRevision: open,
		OnRenderApplied: func(c []string) { mu.Lock(); asked = append(asked, c...); mu.Unlock() }}
	res, err := op.Run(context.Background(), operation.Request{Revision: source.Revision{SHA: rev, FS: fsys}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Sort(asked); !slices.Equal(asked, placed) {
		t.Errorf("the operation placed the applied revision of %v, want %v", asked, placed)
	}
	got, _ := json.MarshalIndent(res.Plan.Changes, "", " ")
	if wc, _ := json.MarshalIndent(want.Changes, "", " "); !bytes.Equal(got, wc) {
		t.Errorf("the operation's change set differs from the full one:\n%s\nfull:\n%s", got, wc)
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
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("a new node: %s %q", o, loop.Status().Errors)
	}
	damage(filepath.Join(wd.SetDir(2), file))
	newNode()
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
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
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
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
func appliedTestRepo(t *testing.T) (string, *git.Repository, *controller.Loop, *state.State) {
	t.Helper()
	dir, repo := gittest.Quickstart(t)
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	st, err := loop.Workdir.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	return dir, repo, loop, st
}
