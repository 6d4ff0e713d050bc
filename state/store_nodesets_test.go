//go:build fuelsync_testhooks && linux

package state

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStoreOldLayoutUpgrade: sets written before nodesets (each cluster's
// nodes directory its own, with a link per node directory, and no
// nodesets/) stay readable after an upgrade; the first publish over them
// keeps their files by their stat, unread, and links nodesets; pruning keeps
// the trees an old set links while it is kept, and removes the old sets and
// then the trees only they linked.
func TestStoreOldLayoutUpgrade(t *testing.T) {
	w, l := lockedWorkdir(t)
	files1 := sealFiles
	files2 := maps.Clone(sealFiles)
	files2["a/nodes/n1/graph.yaml"] = "a n1, changed\n"
	publishSealed(t, w, l, 1, files1, false)
	publishSealed(t, w, l, 2, files2, false)
	toOldLayout(t, w, 1)
	toOldLayout(t, w, 2)
	if err := os.RemoveAll(w.nodesets()); err != nil {
		t.Fatal(err)
	}
	onlyOld := treeOfNode(t, w, 1, "a/nodes/n1") // set 1's alone
	for n := int64(1); n <= 2; n++ {
		checkSetFSDirs(t, w, n, true, "a")
	}
	checkSet(t, w, 1, files1)
	checkSet(t, w, 2, files2)

	refused, read := publishSealed(t, w, l, 3, files2, true)
	if len(refused) != 0 || len(read) != 0 {
		t.Errorf("the publish over an old set refused %q and read %q, want neither", refused, read)
	}
	nodesetOf(t, w, 3, "a")
	nodesetOf(t, w, 3, "b")
	for n, files := range map[int64]map[string]string{1: files1, 2: files2, 3: files2} {
		checkSet(t, w, n, files)
	}
	if !slices.Contains(treeNames(t, w), onlyOld) {
		t.Fatalf("the tree old set 1 alone links was removed while set 1 is kept")
	}
	for n := int64(4); n <= Keep+2; n++ {
		if refused, _ := publishSealed(t, w, l, n, files2, true); len(refused) != 0 {
			t.Errorf("serial %d refused %q", n, refused)
		}
		if n == Keep+1 {
			// Set 1 is pruned, its own tree with it; old set 2 stays whole.
			if slices.Contains(treeNames(t, w), onlyOld) {
				t.Errorf("the tree only pruned old set 1 linked is left")
			}
			checkSetFSDirs(t, w, 2, true, "a")
			checkSet(t, w, 2, files2)
		}
	}
	if got := w.sets(); !slices.Equal(got, []int64{3, 4, 5, 6, 7}) {
		t.Fatalf("sets %v", got)
	}
	want := map[string]bool{}
	for _, n := range w.sets() {
		checkSet(t, w, n, files2)
		for _, nd := range []string{"a/nodes/n1", "a/nodes/n2", "b/nodes/n1"} {
			want[treeOfNode(t, w, n, nd)] = true
		}
	}
	if got := treeNames(t, w); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
		t.Errorf("trees %q, want those the kept sets link %q", got, slices.Sorted(maps.Keys(want)))
	}
}

