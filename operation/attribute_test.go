package operation

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/mapfs"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// unitsRepo is the quickstart with two more clusters: lab, on the quickstart
// release with the sdn plugin (which no other cluster enables), and next, on a
// second release (quickstart-2.0, plugin quickstart2).
func unitsRepo(t *testing.T) fstest.MapFS {
	t.Helper()
	files, err := mapfs.Read("../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	demo := string(files["clusters/demo.yaml"].Data)
	lab := strings.Replace(strings.Replace(demo, "cluster: demo ", "cluster: lab ", 1), "plugins: [monitoring]", "plugins: [monitoring, sdn]", 1)
	files["clusters/lab.yaml"] = &fstest.MapFile{Data: []byte(lab)}
	for name, f := range maps.Clone(files) {
		if rest, ok := strings.CutPrefix(name, "plugins/quickstart/"); ok {
			data := string(f.Data)
			if rest == "metadata.yaml" {
				data = strings.NewReplacer("name: quickstart\n", "name: quickstart2\n", "release_name: quickstart ", "release_name: quickstart2 ",
					"version: quickstart-1.0", "version: quickstart-2.0").Replace(data)
			}
			files["plugins/quickstart2/"+rest] = &fstest.MapFile{Data: []byte(data)}
		}
	}
	next := strings.NewReplacer("cluster: demo ", "cluster: next ", "release: quickstart-1.0", "release: quickstart-2.0",
		"plugins: [monitoring]", "plugins: []", "  - additional_service:monitoring   # from the monitoring plugin\n", "",
		"node-6: {id: 6, roles: [monitor]}", "node-6: {id: 6, roles: [compute]}").Replace(demo)
	files["clusters/next.yaml"] = &fstest.MapFile{Data: []byte(next)}
	return files
}

// TestOperationHoldsWhatAnErrorConcerns: an error holds the clusters it
// concerns and no other; the held clusters keep their applied artifacts and
// state, the others are applied.
func TestOperationHoldsWhatAnErrorConcerns(t *testing.T) {
	ctx := context.Background()
	base := unitsRepo(t)
	for _, tc := range []struct {
		name  string
		edit  func(*testing.T, fstest.MapFS)
		held  []string
		orphs int // errors that hold no cluster
	}{
		{name: "nothing broken"},
		{name: "a plugin one cluster enables", held: []string{"lab"},
			edit: func(t *testing.T, f fstest.MapFS) {
				replaceIn(t, f, "plugins/sdn/deployment_tasks.yaml", "type: puppet", "type: nosuch")
			}},
		{name: "a release", held: []string{"demo", "demo-hcl", "lab"},
			edit: func(t *testing.T, f fstest.MapFS) {
				replaceIn(t, f, "plugins/quickstart/graphs/deployment.yaml", "type: puppet", "type: nosuch")
			}},
		{name: "the other release", held: []string{"next"},
			edit: func(t *testing.T, f fstest.MapFS) {
				replaceIn(t, f, "plugins/quickstart2/graphs/deployment.yaml", "type: puppet", "type: nosuch")
			}},
		{name: "fuelsync.yaml", held: []string{"demo", "demo-hcl", "lab", "next"},
			edit: func(t *testing.T, f fstest.MapFS) {
				f["fuelsync.yaml"] = &fstest.MapFile{Data: []byte("interval: often\n")}
			}},
		{name: "a spec that does not parse", held: []string{"demo"},
			edit: func(t *testing.T, f fstest.MapFS) { replaceIn(t, f, "clusters/demo.yaml", "nodes:", "nodes: [") }},
		{name: "a spec's unknown role", held: []string{"demo-hcl"},
			edit: func(t *testing.T, f fstest.MapFS) {
				replaceIn(t, f, "clusters/demo-hcl.hcl", `roles = ["compute", "storage"]`, `roles = ["computee", "storage"]`)
			}},
		{name: "a plugin no cluster uses", orphs: 1,
			edit: func(t *testing.T, f fstest.MapFS) {
				for name, file := range maps.Clone(f) {
					if rest, ok := strings.CutPrefix(name, "plugins/sdn/"); ok && rest != "components.yaml" {
						data := string(file.Data)
						if rest == "metadata.yaml" {
							data = strings.Replace(data, "name: sdn\n", "name: unused\n", 1)
						}
						if rest == "deployment_tasks.yaml" {
							data = strings.Replace(data, "type: shell", "type: nosuch", 1)
						}
						f["plugins/unused/"+rest] = &fstest.MapFile{Data: []byte(data)}
					}
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := state.Open(filepath.Join(t.TempDir(), "wd"))
			op := &Operation{Workdir: w, ToolVersion: "test"}
			first, err := op.Run(ctx, Request{Revision: source.Revision{SHA: source.WorkingTree, FS: base}, Apply: true})
			if err != nil || first.Next == nil || len(first.Held()) > 0 {
				t.Fatalf("the first apply: %v, held %v %v", err, first.Held(), first.Diagnostics)
			}
			before := w.SetFS(first.Next.Serial)
			// Each cluster's node-4 gets the storage role too: every cluster
			// changes, so the held ones are told apart.
			f := maps.Clone(base)
			for name, file := range f {
				if strings.HasPrefix(name, "clusters/") {
					data := strings.NewReplacer("node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}",
						`    roles = ["compute"]`, `    roles = ["compute", "storage"]`).Replace(string(file.Data))
					f[name] = &fstest.MapFile{Data: []byte(data)}
				}
			}
			if tc.edit != nil {
				tc.edit(t, f)
			}
			res, err := op.Run(ctx, Request{Revision: source.Revision{SHA: source.WorkingTree, FS: f}, Apply: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.held, res.Held()); diff != "" {
				t.Errorf("held (-want +got):\n%s\n%v", diff, res.Diagnostics)
			}
			if len(res.Orphans) != tc.orphs {
				t.Errorf("%d errors that hold no cluster, want %d: %v", len(res.Orphans), tc.orphs, res.Orphans)
			}
			st := res.Next
			if st == nil {
				t.Fatalf("nothing applied: %s", res.Outcome)
			}
			after := w.SetFS(st.Serial)
			for _, c := range []string{"demo", "demo-hcl", "lab", "next"} {
				held := slices.Contains(tc.held, c)
				cs := st.Clusters[c]
				if cs == nil || len(cs.Nodes) != 6 {
					t.Fatalf("cluster %s in the state: %+v", c, cs)
				}
				wantStatus, wantRoles := state.StatusSynced, 2
				if held {
					wantStatus, wantRoles = state.StatusHeld, 1
				}
				if cs.Status != wantStatus || len(cs.Nodes["node-4"].Roles) != wantRoles {
					t.Errorf("cluster %s: status %s, node-4's roles %v", c, cs.Status, cs.Nodes["node-4"].Roles)
				}
				if held && (len(cs.Problems) == 0 || cs.Revision != first.Next.Clusters[c].Revision) {
					t.Errorf("held cluster %s: problems %q, revision %q", c, cs.Problems, cs.Revision)
				}
				name := c + "/nodes/node-4/default.yaml"
				was, _ := fs.ReadFile(before, name)
				now, err := fs.ReadFile(after, name)
				if err != nil || (string(was) == string(now)) != held {
					t.Errorf("cluster %s: node-4's graph changed %v (held %v), %v", c, string(was) != string(now), held, err)
				}
			}
		})
	}
}

func replaceIn(t *testing.T, f fstest.MapFS, name, old, new string) {
	t.Helper()
	data := string(f[name].Data)
	if !strings.Contains(data, old) {
		t.Fatalf("%s has no %q", name, old)
	}
	f[name] = &fstest.MapFile{Data: []byte(strings.Replace(data, old, new, 1))}
}

// TestOperationStopsWhenNotLeading: an operation whose Leading says the
// leadership is lost writes nothing: not the lock's tidying, not a set, not a
// state (a replica paused past its lease).
func TestOperationStopsWhenNotLeading(t *testing.T) {
	errNotLeader := errors.New("this replica no longer leads")
	ctx := context.Background()
	w := state.Open(filepath.Join(t.TempDir(), "wd"))
	repo := unitsRepo(t)
	calls := 0
	op := &Operation{Workdir: w, ToolVersion: "test", Leading: func() error {
		calls++
		if calls > 2 {
			return errNotLeader
		}
		return nil
	}}
	// The first two checks pass (before the lock, before tidying): the third,
	// before publishing, stops it.
	_, err := op.Run(ctx, Request{Revision: source.Revision{SHA: source.WorkingTree, FS: repo}, Apply: true})
	if !errors.Is(err, errNotLeader) || calls != 3 {
		t.Fatalf("apply with the leadership lost before publishing: %v after %d checks", err, calls)
	}
	st, err := w.ReadState()
	if err != nil || st.Serial != 0 {
		t.Fatalf("the state after a refused apply: %v %+v", err, st)
	}
	if sets, _ := os.ReadDir(filepath.Join(w.Dir, "artifacts")); len(sets) != 0 {
		t.Errorf("sets written: %v", sets)
	}
	// Lost before the lock: nothing at all, not even the lock file.
	w2 := state.Open(filepath.Join(t.TempDir(), "wd2"))
	op = &Operation{Workdir: w2, ToolVersion: "test", Leading: func() error { return errNotLeader }}
	if _, err := op.Run(ctx, Request{Revision: source.Revision{SHA: source.WorkingTree, FS: repo}, Apply: true}); !errors.Is(err, errNotLeader) {
		t.Fatalf("apply with the leadership lost: %v", err)
	}
	if _, err := os.Stat(w2.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the work directory was made: %v", err)
	}
}

// TestOperationNeverDeletesOnAGuess: a spec that no longer parses, whose
// cluster has another name than its file's, in a state written before states
// recorded each cluster's file: the applied cluster is held, not deleted.
func TestOperationNeverDeletesOnAGuess(t *testing.T) {
	ctx := context.Background()
	files := unitsRepo(t)
	replaceIn(t, files, "clusters/lab.yaml", "cluster: lab ", "cluster: other ")
	w := state.Open(filepath.Join(t.TempDir(), "wd"))
	op := &Operation{Workdir: w, ToolVersion: "test"}
	first, err := op.Run(ctx, Request{Revision: source.Revision{SHA: source.WorkingTree, FS: files}, Apply: true})
	if err != nil || first.Next == nil || first.Next.Clusters["other"] == nil {
		t.Fatalf("the first apply: %v %v", err, first.Diagnostics)
	}
	// The state as an older fuelsync wrote it: no file per cluster.
	lock, err := w.Lock(ctx, "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	old := *first.Next
	old.Clusters = map[string]*state.ClusterState{}
	for name, cs := range first.Next.Clusters {
		c := *cs
		c.File, c.Status, c.Revision, c.Serial = "", "", "", 0
		old.Clusters[name] = &c
	}
	old.Serial++
	files2 := map[string][]byte{}
	for name := range old.Artifacts {
		data, err := fs.ReadFile(w.SetFS(first.Next.Serial), name)
		if err != nil {
			t.Fatal(err)
		}
		files2[name] = data
	}
	if err := w.Publish(lock, &old, func(put func(string, []byte) error) error {
		for name, data := range files2 {
			if err := put(name, data); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	lock.Unlock()

	f := maps.Clone(files)
	replaceIn(t, f, "clusters/lab.yaml", "nodes:", "nodes: [")
	res, err := op.Run(ctx, Request{Revision: source.Revision{SHA: source.WorkingTree, FS: f}, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Cluster("other"); c == nil || c.Status != state.StatusHeld {
		t.Fatalf("cluster other: %+v (held: %v)", c, res.Held())
	}
	if res.Plan.Changes.Summary.Delete != 0 {
		t.Errorf("nodes deleted: %+v", res.Plan.Changes.Summary)
	}
}
