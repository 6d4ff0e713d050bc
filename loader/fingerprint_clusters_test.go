package loader

import (
	"os"
	"path/filepath"
	"testing"
)

// TestClusterFingerprints: a cluster's fingerprint changes with its own spec
// and with any shared input, not with another cluster's spec; a spec another
// document reads too (tasks_path) counts for every cluster; a cluster using
// Heat environments gets none.
func TestClusterFingerprints(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("README.md", "hello\n")
	write("clusters/a.yaml", "nodes: {n1: {id: 1, roles: [controller]}}\n")
	write("clusters/b.yaml", "nodes: {n2: {id: 2, roles: [controller]}}\n")
	write("clusters/c/cluster.yaml", "nodes: {n3: {id: 3, roles: [controller]}}\n")
	write("common/data.yaml", "a: 1\n")
	prints := func() map[string]string {
		t.Helper()
		fsys := os.DirFS(dir)
		repo, _ := Load(fsys, Options{})
		fp, err := ClusterFingerprints(fsys, Options{}, repo)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	base := prints()
	if len(base) != 3 || base["a"] == "" || base["b"] == "" || base["c"] == "" || base["a"] == base["b"] {
		t.Fatalf("fingerprints %v: want three distinct", base)
	}
	same := func(what string, want map[string]bool) map[string]string {
		t.Helper()
		got := prints()
		for c, changes := range want {
			if (got[c] != base[c]) != changes {
				t.Errorf("%s: cluster %s's fingerprint changed: %v, want %v", what, c, got[c] != base[c], changes)
			}
		}
		return got
	}
	write("README.md", "edited\n")
	same("a README edit", map[string]bool{"a": false, "b": false, "c": false})
	write("clusters/b.yaml", "nodes: {n2: {id: 2, roles: [controller]}, n4: {id: 4, roles: [compute]}}\n")
	same("b's spec edited", map[string]bool{"a": false, "b": true, "c": false})
	base = prints()
	write("clusters/c/cluster.yaml", "# c\nnodes: {n3: {id: 3, roles: [controller]}}\n")
	same("c's spec edited", map[string]bool{"a": false, "b": false, "c": true})
	base = prints()
	write("common/data.yaml", "a: 2\n")
	same("a shared file edited", map[string]bool{"a": true, "b": true, "c": true})
	base = prints()
	write("clusters/d.yaml", "nodes: {}\n")
	same("a cluster added", map[string]bool{"a": true, "b": true, "c": true})
	base = prints()

	// a reads b's spec through tasks_path: b's spec is a's input too.
	write("clusters/a.yaml", "nodes: {n1: {id: 1, roles: [controller]}}\ntasks_path: b.yaml\n")
	base = prints()
	write("clusters/b.yaml", "nodes: {n2: {id: 2, roles: [controller]}}\n")
	same("b's spec edited, read by a", map[string]bool{"a": true, "b": true, "c": true})
	write("clusters/a.yaml", "nodes: {n1: {id: 1, roles: [controller]}}\n")
	base = prints()

	// A link to a spec: the target is read under two names.
	if err := os.Symlink("b.yaml", filepath.Join(dir, "clusters", "e.yaml")); err != nil {
		t.Fatal(err)
	}
	base = prints()
	write("clusters/b.yaml", "# b\nnodes: {n2: {id: 2, roles: [controller]}}\n")
	same("a spec linked from another cluster's", map[string]bool{"a": true})

	// Heat environments: no fingerprint.
	write("clusters/a.yaml", "nodes: {n1: {id: 1, roles: [controller]}}\nenvironments: [../common/env.yaml]\n")
	if got := prints(); got["a"] != "" || got["c"] == "" {
		t.Errorf("a cluster with environments: fingerprints %v, want none for a", got)
	}
}
