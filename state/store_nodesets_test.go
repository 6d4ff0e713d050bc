//go:build fuelsync_testhooks && linux

package state

import (
	"maps"
	"os"
	"slices"
	"testing"
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
