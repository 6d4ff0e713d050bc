//go:build linux

package state

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// treeOfNode is the tree id set n's node directory nd (slashed) links to.
func treeOfNode(t *testing.T, w *Workdir, n int64, nd string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(w.SetDir(n), filepath.FromSlash(nd)))
	if err != nil {
		t.Fatalf("set %d: %s is not a symlink: %v", n, nd, err)
	}
	id, ok := treeOfLink(target)
	if !ok {
		t.Fatalf("set %d: %s links to %q, not a tree", n, nd, target)
	}
	return id
}

// treeNames lists the entries of trees/ (temporary ones included).
func treeNames(t *testing.T, w *Workdir) []string {
	t.Helper()
	entries, err := os.ReadDir(w.trees())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// checkSet asserts that set n reads, through SetFS, exactly files.
func checkSet(t *testing.T, w *Workdir, n int64, files map[string]string) {
	t.Helper()
	got := map[string]string{}
	set := w.SetFS(n)
	err := fs.WalkDir(set, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == ".state.json" || p == sealName {
			return err
		}
		data, err := fs.ReadFile(set, p)
		got[p] = string(data)
		return err
	})
	if err != nil {
		t.Fatalf("set %d: %v", n, err)
	}
	if diff := cmp.Diff(files, got); diff != "" {
		t.Errorf("set %d (-want +got):\n%s", n, diff)
	}
}

// TestStoreTreeDamageRebuilt damages the tree two sets share (a file removed,
// a file replaced by another with other bytes, a file added, a file changed in
// place through its link, the tree replaced by a symlink to a copy of it
// elsewhere): the next publish of the same node directory builds the tree
// again, in place of the damaged one, and every set that links it reads right.
// A tree whose file is a copy of its object (not a link) with the same bytes is
// kept as it is.
func TestStoreTreeDamageRebuilt(t *testing.T) {
	files := map[string]string{"c/nodes/n1/a.yaml": "a\n", "c/nodes/n1/b.yaml": "b\n", "c/nodes/n2/a.yaml": "other\n", "c/cluster.yaml": "c\n"}
	for _, tc := range []struct {
		name    string
		damage  func(tree string) error
		rebuilt bool
	}{
		{"file removed", func(tree string) error { return os.Remove(filepath.Join(tree, "b.yaml")) }, true},
		{"file replaced", func(tree string) error {
			p := filepath.Join(tree, "a.yaml")
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.WriteFile(p, []byte("evil\n"), 0o644)
		}, true},
		{"file added", func(tree string) error { return os.WriteFile(filepath.Join(tree, "c.yaml"), []byte("c\n"), 0o644) }, true},
		{"changed in place", func(tree string) error { return os.WriteFile(filepath.Join(tree, "a.yaml"), []byte("A\n"), 0o644) }, true},
		{"symlink to a copy", func(tree string) error {
			copyDir := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(tree))), "copy")
			if err := os.CopyFS(copyDir, os.DirFS(tree)); err != nil {
				return err
			}
			if err := os.RemoveAll(tree); err != nil {
				return err
			}
			return os.Symlink(copyDir, tree)
		}, true},
		{"a copy with the same bytes", func(tree string) error {
			p := filepath.Join(tree, "a.yaml")
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.WriteFile(p, []byte("a\n"), 0o644)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, l := lockedWorkdir(t)
			if err := publish(t, w, l, 1, files); err != nil {
				t.Fatal(err)
			}
			if err := publish(t, w, l, 2, files); err != nil {
				t.Fatal(err)
			}
			id := treeOfNode(t, w, 1, "c/nodes/n1")
			if treeOfNode(t, w, 2, "c/nodes/n1") != id {
				t.Fatal("sets 1 and 2 do not share the tree of c/nodes/n1")
			}
			tree := filepath.Join(w.trees(), id)
			if err := tc.damage(tree); err != nil {
				t.Fatal(err)
			}
			before, _ := inode(t, tree)
			if err := publish(t, w, l, 3, files); err != nil {
				t.Fatal(err)
			}
			if got := treeOfNode(t, w, 3, "c/nodes/n1"); got != id {
				t.Errorf("set 3 links tree %s, want %s", got, id)
			}
			for n := int64(1); n <= 3; n++ {
				checkSet(t, w, n, files)
			}
			fi, err := os.Lstat(tree)
			if err != nil || !fi.IsDir() {
				t.Fatalf("the tree is not a directory: %v %v", fi.Mode(), err)
			}
			if after, _ := inode(t, tree); (after != before) != tc.rebuilt {
				t.Errorf("tree rebuilt: %v, want %v", after != before, tc.rebuilt)
			}
			for _, name := range []string{"a.yaml", "b.yaml"} {
				if !tc.rebuilt {
					break
				}
				data, _ := os.ReadFile(filepath.Join(tree, name))
				obj := filepath.Join(w.objects(), shaHex(data)[:2], shaHex(data))
				ino, _ := inode(t, filepath.Join(tree, name))
				if objIno, _ := inode(t, obj); ino != objIno {
					t.Errorf("the rebuilt tree's %s is not its object", name)
				}
			}
			if diff := cmp.Diff(2, len(treeNames(t, w))); diff != "" {
				t.Errorf("trees left (-want +got): %s %q", diff, treeNames(t, w))
			}
		})
	}
}

