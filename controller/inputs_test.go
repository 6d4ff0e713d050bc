package controller

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestLoopNoInputChangeSkipsRender: a commit that changes no input of the
// applied set (the README) is reconciled as unchanged without loading or
// rendering; a commit that changes an input file is loaded, rendered and
// applied as usual; the state's input fingerprint survives the apply.
func TestLoopNoInputChangeSkipsRender(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	wd := state.Open(filepath.Join(t.TempDir(), "wd"))
	loads := 0
	loop := &Loop{Workdir: wd, Source: &source.LocalSource{Path: dir}, ToolVersion: "test", onLoad: func() { loads++ }}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied || loads != 1 {
		t.Fatalf("first reconcile: %s, %d loads %q", o, loads, loop.Status().Errors)
	}
	st, err := wd.ReadState()
	if err != nil || st.Inputs == "" {
		t.Fatalf("the applied state has no input fingerprint: %v %+v", err, st)
	}
	first := st.Inputs

	// A README edit: unchanged, nothing loaded.
	gittest.EditFile(t, filepath.Join(dir, "README.md"), "#", "# Edited:")
	readme := gittest.Commit(t, repo, "readme")
	if o := loop.ReconcileOnce(ctx); o != operation.NoChange || loads != 1 {
		t.Fatalf("a README commit: %s after %d loads (want unchanged, 1 load) %q", o, loads, loop.Status().Errors)
	}
	s := loop.Status()
	if s.Revision != readme || s.Serial != 1 || s.Changes == nil || !s.Changes.Empty() || !s.Ready || len(s.Clusters) != 2 {
		t.Errorf("status after the README commit: %+v", s)
	}
	if _, rev := loop.Model(); rev != readme {
		t.Errorf("the model's revision is %s, want %s", rev, readme)
	}
	if o := loop.ReconcileOnce(ctx); o != operation.Skipped || loads != 1 {
		t.Errorf("the README commit again: %s, %d loads", o, loads)
	}

	// A new file that is not read still changes the tree's listing: the normal
	// path, which finds no change.
	if err := os.WriteFile(filepath.Join(dir, "NOTES.txt"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Commit(t, repo, "notes")
	if o := loop.ReconcileOnce(ctx); o != operation.NoChange || loads != 2 {
		t.Fatalf("a new file: %s after %d loads (want unchanged, 2 loads)", o, loads)
	}

	// An input changed: loaded, rendered and applied; the new state has the
	// fingerprint of the new inputs.
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "roles:", "roles: # edited\n   ")
	gittest.Commit(t, repo, "cluster comment")
	o := loop.ReconcileOnce(ctx)
	if loads != 3 || (o != operation.NoChange && o != operation.Applied) {
		t.Fatalf("an input commit: %s after %d loads (want 3) %q", o, loads, loop.Status().Errors)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute]}\n  node-7: {id: 7, roles: [compute]}")
	gittest.Commit(t, repo, "a new node")
	if o := loop.ReconcileOnce(ctx); o != operation.Applied || loads != 4 {
		t.Fatalf("a new node: %s after %d loads (want applied, 4) %q", o, loads, loop.Status().Errors)
	}
	st, err = wd.ReadState()
	if err != nil || st.Inputs == "" || st.Inputs == first || st.Serial != 2 {
		t.Fatalf("the state after the second apply: %v serial %d inputs %q (first %q)", err, st.Serial, st.Inputs, first)
	}
	gittest.EditFile(t, filepath.Join(dir, "README.md"), "# Edited:", "# Edited again:")
	gittest.Commit(t, repo, "readme again")
	if o := loop.ReconcileOnce(ctx); o != operation.NoChange || loads != 4 {
		t.Fatalf("a README commit after the second apply: %s after %d loads (want unchanged, 4)", o, loads)
	}
}

// TestLoopOldStateWithoutFingerprint: a state written before fingerprints
// (no inputs) takes the normal path: every commit is loaded and rendered.
func TestLoopOldStateWithoutFingerprint(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	wd := state.Open(filepath.Join(t.TempDir(), "wd"))
	loads := 0
	loop := &Loop{Workdir: wd, Source: &source.LocalSource{Path: dir}, ToolVersion: "test", onLoad: func() { loads++ }}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	// The state as an older version wrote it.
	st, err := wd.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	old := *st
	old.Inputs = ""
	data, err := json.MarshalIndent(&old, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(wd.SetDir(st.Serial), ".state.json")
	if err := os.Remove(name); err != nil { // it may be linked into the object store
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if st, err := wd.ReadState(); err != nil || st.Inputs != "" {
		t.Fatalf("the old state: %v %+v", err, st)
	}
	gittest.EditFile(t, filepath.Join(dir, "README.md"), "#", "# Edited:")
	gittest.Commit(t, repo, "readme")
	if o := loop.ReconcileOnce(ctx); o != operation.NoChange || loads != 2 {
		t.Fatalf("a README commit over an old state: %s after %d loads (want unchanged, 2)", o, loads)
	}
}
