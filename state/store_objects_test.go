//go:build linux

package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
)

func lockedWorkdir(t *testing.T) (*Workdir, *Lock) {
	t.Helper()
	w := Open(filepath.Join(t.TempDir(), "wd"))
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Unlock() })
	return w, l
}

func inode(t *testing.T, p string) (ino uint64, nlink uint64) {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return st.Ino, uint64(st.Nlink)
}

func shaHex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// objectNames lists the objects in the store (temporary ones included).
func objectNames(t *testing.T, w *Workdir) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(w.objects(), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || d.IsDir() {
			return err
		}
		out = append(out, d.Name())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// TestStoreSharesUnchangedFiles publishes 400 node files of 16 KiB (one node
// directory each), then the same with one file changed: the second set's node
// directories are symlinks to the same trees as the first's, but the changed
// one's, and a tree's files are links to their objects; the second set adds
// one file's blocks and one tree's, under 5% of a full set, where it used to
// be a full copy (and then a copy of every directory).
func TestStoreSharesUnchangedFiles(t *testing.T) {
	w, l := lockedWorkdir(t)
	if err := publishBytes(w, l, 1, benchSet(400, 16<<10, -1, "")); err != nil {
		t.Fatal(err)
	}
	changed := benchSet(400, 16<<10, 7, "changed ")
	if err := publishBytes(w, l, 2, changed); err != nil {
		t.Fatal(err)
	}
	var newFiles, newTrees []string
	for name, data := range changed {
		p := filepath.Join(w.SetDir(2), filepath.FromSlash(name))
		got, err := os.ReadFile(p)
		if err != nil || string(got) != string(data) {
			t.Fatalf("set 2: %s does not hold its content (%v)", name, err)
		}
		ino2, nlink := inode(t, p)
		ino1, _ := inode(t, filepath.Join(w.SetDir(1), filepath.FromSlash(name)))
		if ino1 != ino2 {
			newFiles = append(newFiles, name)
		}
		// The object and the tree: the sets link the tree.
		if want := uint64(2); nlink != want {
			t.Errorf("%s: %d links, want %d (the object and its tree)", name, nlink, want)
		}
		obj := filepath.Join(w.objects(), shaHex(data)[:2], shaHex(data))
		if ino, _ := inode(t, obj); ino != ino2 {
			t.Errorf("%s is not a link to its object %s", name, obj)
		}
		nd := filepath.Dir(p)
		fi, err := os.Lstat(nd)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("set 2: the node directory of %s is not a symlink: %v %v", name, fi.Mode(), err)
		}
		target, _ := os.Readlink(nd)
		if len(target) >= 60 || !strings.HasPrefix(target, nodesetTreePrefix) {
			t.Errorf("set 2: %s links to %q, want %s<id> in less than 60 bytes (a fast symlink)", nd, target, nodesetTreePrefix)
		}
		if fi.Sys().(*syscall.Stat_t).Blocks != 0 {
			t.Errorf("set 2: the symlink %s takes %d blocks", nd, fi.Sys().(*syscall.Stat_t).Blocks)
		}
		if treeOfNode(t, w, 1, path.Dir(name)) != treeOfNode(t, w, 2, path.Dir(name)) {
			newTrees = append(newTrees, path.Dir(name))
		}
	}
	checkNodesLinksShared(t, w, "c3")
	if diff := cmp.Diff([]string{"c3/nodes/node-0007/deployment.yaml"}, newFiles); diff != "" {
		t.Errorf("files of set 2 not shared with set 1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"c3/nodes/node-0007"}, newTrees); diff != "" {
		t.Errorf("node directories of set 2 not shared with set 1 (-want +got):\n%s", diff)
	}
	full := sum(inodeBlocks(t, w.SetDir(1)))
	added := newBlocks(t, w.SetDir(2), w.SetDir(1), w.objects())
	t.Logf("a full set takes %d bytes on disk; the set with one file changed adds %d (%.2f%%)", full, added, 100*float64(added)/float64(full))
	if added > full/20 {
		t.Errorf("set 2 adds %d bytes of disk to set 1's %d: more than 5%%", added, full)
	}
	// The directories the set has of its own: its root and the clusters; no
	// nodes directory, no node directory.
	var ownDirs []string
	_ = filepath.WalkDir(w.SetDir(2), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			rel, _ := filepath.Rel(w.SetDir(2), p)
			ownDirs = append(ownDirs, filepath.ToSlash(rel))
		}
		return err
	})
	if len(ownDirs) != 1+4 {
		t.Errorf("set 2 has %d directories of its own, want 5: %q", len(ownDirs), ownDirs)
	}
	// What readers see through the links is regular files, 0644.
	fi, err := os.Stat(filepath.Join(w.CurrentDir(), "c0", "nodes", "node-0000", "deployment.yaml"))
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
		t.Errorf("a file of the current set: %v, %v", fi.Mode(), err)
	}
}

