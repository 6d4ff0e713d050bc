//go:build linux

package state

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// treeOfNode is the tree id set n's node directory nd (slashed) links to,
// through its cluster's nodeset or from the cluster's own nodes directory.
func treeOfNode(t *testing.T, w *Workdir, n int64, nd string) string {
	t.Helper()
	p, _, err := (&setFS{w: w, dir: w.SetDir(n)}).resolve("stat", nd)
	if err != nil {
		t.Fatalf("set %d: %s: %v", n, nd, err)
	}
	if filepath.Dir(p) != w.trees() || !isTreeID(filepath.Base(p)) {
		t.Fatalf("set %d: %s is %s, not a tree", n, nd, p)
	}
	return filepath.Base(p)
}

// nodesetOf is the nodeset id set n's cluster links its nodes directory to.
func nodesetOf(t *testing.T, w *Workdir, n int64, cluster string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(w.SetDir(n), cluster, "nodes"))
	if err != nil {
		t.Fatalf("set %d: %s/nodes is not a symlink: %v", n, cluster, err)
	}
	id, ok := nodesetOfLink(target)
	if !ok {
		t.Fatalf("set %d: %s/nodes links to %q, not a nodeset", n, cluster, target)
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

// TestSetFSFollowsOnlyTrees: SetFS reads a cluster's nodes directory linked
// to a nodeset, and a node directory linked to a tree (from a nodeset, or from
// a cluster's own nodes directory: the layout before nodesets), as
// directories (ReadDir lists them as such, under their names), and refuses
// every other symlink: each row damages one link of a fresh work directory
// and reads the file behind it.
func TestSetFSFollowsOnlyTrees(t *testing.T) {
	files := map[string]string{"c/nodes/n1/a.yaml": "a", "c/nodes/n2/a.yaml": "b", "c/cluster.yaml": "c"}
	for _, tc := range setFSHostileRows() {
		t.Run(tc.name, func(t *testing.T) {
			w, l := lockedWorkdir(t)
			if err := publish(t, w, l, 1, files); err != nil {
				t.Fatal(err)
			}
			if tc.old {
				toOldLayout(t, w, 1)
			}
			checkSetFSDirs(t, w, 1, tc.old, "c")
			checkSet(t, w, 1, files)
			e := setFSEnv{w: w, set: w.SetDir(1), tree: filepath.Join(w.trees(), treeOfNode(t, w, 1, "c/nodes/n1")),
				obj: filepath.Join(w.objects(), shaHex([]byte("c"))[:2], shaHex([]byte("c")))}
			if !tc.old {
				e.nodeset = filepath.Join(w.nodesets(), nodesetOf(t, w, 1, "c"))
			}
			if err := tc.damage(e); err != nil {
				t.Fatal(err)
			}
			set := w.SetFS(1)
			if data, err := fs.ReadFile(set, tc.read); err == nil {
				t.Errorf("%s read %q through a symlink fuelsync did not make", tc.read, data)
			}
			if _, err := fs.Stat(set, tc.read); err == nil {
				t.Errorf("%s: stat through a symlink fuelsync did not make", tc.read)
			}
			ents, err := fs.ReadDir(set, path.Dir(tc.read))
			for _, ent := range ents {
				if ent.Name() == path.Base(tc.read) && ent.IsDir() && tc.read != "c/nodes/n1" && tc.read != "c/nodes" {
					t.Errorf("%s is listed as a directory", tc.read)
				}
			}
			_ = err
		})
	}
}

// setFSEnv is what a row of setFSHostileRows damages: the work directory,
// set 1's directory, node n1's tree, the object of "c", and cluster c's
// nodeset ("" in the layout before nodesets).
type setFSEnv struct {
	w                       *Workdir
	set, tree, obj, nodeset string
}

// relink replaces p with a symlink to target.
func relink(p, target string) error {
	if err := os.RemoveAll(p); err != nil {
		return err
	}
	return os.Symlink(target, p)
}

// remakeLink makes the symlink link again, to the same target: its
// directory's entries change, the link's target does not.
func remakeLink(t *testing.T, link string) {
	t.Helper()
	target, err := os.Readlink(link)
	if err != nil {
		t.Fatal(err)
	}
	if err := relink(link, target); err != nil {
		t.Fatal(err)
	}
}

// setFSRow is a row of setFSHostileRows.
type setFSRow struct {
	name   string
	old    bool // the cluster's nodes directory made its own (the layout before nodesets)
	damage func(e setFSEnv) error
	read   string
}

// setFSHostileRows are TestSetFSFollowsOnlyTrees's rows: each damages one
// link of set 1, and read is then refused.
func setFSHostileRows() []setFSRow {
	return []setFSRow{
		// A nodes directory linked elsewhere.
		{"nodes linked to a copy of its nodeset", false, func(e setFSEnv) error {
			if err := os.CopyFS(filepath.Join(e.w.nodesets(), "copy"), os.DirFS(e.nodeset)); err != nil {
				return err
			}
			return relink(filepath.Join(e.set, "c", "nodes"), "../../../nodesets/copy")
		}, "c/nodes/n1/a.yaml"},
		{"nodes linked by an absolute path", false, func(e setFSEnv) error { return relink(filepath.Join(e.set, "c", "nodes"), e.nodeset) }, "c/nodes/n1/a.yaml"},
		{"nodes linked with a trailing slash", false, func(e setFSEnv) error {
			return relink(filepath.Join(e.set, "c", "nodes"), nodesetLinkPrefix+filepath.Base(e.nodeset)+"/")
		}, "c/nodes/n1/a.yaml"},
		{"nodes linked to a tree", false, func(e setFSEnv) error {
			return relink(filepath.Join(e.set, "c", "nodes"), "../../../trees/"+filepath.Base(e.tree))
		}, "c/nodes/a.yaml"},
		{"nodeset a symlink to a directory", false, func(e setFSEnv) error {
			cp := filepath.Join(e.w.Dir, "elsewhere")
			if err := os.CopyFS(cp, os.DirFS(e.nodeset)); err != nil {
				return err
			}
			return relink(e.nodeset, cp)
		}, "c/nodes/n1/a.yaml"},
		{"a file linked in place of nodes", false, func(e setFSEnv) error { return relink(filepath.Join(e.set, "c", "nodes"), e.obj) }, "c/nodes"},
		// A link inside the nodeset pointing elsewhere.
		{"nodeset entry in the old form", false, func(e setFSEnv) error {
			return relink(filepath.Join(e.nodeset, "n1"), treeLinkPrefix+filepath.Base(e.tree))
		}, "c/nodes/n1/a.yaml"},
		{"nodeset entry by an absolute path", false, func(e setFSEnv) error { return relink(filepath.Join(e.nodeset, "n1"), e.tree) }, "c/nodes/n1/a.yaml"},
		{"nodeset entry to a copy of its tree", false, func(e setFSEnv) error {
			if err := os.CopyFS(filepath.Join(e.w.trees(), "copy"), os.DirFS(e.tree)); err != nil {
				return err
			}
			return relink(filepath.Join(e.nodeset, "n1"), nodesetTreePrefix+"copy")
		}, "c/nodes/n1/a.yaml"},
		{"nodeset entry to a nodeset", false, func(e setFSEnv) error {
			return relink(filepath.Join(e.nodeset, "n1"), "../../nodesets/"+filepath.Base(e.nodeset))
		}, "c/nodes/n1/n2/a.yaml"},
		{"nodeset entry to its object", false, func(e setFSEnv) error { return relink(filepath.Join(e.nodeset, "n1"), e.obj) }, "c/nodes/n1"},
		{"a symlink added to the nodeset", false, func(e setFSEnv) error {
			return os.Symlink(filepath.Join(e.tree, "a.yaml"), filepath.Join(e.nodeset, "x.yaml"))
		}, "c/nodes/x.yaml"},
		// The layout before nodesets: a node directory linked elsewhere.
		{"old: node linked to a copy of its tree", true, func(e setFSEnv) error {
			if err := os.CopyFS(filepath.Join(e.w.trees(), "copy"), os.DirFS(e.tree)); err != nil {
				return err
			}
			return relink(filepath.Join(e.set, "c", "nodes", "n1"), "../../../../trees/copy")
		}, "c/nodes/n1/a.yaml"},
		{"old: node linked by an absolute path", true, func(e setFSEnv) error { return relink(filepath.Join(e.set, "c", "nodes", "n1"), e.tree) }, "c/nodes/n1/a.yaml"},
		{"old: node linked with a trailing slash", true, func(e setFSEnv) error {
			return relink(filepath.Join(e.set, "c", "nodes", "n1"), treeLinkPrefix+filepath.Base(e.tree)+"/")
		}, "c/nodes/n1/a.yaml"},
		{"old: node linked one level short", true, func(e setFSEnv) error {
			return relink(filepath.Join(e.set, "c", "nodes", "n1"), "../../../trees/"+filepath.Base(e.tree))
		}, "c/nodes/n1/a.yaml"},
		{"old: node linked in a nodeset's form", true, func(e setFSEnv) error {
			return relink(filepath.Join(e.set, "c", "nodes", "n1"), nodesetTreePrefix+filepath.Base(e.tree))
		}, "c/nodes/n1/a.yaml"},
		// Anywhere else.
		{"a file linked to its object", false, func(e setFSEnv) error { return relink(filepath.Join(e.set, "c", "cluster.yaml"), e.obj) }, "c/cluster.yaml"},
		{"a file of a tree made a symlink", false, func(e setFSEnv) error {
			return relink(filepath.Join(e.tree, "a.yaml"), filepath.Join(e.w.objects(), shaHex([]byte("a"))[:2], shaHex([]byte("a"))))
		}, "c/nodes/n1/a.yaml"},
		{"a cluster directory linked to another", false, func(e setFSEnv) error {
			if err := os.Rename(filepath.Join(e.set, "c"), filepath.Join(e.set, "real")); err != nil {
				return err
			}
			return os.Symlink("real", filepath.Join(e.set, "c"))
		}, "c/cluster.yaml"},
	}
}

// checkSetFSDirs checks that SetFS lists set n's cluster c's nodes
// directory and its node directories (n1 among them) as directories under
// their own names (old: c's nodes directory is its own, not a nodeset).
func checkSetFSDirs(t *testing.T, w *Workdir, n int64, old bool, c string) {
	t.Helper()
	set := w.SetFS(n)
	fi, err := os.Lstat(filepath.Join(w.SetDir(n), c, "nodes"))
	if err != nil || (fi.Mode()&fs.ModeSymlink != 0) == old {
		t.Fatalf("set %d: %s/nodes: %v, want a symlink: %v", n, c, err, !old)
	}
	ents, err := fs.ReadDir(set, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() == "nodes" && !e.IsDir() {
			t.Errorf("%s lists nodes as %v, want a directory", c, e.Type())
		}
	}
	ents, err = fs.ReadDir(set, c+"/nodes")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "n") {
			t.Errorf("%s/nodes lists %s as %v, want a directory named as the node", c, e.Name(), e.Type())
		}
		if fi, err := e.Info(); err != nil || fi.Name() != e.Name() {
			t.Errorf("%s/nodes/%s: info %v %v", c, e.Name(), fi, err)
		}
	}
	for _, name := range []string{c + "/nodes", c + "/nodes/n1"} {
		if fi, err := fs.Stat(set, name); err != nil || !fi.IsDir() || fi.Name() != path.Base(name) {
			t.Errorf("stat %s: %v %v", name, fi, err)
		}
	}
}