// TestSetFSFollowsOnlyTrees: SetFS reads a node directory linked to a tree as a
// directory (ReadDir lists it as one, under the node's name), and refuses every
// other symlink: a node directory linked elsewhere (to a copy of its tree in
// the work directory, or by an absolute path to its own tree), a symlink at
// another place of the set (even to a file of the same content), and a
// symlink inside a tree.
func TestSetFSFollowsOnlyTrees(t *testing.T) {
	w, l := lockedWorkdir(t)
	files := map[string]string{"c/nodes/n1/a.yaml": "a", "c/nodes/n2/a.yaml": "b", "c/cluster.yaml": "c"}
	if err := publish(t, w, l, 1, files); err != nil {
		t.Fatal(err)
	}
	set := w.SetFS(1)
	ents, err := fs.ReadDir(set, "c/nodes")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "n") {
			t.Errorf("c/nodes lists %s as %v, want a directory named as the node", e.Name(), e.Type())
		}
		if fi, err := e.Info(); err != nil || fi.Name() != e.Name() {
			t.Errorf("c/nodes/%s: info %v %v", e.Name(), fi, err)
		}
	}
	if fi, err := fs.Stat(set, "c/nodes/n1"); err != nil || !fi.IsDir() || fi.Name() != "n1" {
		t.Errorf("stat c/nodes/n1: %v %v", fi, err)
	}
	checkSet(t, w, 1, files)

	refused := func(what, name string) {
		t.Helper()
		if data, err := fs.ReadFile(set, name); err == nil {
			t.Errorf("%s: %s read %q through a symlink", what, name, data)
		}
	}
	setDir := w.SetDir(1)
	id := treeOfNode(t, w, 1, "c/nodes/n1")
	tree := filepath.Join(w.trees(), id)
	// A copy of the tree beside it, under a name that is not a tree's.
	if err := os.CopyFS(filepath.Join(w.trees(), "copy"), os.DirFS(tree)); err != nil {
		t.Fatal(err)
	}
	n1 := filepath.Join(setDir, "c", "nodes", "n1")
	for _, target := range []string{"../../../../trees/copy", tree, "../../../../trees/" + id + "/", "../../../trees/" + id} {
		if err := os.Remove(n1); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, n1); err != nil {
			t.Fatal(err)
		}
		refused("node directory linked to "+target, "c/nodes/n1/a.yaml")
		if ents, err := fs.ReadDir(set, "c/nodes"); err != nil || ents[0].IsDir() {
			t.Errorf("node directory linked to %s: listed as a directory (%v)", target, err)
		}
	}
	// A file of the set made a symlink to its own object: same bytes, refused.
	obj := filepath.Join(w.objects(), shaHex([]byte("c"))[:2], shaHex([]byte("c")))
	cluster := filepath.Join(setDir, "c", "cluster.yaml")
	if err := os.Remove(cluster); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(obj, cluster); err != nil {
		t.Fatal(err)
	}
	refused("a file linked to its object", "c/cluster.yaml")
	// A file of a tree made a symlink.
	n2tree := filepath.Join(w.trees(), treeOfNode(t, w, 1, "c/nodes/n2"))
	if err := os.Remove(filepath.Join(n2tree, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(w.objects(), shaHex([]byte("b"))[:2], shaHex([]byte("b"))), filepath.Join(n2tree, "a.yaml")); err != nil {
		t.Fatal(err)
	}
	refused("a file of a tree linked to its object", "c/nodes/n2/a.yaml")
	// A directory of the set made a symlink to a directory of the set.
	if err := os.Rename(filepath.Join(setDir, "c"), filepath.Join(setDir, "real")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(setDir, "c")); err != nil {
		t.Fatal(err)
	}
	if _, err := fs.ReadDir(set, "c/nodes"); err == nil {
		t.Error("a cluster directory linked to another directory of the set is read")
	}
}

