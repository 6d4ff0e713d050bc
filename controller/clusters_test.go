package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
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
	if o := loop.ReconcileOnce(ctx); o != operation.Applied || len(renders) != 1 || len(renders[0]) != 2 {
		t.Fatalf("first reconcile: %s, renders %v %q", o, renders, loop.Status().Errors)
	}
	before := loop.Status().Clusters

	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute]}\n  node-7: {id: 7, roles: [compute]}")
	gittest.Commit(t, repo, "a new node")
	renders = nil
	if o := loop.ReconcileOnce(ctx); o != operation.Applied || len(renders) != 1 || !slices.Equal(renders[0], []string{"demo"}) {
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
	if o := other.ReconcileOnce(ctx); o != operation.Applied || len(renders) != 1 || len(renders[0]) != 2 {
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