// checkNodesLinksShared checks the nodes directories of sets 1 and 2 of
// TestStoreSharesUnchangedFiles (clusters c0 to c3): each is a fast symlink
// to its nodeset; the clusters that did not change share it with set 1 (one
// inode, a hard link), the changed one links a new nodeset.
func checkNodesLinksShared(t *testing.T, w *Workdir, changed string) {
	t.Helper()
	var newNodesets []string
	for c := range 4 {
		nodes := filepath.Join(w.SetDir(2), fmt.Sprintf("c%d", c), "nodes")
		fi, err := os.Lstat(nodes)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 || fi.Sys().(*syscall.Stat_t).Blocks != 0 {
			t.Fatalf("set 2: %s is not a fast symlink: %v %v", nodes, fi.Mode(), err)
		}
		if target, _ := os.Readlink(nodes); len(target) >= 60 {
			t.Errorf("set 2: %s links to %q: 60 bytes or more", nodes, target)
		}
		ino1, _ := inode(t, filepath.Join(w.SetDir(1), fmt.Sprintf("c%d", c), "nodes"))
		if ino2, _ := inode(t, nodes); ino1 != ino2 {
			newNodesets = append(newNodesets, fmt.Sprintf("c%d", c))
		}
	}
	if diff := cmp.Diff([]string{changed}, newNodesets); diff != "" {
		t.Errorf("nodes directories of set 2 not shared with set 1 (-want +got):\n%s", diff)
	}
}

// TestStoreRewritesDamagedObject damages the object of a file in three ways
// (rewritten in place through a set's link with other bytes of the same size,
// truncated, removed): the next publish of that content writes the object again
// from the new content and links a set file that holds it, never the damage.
func TestStoreRewritesDamagedObject(t *testing.T) {
	content := "cluster: a\nnodes: 3\n"
	for _, tc := range []struct {
		name   string
		damage func(obj, setFile string) error
	}{
		{"same size, other bytes", func(_, setFile string) error {
			return os.WriteFile(setFile, []byte(strings.ToUpper(content)), 0o644)
		}},
		{"truncated", func(obj, _ string) error { return os.Truncate(obj, 3) }},
		{"missing", func(obj, _ string) error { return os.Remove(obj) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, l := lockedWorkdir(t)
			if err := publish(t, w, l, 1, map[string]string{"c/a.yaml": content}); err != nil {
				t.Fatal(err)
			}
			obj := filepath.Join(w.objects(), shaHex([]byte(content))[:2], shaHex([]byte(content)))
			if err := tc.damage(obj, filepath.Join(w.SetDir(1), "c", "a.yaml")); err != nil {
				t.Fatal(err)
			}
			if err := publish(t, w, l, 2, map[string]string{"c/a.yaml": content, "c/b.yaml": content}); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"a.yaml", "b.yaml"} {
				p := filepath.Join(w.SetDir(2), "c", name)
				if got, err := os.ReadFile(p); err != nil || string(got) != content {
					t.Errorf("set 2: c/%s = %q, %v; want %q", name, got, err, content)
				}
				objIno, _ := inode(t, obj)
				if ino, _ := inode(t, p); ino != objIno {
					t.Errorf("set 2: c/%s is not linked to the rewritten object", name)
				}
			}
			if got, err := os.ReadFile(obj); err != nil || string(got) != content {
				t.Errorf("object = %q, %v", got, err)
			}
		})
	}
}