// TestStoreTreeLinksShared publishes three sets: a node directory whose tree
// is the one the current set links is a hard link to the current set's
// symlink (one inode for both sets: no new inode for it), one whose tree
// changed is a new symlink, and a current set's node directory that is a
// symlink to anything but the tree (replaced by hand) is never linked: the
// new set has a symlink of its own to the right tree.
func TestStoreTreeLinksShared(t *testing.T) {
	w, l := lockedWorkdir(t)
	files := func(n2 string) map[string]string {
		return map[string]string{"c/nodes/n1/a.yaml": "a\n", "c/nodes/n2/a.yaml": n2, "c/nodes/n3/a.yaml": "c\n"}
	}
	if err := publish(t, w, l, 1, files("b1\n")); err != nil {
		t.Fatal(err)
	}
	if err := publish(t, w, l, 2, files("b2\n")); err != nil {
		t.Fatal(err)
	}
	checkSet(t, w, 2, files("b2\n"))
	node := func(n int64, nd string) string { return filepath.Join(w.SetDir(n), "c", "nodes", nd) }
	ino1, _ := inode(t, node(1, "n1"))
	ino2, nlink := inode(t, node(2, "n1"))
	if ino1 != ino2 || nlink != 2 {
		t.Errorf("c/nodes/n1 of sets 1 and 2: inodes %d and %d, %d links; want one inode with 2 links", ino1, ino2, nlink)
	}
	if a, _ := inode(t, node(1, "n2")); a == func() uint64 { b, _ := inode(t, node(2, "n2")); return b }() {
		t.Errorf("c/nodes/n2 changed its tree but is the same inode in sets 1 and 2")
	}
	// Set 2's n3 is replaced by a symlink elsewhere (the same text would be
	// the tree): set 3 must not share it.
	id3 := treeOfNode(t, w, 2, "c/nodes/n3")
	other := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(node(2, "n3")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, node(2, "n3")); err != nil {
		t.Fatal(err)
	}
	if err := publish(t, w, l, 3, files("b2\n")); err != nil {
		t.Fatal(err)
	}
	checkSet(t, w, 3, files("b2\n"))
	if got := treeOfNode(t, w, 3, "c/nodes/n3"); got != id3 {
		t.Errorf("set 3 links c/nodes/n3 to tree %s, want %s", got, id3)
	}
	if a, _ := inode(t, node(2, "n3")); a == func() uint64 { b, _ := inode(t, node(3, "n3")); return b }() {
		t.Errorf("set 3's c/nodes/n3 is the inode of set 2's foreign symlink")
	}
	if _, nlink := inode(t, node(3, "n1")); nlink != 3 {
		t.Errorf("c/nodes/n1 has %d links, want 3 (sets 1, 2 and 3)", nlink)
	}
}
