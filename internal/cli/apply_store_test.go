//go:build linux

package cli

import (
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/state"
)

// setInodes maps each file, directory and symlink under root (relative,
// slashed) to its inode and the bytes of its blocks. A symlink to a directory
// (a node directory shared as a tree) is followed: its files are the set's;
// the tree's own directory is listed under the link's name + "/".
func setInodes(t testing.TB, root string) map[string][2]int64 {
	t.Helper()
	out := map[string][2]int64{}
	var walk func(dir, prefix string)
	walk = func(dir, prefix string) {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			name := prefix + filepath.ToSlash(rel)
			if rel == "." {
				name = prefix
			}
			st := fi.Sys().(*syscall.Stat_t)
			out[name] = [2]int64{int64(st.Ino), st.Blocks * 512}
			if fi.Mode()&fs.ModeSymlink != 0 {
				target, err := filepath.EvalSymlinks(p)
				if err != nil {
					return err
				}
				if ti, err := os.Stat(target); err == nil && ti.IsDir() {
					walk(target, name+"/")
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	walk(root, "")
	return out
}

// TestApplyStoreOneClusterChange applies a repository of 20 clusters, then the
// same with one node removed from one cluster: the second applied set's files
// are new inodes only where their content changed (its state, and the files of
// that cluster the change touched); every other file is the same inode as in
// the first set (a hard link to the same object), where it used to be a copy.
// Every node directory is a symlink to a tree, the same as the first set's
// where none of its files changed, and each cluster's nodes directory a
// symlink to a nodeset of those links, the same as the first set's where no
// node directory changed; the directories a set has of its own are its root
// and each cluster's three (the cluster, tasks, graphs).
func TestApplyStoreOneClusterChange(t *testing.T) {
	repo, clusterFile, _, b := applyRepoSpec(t, repogen.Spec{Plugins: 2, Tasks: 60, Nodes: 60, Clusters: 20, Seed: 7})
	wd := filepath.Join(t.TempDir(), "wd")
	apply := func() *state.State {
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
	changed := []string{".seal", ".state.json"}
	changedDirs := map[string]bool{}
	for name, sum := range st2.Artifacts {
		if st1.Artifacts[name] != sum {
			changed = append(changed, name)
			changedDirs[path.Dir(name)] = true
		}
	}
	slices.Sort(changed)
	w := state.Open(wd)
	set1, set2 := setInodes(t, w.SetDir(1)), setInodes(t, w.SetDir(2))
	inodes1 := map[int64]bool{}
	var full, files, trees, dirs int64
	for _, v := range set1 {
		inodes1[v[0]] = true
		full += v[1]
	}
	var fresh, ownDirs, newTrees, newNodesets []string
	nodeDirs := 0
	for name, v := range set2 {
		if _, isFile := st2.Artifacts[name]; isFile || name == ".state.json" || name == ".seal" {
			if !inodes1[v[0]] {
				fresh = append(fresh, name)
				files += v[1]
			}
			continue
		}
		if nd, ok := strings.CutSuffix(name, "/"); ok && strings.Count(nd, "/") == 1 { // a nodeset
			if !inodes1[v[0]] {
				newNodesets = append(newNodesets, nd)
				trees += v[1]
			}
			continue
		}
		if nd, ok := strings.CutSuffix(name, "/"); ok { // a tree
			if !inodes1[v[0]] {
				newTrees = append(newTrees, nd)
				trees += v[1]
			}
			continue
		}
		fi, err := os.Lstat(filepath.Join(w.SetDir(2), filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			nodeDirs++
			if v[1] != 0 {
				t.Errorf("the symlink %s takes %d bytes of blocks, want none (a fast symlink)", name, v[1])
			}
			continue
		}
		if strings.Count(name, "/") == 2 && strings.Split(name, "/")[1] == "nodes" {
			t.Errorf("the node directory %s is a directory of the set's own, not a symlink to a tree", name)
		}
		ownDirs = append(ownDirs, name)
		dirs += v[1]
	}
	slices.Sort(fresh)
	if diff := cmp.Diff(changed, fresh); diff != "" {
		t.Errorf("files of set 2 not shared with set 1 (-changed content +new inodes):\n%s", diff)
	}
	checkNewTrees(t, w.SetDir(2), changedDirs, newTrees, newNodesets)
	if want := 1 + 3*len(st2.Clusters); len(ownDirs) != want {
		t.Errorf("set 2 has %d directories of its own, want %d (its root, and each cluster's three): %q", len(ownDirs), want, ownDirs)
	}
	added := files + trees + dirs
	t.Logf("%d of %d files changed in %d node directories of %d links; a full set takes %d bytes on disk; the second adds %d (%.1f%%): %d in files, %d in %d trees and %d nodesets, %d in its own %d directories",
		len(changed), len(st2.Artifacts)+1, len(newTrees), nodeDirs, full, added, 100*float64(added)/float64(full), files, trees, len(newTrees), len(newNodesets), dirs, len(ownDirs))
	if len(changed) > len(st2.Artifacts)/5 {
		t.Errorf("%d of %d files changed: the fixture changes more than one cluster", len(changed), len(st2.Artifacts))
	}
}

// checkNewTrees checks the trees and nodesets new in set (newTrees,
// newNodesets) against the directories whose files changed: a tree is new
// exactly where a node directory's files changed, and a nodeset where a node
// directory of the cluster changed (or went).
func checkNewTrees(t *testing.T, set string, changedDirs map[string]bool, newTrees, newNodesets []string) {
	t.Helper()
	var wantTrees []string
	wantNodesets := map[string]bool{}
	for d := range changedDirs {
		if parts := strings.Split(d, "/"); len(parts) == 3 && parts[1] == "nodes" {
			wantNodesets[parts[0]+"/nodes"] = true
			if _, err := os.Lstat(filepath.Join(set, filepath.FromSlash(d))); err == nil {
				wantTrees = append(wantTrees, d)
			}
		}
	}
	slices.Sort(wantTrees)
	slices.Sort(newTrees)
	if diff := cmp.Diff(wantTrees, newTrees); diff != "" {
		t.Errorf("trees of set 2 not shared with set 1 (-node directories whose files changed +new trees):\n%s", diff)
	}
	slices.Sort(newNodesets)
	if diff := cmp.Diff(slices.Sorted(maps.Keys(wantNodesets)), newNodesets); diff != "" {
		t.Errorf("nodesets of set 2 not shared with set 1 (-clusters whose node directories changed +new nodesets):\n%s", diff)
	}
}
