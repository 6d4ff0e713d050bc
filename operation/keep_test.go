//go:build linux && fuelsync_testhooks

package operation_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fuelsync/fuelsync/base/failpoint"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
)

// TestOneNodeApplyReadsNoUnchangedCluster: an apply that changes one node of
// cluster demo reads none of the files of cluster demo-hcl, which it keeps
// (their stat says the applied set holds them unchanged), neither in the
// applied set nor in the object store — the apply right after the first
// included; a file of demo-hcl written in place is read, found changed and
// repaired by the next apply.
func TestOneNodeApplyReadsNoUnchangedCluster(t *testing.T) {
	ctx := context.Background()
	dir, repo, loop, st := appliedTestRepo(t)
	wd := loop.Workdir
	kept := map[string]bool{} // the artifacts and objects of demo-hcl only
	for name, sum := range st.Artifacts {
		if strings.HasPrefix(name, "demo-hcl/") {
			kept[name] = true
			kept[filepath.Join(wd.Dir, "objects", sum[:2], sum)] = true
		}
	}
	for name, sum := range st.Artifacts {
		if !strings.HasPrefix(name, "demo-hcl/") {
			delete(kept, filepath.Join(wd.Dir, "objects", sum[:2], sum))
		}
	}
	if len(kept) < 10 {
		t.Fatalf("demo-hcl has %d artifacts and objects of its own", len(kept))
	}
	var mu sync.Mutex
	var read []string
	failpoint.Enable(failpoint.StateRead, func(what ...string) error {
		mu.Lock()
		defer mu.Unlock()
		read = append(read, what...)
		return nil
	})
	t.Cleanup(func() { failpoint.Disable(failpoint.StateRead) })
	roles := []string{"[compute]", "[compute, storage]"}
	apply := func(what string) []string {
		t.Helper()
		gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: "+roles[0]+"}", "node-4: {id: 4, roles: "+roles[1]+"}")
		roles[0], roles[1] = roles[1], roles[0]
		gittest.Commit(t, repo, what)
		mu.Lock()
		read = nil
		mu.Unlock()
		if o := loop.ReconcileOnce(ctx); o != operation.Applied {
			t.Fatalf("%s: %s %q", what, o, loop.Status().Errors)
		}
		mu.Lock()
		defer mu.Unlock()
		var got []string
		for _, r := range read {
			if kept[r] {
				got = append(got, r)
			}
		}
		return got
	}
	if got := apply("node-4 storage"); len(got) > 0 {
		t.Errorf("the apply after the first read demo-hcl's %q", got)
	}
	if got := apply("node-4 compute only"); len(got) > 0 {
		t.Errorf("the next apply read demo-hcl's %q", got)
	}

	// Written in place (the applied file, its tree's and its object are one
	// inode): read, and the cluster's files written anew.
	const file = "demo-hcl/nodes/node-1/default.yaml"
	cur, err := wd.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(wd.SetDir(cur.Serial), file)
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.Replace(want, []byte("node-1"), []byte("node-X"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := apply("node-4 storage again"); len(got) == 0 {
		t.Error("the apply after a file of demo-hcl was written in place read none of demo-hcl's")
	}
	next, err := wd.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(wd.SetDir(next.Serial), file)); err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s after the repairing apply: %v\n%s", file, err, got)
	}
	if got := apply("node-4 compute only again"); len(got) > 0 {
		t.Errorf("the apply after the repair read demo-hcl's %q", got)
	}
}