// toOldLayout makes set n's clusters' nodes directories what a fuelsync
// before nodesets wrote: a directory of the set's own, with a link
// ../../../../trees/<id> for each node directory.
func toOldLayout(t *testing.T, w *Workdir, n int64) {
	t.Helper()
	clusters, err := os.ReadDir(w.SetDir(n))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range clusters {
		nodes := filepath.Join(w.SetDir(n), c.Name(), "nodes")
		target, err := os.Readlink(nodes)
		if !c.IsDir() || err != nil {
			continue
		}
		id, ok := nodesetOfLink(target)
		if !ok {
			t.Fatalf("set %d: %s links to %q", n, nodes, target)
		}
		entries, err := os.ReadDir(filepath.Join(w.nodesets(), id))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(nodes); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(nodes, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			target, err := os.Readlink(filepath.Join(w.nodesets(), id, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			tree, ok := treeOfNodesetLink(target)
			if !ok {
				t.Fatalf("nodeset %s: %s links to %q", id, e.Name(), target)
			}
			if err := os.Symlink(treeLinkPrefix+tree, filepath.Join(nodes, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestStoreTreeLinksShared publishes three sets of a cluster with a nodes
// directory of its own (a file beside its node directories): a node directory
// whose tree is the one the current set links is a hard link to the current
// set's symlink (one inode for both sets: no new inode for it), one whose
// tree changed is a new symlink, and a current set's node directory that is a
// symlink to anything but the tree (replaced by hand) is never linked: the
// new set has a symlink of its own to the right tree.
func TestStoreTreeLinksShared(t *testing.T) {
	w, l := lockedWorkdir(t)
	files := func(n2 string) map[string]string {
		return map[string]string{"c/nodes/n1/a.yaml": "a\n", "c/nodes/n2/a.yaml": n2, "c/nodes/n3/a.yaml": "c\n", "c/nodes/readme.yaml": "r\n"}
	}
	if err := publish(t, w, l, 1, files("b1\n")); err != nil {
		t.Fatal(err)
	}
	if err := publish(t, w, l, 2, files("b2\n")); err != nil {
		t.Fatal(err)
	}
	checkSet(t, w, 2, files("b2\n"))
	if fi, err := os.Lstat(filepath.Join(w.SetDir(2), "c", "nodes")); err != nil || !fi.IsDir() {
		t.Fatalf("c/nodes, with a file beside the node directories, is %v (%v), want a directory of its own", fi.Mode(), err)
	}
	node := func(n int64, nd string) string { return filepath.Join(w.SetDir(n), "c", "nodes", nd) }
	checkLinksShared(t, node, w, l, files, "n1", "n2", "n3", treeLinkPrefix, func(n int64) string { return treeOfNode(t, w, n, "c/nodes/n3") })
}

// TestStoreNodesetLinksShared is TestStoreTreeLinksShared for the nodes
// directories linked to nodesets: a cluster whose nodeset is the one the
// current set links is a hard link to the current set's symlink, one that
// changed a new symlink to a new nodeset, and one replaced by hand is not
// linked again.
func TestStoreNodesetLinksShared(t *testing.T) {
	w, l := lockedWorkdir(t)
	files := func(n2 string) map[string]string {
		return map[string]string{"a/nodes/n/a.yaml": "a\n", "b/nodes/n/a.yaml": n2, "c/nodes/n/a.yaml": "c\n"}
	}
	if err := publish(t, w, l, 1, files("b1\n")); err != nil {
		t.Fatal(err)
	}
	if err := publish(t, w, l, 2, files("b2\n")); err != nil {
		t.Fatal(err)
	}
	checkSet(t, w, 2, files("b2\n"))
	nodes := func(n int64, c string) string { return filepath.Join(w.SetDir(n), c, "nodes") }
	checkLinksShared(t, nodes, w, l, files, "a", "b", "c", nodesetLinkPrefix, func(n int64) string { return nodesetOf(t, w, n, "c") })
}

// checkLinksShared checks the links of sets 1 and 2 (link(n, name) is the
// path of a shared link in set n): same, kept by sets 1 and 2, is one inode;
// changed is not; then other's link in set 2 is replaced by a symlink
// elsewhere, set 3 published, and its link of other is its own symlink of
// the right text (prefix + id(3), id(2) before).
func checkLinksShared(t *testing.T, link func(n int64, name string) string, w *Workdir, l *Lock, files func(string) map[string]string, same, changed, other, prefix string, id func(n int64) string) {
	t.Helper()
	ino1, _ := inode(t, link(1, same))
	ino2, nlink := inode(t, link(2, same))
	if ino1 != ino2 || nlink != 2 {
		t.Errorf("%s of sets 1 and 2: inodes %d and %d, %d links; want one inode with 2 links", same, ino1, ino2, nlink)
	}
	if a, _ := inode(t, link(1, changed)); a == func() uint64 { b, _ := inode(t, link(2, changed)); return b }() {
		t.Errorf("%s changed but is the same inode in sets 1 and 2", changed)
	}
	want := id(2)
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Mkdir(elsewhere, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link(2, other)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, link(2, other)); err != nil {
		t.Fatal(err)
	}
	if err := publish(t, w, l, 3, files("b2\n")); err != nil {
		t.Fatal(err)
	}
	checkSet(t, w, 3, files("b2\n"))
	if got, err := os.Readlink(link(3, other)); err != nil || got != prefix+want || id(3) != want {
		t.Errorf("set 3's %s links to %q (%v), want %s%s", other, got, err, prefix, want)
	}
	if a, _ := inode(t, link(2, other)); a == func() uint64 { b, _ := inode(t, link(3, other)); return b }() {
		t.Errorf("set 3's %s is the inode of set 2's foreign symlink", other)
	}
	if _, nlink := inode(t, link(3, same)); nlink != 3 {
		t.Errorf("%s has %d links, want 3 (sets 1, 2 and 3)", same, nlink)
	}
}

// The ids of trees and nodesets are those work directories already hold: the
// first 32 hex digits of the sha256 of "<name> <sum>\n" a line, whatever
// writes the lines.
func TestPairsIDsAreTheStoresIDs(t *testing.T) {
	a := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	b := "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
	for _, tc := range []struct{ got, want string }{
		{treeID([]treeEntry{{"graph.yaml", a}, {"tasks.yaml", b}}), "f45d7df9decbb055cfcaeb038a4d3b41"},
		{nodesetID([]nodesetEntry{{"node-1", a[:32]}, {"node-2", b[:32]}}), "2719b62686a5eefe185710a3fac0723f"},
		{treeID(nil), "e3b0c44298fc1c149afbf4c8996fb924"},
	} {
		if tc.got != tc.want {
			t.Errorf("id %s, want %s", tc.got, tc.want)
		}
	}
}
