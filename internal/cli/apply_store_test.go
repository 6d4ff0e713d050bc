package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/reconcile"
)

// setInodes maps each file and directory under root (relative, slashed) to its
// inode and the bytes of its blocks.
func setInodes(t *testing.T, root string) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		st := fi.Sys().(*syscall.Stat_t)
		out[filepath.ToSlash(rel)] = [2]int64{int64(st.Ino), st.Blocks * 512}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestApplyStoreOneClusterChange applies a repository of 20 clusters, then the
// same with one node removed from one cluster: the second applied set's files
// are new inodes only where their content changed (its state, and the files of
// that cluster the change touched); every other file is the same inode as in
// the first set (a hard link to the same object), where it used to be a copy.
// What a set adds beyond them is its own directories.
func TestApplyStoreOneClusterChange(t *testing.T) {
	repo, clusterFile, _, b := applyRepoSpec(t, repogen.Spec{Plugins: 2, Tasks: 60, Nodes: 60, Clusters: 20, Seed: 7})
	wd := filepath.Join(t.TempDir(), "wd")
	apply := func() *reconcile.State {
		t.Helper()
		if out, err := fuelsyncCmd("--repo", repo, "--workdir", wd, "-q", "apply", "--auto-approve").CombinedOutput(); err != nil {
			t.Fatalf("apply: %v\n%s", err, out)
		}
		return checkWorkdir(t, wd)
	}
	st1 := apply()
	if err := os.WriteFile(clusterFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	st2 := apply()
	changed := []string{".state.json"}
	for name, sum := range st2.Artifacts {
		if st1.Artifacts[name] != sum {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	w := reconcile.Open(wd)
	set1, set2 := setInodes(t, w.SetDir(1)), setInodes(t, w.SetDir(2))
	inodes1 := map[int64]bool{}
	var full, files, dirs int64
	for _, v := range set1 {
		inodes1[v[0]] = true
		full += v[1]
	}
	var fresh []string
	for name, v := range set2 {
		if _, isFile := st2.Artifacts[name]; !isFile && name != ".state.json" {
			dirs += v[1]
			continue
		}
		if !inodes1[v[0]] {
			fresh = append(fresh, name)
			files += v[1]
		}
	}
	slices.Sort(fresh)
	if diff := cmp.Diff(changed, fresh); diff != "" {
		t.Errorf("files of set 2 not shared with set 1 (-changed content +new inodes):\n%s", diff)
	}
	t.Logf("%d of %d files changed; a full set takes %d bytes on disk; the second adds %d in files (%.1f%%) and %d in its own directories",
		len(changed), len(st2.Artifacts)+1, full, files, 100*float64(files)/float64(full), dirs)
	if len(changed) > len(st2.Artifacts)/5 {
		t.Errorf("%d of %d files changed: the fixture changes more than one cluster", len(changed), len(st2.Artifacts))
	}
}