// TestWriteSetLinkedChecksObjects makes a committed set with WriteSetLinked
// from the objects of set 1: intact, the set reads right and its files are
// the objects; an object damaged in each of three ways fails the set, which
// is not made, and current stays.
func TestWriteSetLinkedChecksObjects(t *testing.T) {
	files := map[string]string{"c/a.yaml": "cluster: a\n", "c/nodes/n1/g.yaml": "graph\n"}
	for _, tc := range []struct {
		name   string
		damage func(obj string) error
	}{
		{"intact", nil},
		{"other bytes", func(obj string) error { return os.WriteFile(obj, []byte("GRAPH\n"), 0o644) }},
		{"truncated", func(obj string) error { return os.Truncate(obj, 2) }},
		{"missing", func(obj string) error { return os.Remove(obj) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, l := lockedWorkdir(t)
			if err := publish(t, w, l, 1, files); err != nil {
				t.Fatal(err)
			}
			st := Empty()
			st.Serial, st.Revision = 2, "rev-2"
			for name, data := range files {
				st.Artifacts[name] = shaHex([]byte(data))
			}
			obj := w.objectPath(shaHex([]byte("graph\n")))
			if tc.damage != nil {
				if err := tc.damage(obj); err != nil {
					t.Fatal(err)
				}
			}
			err := w.WriteSetLinked(st, func(_ func(string, []byte) error, link func(string, string) error) error {
				for _, name := range slices.Sorted(maps.Keys(files)) {
					if err := link(name, st.Artifacts[name]); err != nil {
						return err
					}
				}
				return nil
			})
			if tc.damage == nil {
				if err != nil {
					t.Fatal(err)
				}
				checkSet(t, w, 2, files)
				return
			}
			if err == nil {
				t.Fatal("a set was made of a damaged object")
			}
			if _, serr := os.Stat(w.SetDir(2)); serr == nil || w.CurrentSerial() != 1 {
				t.Errorf("after %v: set 2 is there (%v) or current is %d, not 1", err, serr, w.CurrentSerial())
			}
		})
	}
}

// TestPruneObjectsSkipsLinked: the pruning removes an object whose only link
// is the store's, but not one the publish found linked elsewhere (linked),
// whatever its link count now: one whose other link is gone stays, for a
// later pruning; an object with another link stays either way.
func TestPruneObjectsSkipsLinked(t *testing.T) {
	w, _ := lockedWorkdir(t)
	if err := w.claim(); err != nil {
		t.Fatal(err)
	}
	objects := map[string]string{} // content → sha256
	for _, c := range []string{"alone", "alone but linked", "linked twice", "linked twice, said so"} {
		sum := shaHex([]byte(c))
		objects[c] = sum
		dir := filepath.Join(w.objects(), sum[:2])
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, sum), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(c, "linked twice") {
			if err := os.Link(filepath.Join(dir, sum), filepath.Join(t.TempDir(), "other")); err != nil {
				t.Fatal(err)
			}
		}
	}
	w.pruneObjects(map[string]bool{objects["alone but linked"]: true, objects["linked twice, said so"]: true})
	want := []string{objects["alone but linked"], objects["linked twice"], objects["linked twice, said so"]}
	slices.Sort(want)
	if diff := cmp.Diff(want, objectNames(t, w)); diff != "" {
		t.Errorf("objects after the pruning (-want +got):\n%s", diff)
	}
}