// TestTidyPrunesAfterRemovedSets: Tidy (each run's, under the lock) removes
// the set of a crashed run (newer than current, never switched to) and then
// the nodesets, trees and objects only it linked, a stray object with them;
// when it removes no set, it leaves them to the publish's pruning after its
// commit (reading every set's links and every object at each lock doubled
// that cost): the stray object stays until the next publish.
func TestTidyPrunesAfterRemovedSets(t *testing.T) {
	w, l := lockedWorkdir(t)
	files := func(v string) map[string]string { return map[string]string{"c/nodes/n/a.yaml": v, "c/x.yaml": "x"} }
	for n, v := range []string{"a", "b", "crashed"} {
		if err := publish(t, w, l, int64(n+1), files(v)); err != nil {
			t.Fatal(err)
		}
	}
	crashedTree, crashedNodeset := treeOfNode(t, w, 3, "c/nodes/n"), nodesetOf(t, w, 3, "c")
	// Set 3 was never switched to: current and the state name set 2.
	if err := replaceSymlink(w.artifacts(), "current", "2"); err != nil {
		t.Fatal(err)
	}
	stray := []byte("stray")
	strayObj := filepath.Join(w.objects(), shaHex(stray)[:2], shaHex(stray))
	if err := os.MkdirAll(filepath.Dir(strayObj), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(strayObj, stray, 0o644); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	// Nothing to remove but the stray object: left to the next publish.
	copyDir := filepath.Join(t.TempDir(), "set3")
	if err := os.Rename(w.SetDir(3), copyDir); err != nil {
		t.Fatal(err)
	}
	if err := w.Tidy(l); err != nil {
		t.Fatal(err)
	}
	if !exists(strayObj) {
		t.Errorf("Tidy that removed no set pruned the objects")
	}
	// The crashed set back: Tidy removes it, its nodeset, tree and object,
	// and the stray.
	if err := os.Rename(copyDir, w.SetDir(3)); err != nil {
		t.Fatal(err)
	}
	if err := w.Tidy(l); err != nil {
		t.Fatal(err)
	}
	if exists(w.SetDir(3)) {
		t.Fatal("the crashed run's set 3 is left")
	}
	for what, p := range map[string]string{
		"its tree": filepath.Join(w.trees(), crashedTree), "its nodeset": filepath.Join(w.nodesets(), crashedNodeset),
		"its object": filepath.Join(w.objects(), shaHex([]byte("crashed"))[:2], shaHex([]byte("crashed"))), "the stray object": strayObj,
	} {
		if exists(p) {
			t.Errorf("Tidy removed the crashed set but not %s", what)
		}
	}
	checkSet(t, w, 1, files("a"))
	checkSet(t, w, 2, files("b"))
	if err := publish(t, w, l, 3, files("c")); err != nil {
		t.Fatal(err)
	}
	checkSet(t, w, 3, files("c"))
}

// dirReads are the directories (trees, nodesets) among what a publish read.
func dirReads(read []string) []string {
	return readsOf(read, "dir ")
}

// readsOf are the reads of one kind (prefix) among what a publish read, each
// as its path's last two elements, sorted.
func readsOf(read []string, prefix string) []string {
	var out []string
	for _, r := range read {
		if p, ok := strings.CutPrefix(r, prefix); ok {
			out = append(out, filepath.Base(filepath.Dir(p))+"/"+filepath.Base(p))
		}
	}
	slices.Sort(out)
	return out
}

// TestStoreTreesKeptUnread: a publish that keeps the applied set's files does
// not read the trees and nodesets the applied set links when their entries
// have not changed since its seal (their mtime is before it; one that a
// publish builds gets an mtime before that publish's seal, so the publish
// after a cold one keeps them unread too). A tree or nodeset whose entries
// changed (a file added, a link removed and made again), or that the applied
// set does not link (only an older one), is read, and rebuilt when it is not
// whole.
func TestStoreTreesKeptUnread(t *testing.T) {
	w, l := lockedWorkdir(t)
	files := maps.Clone(sealFiles)
	publishSealed(t, w, l, 1, files, false)
	if _, read := publishSealed(t, w, l, 2, files, true); len(dirReads(read)) != 0 {
		t.Errorf("the publish after a cold one read %q, want no tree or nodeset", dirReads(read))
	}
	// A file added to a tree, a link of a nodeset made again.
	treeA := treeOfNode(t, w, 2, "a/nodes/n1")
	if err := os.WriteFile(filepath.Join(w.trees(), treeA, "extra.yaml"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	nsB := nodesetOf(t, w, 2, "b")
	link := filepath.Join(w.nodesets(), nsB, "n1")
	remakeLink(t, link)
	_, read := publishSealed(t, w, l, 3, files, true)
	if diff := cmp.Diff([]string{"nodesets/" + nsB, "trees/" + treeA}, dirReads(read)); diff != "" {
		t.Errorf("after a tree's and a nodeset's entries changed: the directories read (-want +got):\n%s", diff)
	}
	checkSet(t, w, 3, files)
	if _, err := os.Lstat(filepath.Join(w.trees(), treeA, "extra.yaml")); err == nil {
		t.Errorf("the tree with a file added was not rebuilt")
	}
	// a/nodes/n1 changes, then changes back: its tree and a's nodeset are
	// then linked by set 3 but not by the applied set 4.
	changed := maps.Clone(files)
	changed["a/nodes/n1/graph.yaml"] = "a n1, changed\n"
	publishSealed(t, w, l, 4, changed, true)
	_, read = publishSealed(t, w, l, 5, files, true)
	if diff := cmp.Diff([]string{"nodesets/" + nodesetOf(t, w, 5, "a"), "trees/" + treeA}, dirReads(read)); diff != "" {
		t.Errorf("a tree and a nodeset only an older set links: the directories read (-want +got):\n%s", diff)
	}
	for n := int64(3); n <= 5; n++ {
		want := files
		if n == 4 {
			want = changed
		}
		checkSet(t, w, n, want)
	}
}

// TestPruneReadsOnlyNodesetsUnchecked: the pruning after a publish does not
// read again the nodesets the publish found whole, built, or kept unread
// (at 20,000 nodes, 20,000 links read one after another): it knows their
// trees. It reads only those the publish did not look at, here the applied
// set's nodeset of the cluster that changed; the trees an older set links
// through it are kept, the others pruned.
func TestPruneReadsOnlyNodesetsUnchecked(t *testing.T) {
	w, l := lockedWorkdir(t)
	files := maps.Clone(sealFiles)
	publishSealed(t, w, l, 1, files, false)
	changed := maps.Clone(files)
	changed["a/nodes/n1/graph.yaml"] = "a n1, changed\n"
	reads := recordPruneReads(t)
	publishSealed(t, w, l, 2, changed, true)
	oldNodeset, oldTree := nodesetOf(t, w, 1, "a"), treeOfNode(t, w, 1, "a/nodes/n1")
	if diff := cmp.Diff([]string{oldNodeset}, reads()); diff != "" {
		t.Errorf("the directories of links the pruning read (-want +got):\n%s", diff)
	}
	if _, err := os.Lstat(filepath.Join(w.trees(), oldTree)); err != nil {
		t.Errorf("the tree set 1 links through the nodeset the pruning read: %v", err)
	}
	checkSet(t, w, 1, files)
	checkSet(t, w, 2, changed)
	// Set 1 removed (Keep sets later): its nodeset of a and the tree only it
	// linked go.
	for n := int64(3); n <= Keep+1; n++ {
		publishSealed(t, w, l, n, changed, true)
	}
	for what, p := range map[string]string{"tree": filepath.Join(w.trees(), oldTree), "nodeset": filepath.Join(w.nodesets(), oldNodeset)} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("the %s only the removed set 1 linked was not pruned", what)
		}
	}
	checkSet(t, w, Keep+1, changed)
}
