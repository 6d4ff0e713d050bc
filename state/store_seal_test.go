//go:build linux && fuelsync_testhooks

package state

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// sealFiles is a set of two clusters: files of node directories (trees) and
// of the clusters' own directories.
var sealFiles = map[string]string{
	"a/cluster.yaml":        "cluster a\n",
	"a/nodes/n1/graph.yaml": "a n1\n",
	"a/nodes/n2/graph.yaml": "a n2\n",
	"b/cluster.yaml":        "cluster b\n",
	"b/nodes/n1/graph.yaml": "b n1\n",
	"b/nodes/n1/tasks.yaml": "b n1 tasks\n",
}

// publishSealed publishes serial files as Publish's put (every content
// given) when keep is false; else as a publish that keeps the applied set's
// files: link first, put (and read) what link refuses with ErrNotStaged.
// It returns the names link refused and what the publish read to check.
func publishSealed(t *testing.T, w *Workdir, l *Lock, serial int64, files map[string]string, keep bool) (refused, read []string) {
	t.Helper()
	st := filesState(serial, files)
	reads := recordReads(t)
	defer func() { read = reads() }()
	s, err := w.NewStage(l)
	if err != nil {
		t.Fatal(err)
	}
	err = w.PublishStaged(l, st, s, func(put func(string, []byte) error, link func(string, string) error) error {
		for _, name := range slices.Sorted(maps.Keys(files)) {
			if keep {
				err := link(name, st.Artifacts[name])
				if err == nil {
					continue
				}
				if !errors.Is(err, ErrNotStaged) {
					return err
				}
				refused = append(refused, name)
			}
			if err := put(name, []byte(files[name])); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("publishing serial %d: %v", serial, err)
	}
	slices.Sort(refused)
	return refused, read
}

// filesState is a state of serial whose artifacts are files.
func filesState(serial int64, files map[string]string) *State {
	st := Empty()
	st.Serial = serial
	for name, data := range files {
		st.Artifacts[name] = shaHex([]byte(data))
	}
	return st
}

// recordReads enables the failpoint state/read (onRead) to record what is
// read until the function it returns is called, which disables it and
// returns the reads (or the test ends).
func recordReads(t *testing.T) func() []string {
	t.Cleanup(offRead)
	var mu sync.Mutex
	var read []string
	onRead(func(what string) {
		mu.Lock()
		defer mu.Unlock()
		read = append(read, what)
	})
	return func() []string {
		offRead()
		mu.Lock()
		defer mu.Unlock()
		return read
	}
}

// setFile is the path on disk of name in set n (a node directory's file is
// its tree's).
func setFile(t *testing.T, w *Workdir, n int64, name string) string {
	t.Helper()
	s := &setFS{w: w, dir: w.SetDir(n)}
	p, _, err := s.resolve("stat", name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPublishKeepsUnchangedFilesByStat: a publish that keeps the applied set's
// files reads none of them when their stat says they are unchanged (the
// objects written by the publish before included); a file written in place
// after the publish, another inode, a mtime not before the seal or a set
// without a seal is read and checked, and rewritten; a file written with its
// mtime forged back before the seal is kept (git does the same), until the
// seal is removed.
func TestPublishKeepsUnchangedFilesByStat(t *testing.T) {
	w, l := lockedWorkdir(t)
	serial := int64(1)
	publishSealed(t, w, l, serial, sealFiles, false)
	checkSet(t, w, serial, sealFiles)
	if _, ok := readSeal(w.SetDir(serial)); !ok {
		t.Fatal("set 1 has no seal")
	}
	// next publishes the same files, keeping them; it returns what it refused.
	next := func(what string, wantRefused ...string) {
		t.Helper()
		serial++
		refused, read := publishSealed(t, w, l, serial, sealFiles, true)
		if diff := cmp.Diff(wantRefused, refused); diff != "" {
			t.Errorf("%s: the files read and checked (-want +got):\n%s", what, diff)
		}
		if len(wantRefused) == 0 && len(read) > 0 {
			t.Errorf("%s: the publish read %q", what, read)
		}
		checkSet(t, w, serial, sealFiles)
	}
	next("the set just published")
	next("again")

	// Written in place (one inode: the set's file, its tree's and its
	// object): read, found changed, and written anew from the content given.
	p := setFile(t, w, serial, "a/nodes/n1/graph.yaml")
	if err := os.WriteFile(p, []byte("a n1 edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	next("a node's file written in place", "a/nodes/n1/graph.yaml")
	next("after its repair")

	p = setFile(t, w, serial, "b/cluster.yaml")
	if err := os.WriteFile(p, []byte("cluster B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	next("a cluster's file written in place", "b/cluster.yaml")

	// Another inode, with an old mtime: read.
	p = setFile(t, w, serial, "a/cluster.yaml")
	old := time.Now().Add(-time.Hour)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(sealFiles["a/cluster.yaml"]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	next("a file replaced by a copy", "a/cluster.yaml")

	// An mtime equal to the seal is not before it.
	seal, _ := readSeal(w.SetDir(serial))
	p = setFile(t, w, serial, "b/nodes/n1/tasks.yaml")
	if err := os.Chtimes(p, seal, seal); err != nil {
		t.Fatal(err)
	}
	next("an mtime equal to the seal", "b/nodes/n1/tasks.yaml")

	// Forged: the content changed in place, the mtime set back before the
	// seal. Kept, as the stat says (a deliberate act, documented).
	p = setFile(t, w, serial, "b/nodes/n1/graph.yaml")
	if err := os.WriteFile(p, []byte("b N1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	serial++
	if refused, _ := publishSealed(t, w, l, serial, sealFiles, true); refused != nil {
		t.Errorf("a file with a forged mtime: refused %q, want it kept", refused)
	}
	forged := maps.Clone(sealFiles)
	forged["b/nodes/n1/graph.yaml"] = "b N1\n"
	checkSet(t, w, serial, forged)

	// Without the seal of the current set (removed by hand, or a set an
	// older fuelsync wrote), the next publish reads and checks every file it
	// keeps, and repairs the forged one.
	if err := os.Remove(filepath.Join(w.SetDir(serial), sealName)); err != nil {
		t.Fatal(err)
	}
	serial++
	refused, read := publishSealed(t, w, l, serial, sealFiles, true)
	if want := slices.Sorted(maps.Keys(sealFiles)); !slices.Equal(refused, want) {
		t.Errorf("after a set without a seal, refused %q, want every file", refused)
	}
	if len(read) < len(sealFiles) {
		t.Errorf("after a set without a seal, read %q, want every file", read)
	}
	checkSet(t, w, serial, sealFiles)
}

// TestCommittedSetSealed: a committed set a replica makes without the
// writers' lock — from contents (WriteSet) or from objects (WriteSetLinked),
// as a follower or a shard does — has a seal, so the apply that follows it
// keeps its files by their stat and reads none of them; a file written in
// place after it is still read and repaired. WriteSetLinked itself reads
// none of the objects the sealed current set holds unchanged.
func TestCommittedSetSealed(t *testing.T) {
	for _, linked := range []bool{false, true} {
		t.Run(map[bool]string{false: "WriteSet", true: "WriteSetLinked"}[linked], func(t *testing.T) {
			w, l := lockedWorkdir(t)
			publishSealed(t, w, l, 1, sealFiles, false)
			st := filesState(2, sealFiles)
			st.Revision = "rev-2"
			reads := recordReads(t)
			var err error
			if linked {
				err = w.WriteSetLinked(st, func(_ func(string, []byte) error, link func(string, string) error) error {
					for _, name := range slices.Sorted(maps.Keys(sealFiles)) {
						if err := link(name, st.Artifacts[name]); err != nil {
							return err
						}
					}
					return nil
				})
			} else {
				err = w.WriteSet(st, func(put func(string, []byte) error) error {
					for _, name := range slices.Sorted(maps.Keys(sealFiles)) {
						if err := put(name, []byte(sealFiles[name])); err != nil {
							return err
						}
					}
					return nil
				})
			}
			if err != nil {
				t.Fatal(err)
			}
			read := reads()
			// Linked from the objects the sealed set 1 holds unchanged:
			// none is read.
			if linked && len(read) > 0 {
				t.Errorf("WriteSetLinked after a sealed set read %q, want none", read)
			}
			checkSet(t, w, 2, sealFiles)
			if _, ok := readSeal(w.SetDir(2)); !ok {
				t.Fatal("the committed set has no seal")
			}
			refused, read := publishSealed(t, w, l, 3, sealFiles, true)
			if len(refused) > 0 || len(read) > 0 {
				t.Errorf("the publish after the committed set refused %q and read %q, want none", refused, read)
			}
			checkSet(t, w, 3, sealFiles)
			p := setFile(t, w, 3, "b/cluster.yaml")
			if err := os.WriteFile(p, []byte("cluster B\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if refused, _ := publishSealed(t, w, l, 4, sealFiles, true); !slices.Equal(refused, []string{"b/cluster.yaml"}) {
				t.Errorf("after an edit in place: refused %q, want b/cluster.yaml", refused)
			}
			checkSet(t, w, 4, sealFiles)
		})
	}
}

// TestFollowCurrentSetWhenNewestMissing: a serve replica plans against the
// newest committed state, whose set it may not have made yet; its publish
// then keeps files by their stat from the set it has (the current one, with
// that set's own record of them), not by reading every one.
func TestFollowCurrentSetWhenNewestMissing(t *testing.T) {
	w, l := lockedWorkdir(t)
	publishSealed(t, w, l, 1, sealFiles, false)
	newest := filesState(7, sealFiles) // committed by another owner; no set 7 here
	newest.Artifacts["b/cluster.yaml"] = shaHex([]byte("cluster b, changed\n"))
	o := w.newObjectWriter(l)
	o.follow(newest)
	if o.applied == nil || o.applied.set != w.SetDir(1) {
		t.Fatalf("followed %+v, want the current set 1", o.applied)
	}
	for _, name := range slices.Sorted(maps.Keys(sealFiles)) {
		if !o.keep(name, newest.Artifacts[name]) && name != "b/cluster.yaml" {
			t.Errorf("%s, unchanged in set 1: not kept by its stat", name)
		}
	}
	if o.keep("b/cluster.yaml", newest.Artifacts["b/cluster.yaml"]) {
		t.Error("b/cluster.yaml, which set 1 records with another digest, was kept")
	}
	// A set of the newest serial without a seal: nothing is kept.
	if err := os.Mkdir(w.SetDir(7), 0o755); err != nil {
		t.Fatal(err)
	}
	o = w.newObjectWriter(l)
	o.follow(newest)
	if o.applied != nil {
		t.Errorf("with set 7 present without a seal, followed %s", o.applied.set)
	}
}

// TestPublishKeepsTreeFilesWithoutTheirObjects: a file of a node directory
// that the applied set links through its nodeset to a tree is kept by its
// own stat and its tree's (both before the seal): its object is not looked
// at (a fleet's one-node apply spent 40,000 lstats of objects there). An
// object replaced by a copy (another inode) thus no longer makes the file
// read. When such a file goes into a tree that must be built (its node
// directory changed), its object is checked then, and written anew from the
// kept file when it does not hold it: the new tree reads right.
func TestPublishKeepsTreeFilesWithoutTheirObjects(t *testing.T) {
	w, l := lockedWorkdir(t)
	publishSealed(t, w, l, 1, sealFiles, false)
	publishSealed(t, w, l, 2, sealFiles, true)
	name := "a/nodes/n1/graph.yaml"
	obj := w.objectPath(shaHex([]byte(sealFiles[name])))
	replace := func(data string) {
		t.Helper()
		old := time.Now().Add(-time.Hour)
		tmp := obj + ".x"
		if err := os.WriteFile(tmp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(tmp, old, old); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, obj); err != nil {
			t.Fatal(err)
		}
	}
	replace(sealFiles[name])
	tree := treeOfNode(t, w, 2, "a/nodes/n1")
	if refused, read := publishSealed(t, w, l, 3, sealFiles, true); len(refused) > 0 || len(read) > 0 {
		t.Errorf("the object of a kept tree's file replaced by a copy: refused %q, read %q; want neither", refused, read)
	}
	if got := treeOfNode(t, w, 3, "a/nodes/n1"); got != tree {
		t.Errorf("set 3 links tree %s for a/nodes/n1, want the kept %s", got, tree)
	}
	checkSet(t, w, 3, sealFiles)
	// Its nodeset's entries changed since the seal (a link made again): the
	// tree is no longer known to be the one the applied set's publish
	// checked, and the file goes by its object, another inode: read.
	link := filepath.Join(w.nodesets(), nodesetOf(t, w, 3, "a"), "n1")
	remakeLink(t, link)
	replace(sealFiles[name])
	if refused, _ := publishSealed(t, w, l, 4, sealFiles, true); !slices.Equal(refused, []string{name}) {
		t.Errorf("a kept tree's file whose nodeset changed, its object replaced: refused %q, want %s read", refused, name)
	}
	checkSet(t, w, 4, sealFiles)
	// The object now holds other bytes; a/nodes/n1 gains a file: its new
	// tree links the object of graph.yaml, checked and repaired first.
	replace("not a n1\n")
	more := maps.Clone(sealFiles)
	more["a/nodes/n1/extra.yaml"] = "extra\n"
	publishSealed(t, w, l, 5, more, true)
	checkSet(t, w, 5, more)
	checkSet(t, w, 4, sealFiles)
	if data, err := os.ReadFile(obj); err != nil || string(data) != sealFiles[name] {
		t.Errorf("the object of %s holds %q, %v; want it written anew", name, data, err)
	}
}

// linkReads are the node links of nodesets among what a publish read, each
// once (the publish's keep and its stats ahead may both read one).
func linkReads(read []string) []string {
	return slices.Compact(readsOf(read, "link "))
}

// TestPublishKeepsNodeDirsWithoutReadingNodesets: a publish that keeps the
// applied set's node directories finds their trees without reading the node
// links of the nodesets (20,000 readlinks at 20,000 nodes) when the nodeset
// the applied set's cluster links is the one of the node directories its
// state records (the same id) and its entries have not changed since the
// seal: each node directory's tree is then the one its files make. A
// nodeset whose entries changed is read.
func TestPublishKeepsNodeDirsWithoutReadingNodesets(t *testing.T) {
	w, l := lockedWorkdir(t)
	publishSealed(t, w, l, 1, sealFiles, false)
	if _, read := publishSealed(t, w, l, 2, sealFiles, true); len(linkReads(read)) > 0 {
		t.Errorf("the publish read the node links %q, want none", linkReads(read))
	}
	ns := nodesetOf(t, w, 2, "b")
	link := filepath.Join(w.nodesets(), ns, "n1")
	remakeLink(t, link)
	_, read := publishSealed(t, w, l, 3, sealFiles, true)
	if diff := cmp.Diff([]string{ns + "/n1"}, linkReads(read)); diff != "" {
		t.Errorf("after a node link of b's nodeset was made again: the node links read (-want +got):\n%s", diff)
	}
	checkSet(t, w, 3, sealFiles)
}

// TestKeptTreeAsKeepKept: a tree of the applied set is taken as holding a
// node directory's files unread only when keep kept each of them, in this
// publish, with the content the tree's entries give it, as that node
// directory's: a file unchanged by its stat but not kept, another content,
// another node directory or another tree is not enough.
func TestKeptTreeAsKeepKept(t *testing.T) {
	w, l := lockedWorkdir(t)
	publishSealed(t, w, l, 1, sealFiles, false)
	publishSealed(t, w, l, 2, sealFiles, true)
	st := filesState(2, sealFiles)
	const nd = "b/nodes/n1"
	entries := []treeEntry{{"graph.yaml", st.Artifacts[nd+"/graph.yaml"]}, {"tasks.yaml", st.Artifacts[nd+"/tasks.yaml"]}}
	newWriter := func(keep ...string) (*objectWriter, string) {
		o := w.newObjectWriter(l)
		o.follow(st)
		if o.applied == nil {
			t.Fatal("the publish does not follow set 2")
		}
		for _, name := range keep {
			if !o.keep(name, st.Artifacts[name]) {
				t.Fatalf("%s not kept by its stat", name)
			}
		}
		if !appliedStat(t, w, o.applied, nd+"/graph.yaml").inTree {
			t.Fatalf("%s/graph.yaml is not in a tree unchanged since the seal", nd)
		}
		return o, o.applied.nodeDir(nd).dir
	}
	changed := slices.Clone(entries)
	changed[1].sum = shaHex([]byte("b n1 tasks, changed\n"))
	for _, c := range []struct {
		name    string
		keep    []string
		nd      string
		entries []treeEntry
		other   bool // the tree asked for is another than nd's
		want    bool
	}{
		{"every file kept", []string{nd + "/graph.yaml", nd + "/tasks.yaml"}, nd, entries, false, true},
		{"one file only stat'ed", []string{nd + "/graph.yaml"}, nd, entries, false, false},
		{"none kept", nil, nd, entries, false, false},
		{"another content", []string{nd + "/graph.yaml", nd + "/tasks.yaml"}, nd, changed, false, false},
		{"another node directory", []string{nd + "/graph.yaml", nd + "/tasks.yaml"}, "a/nodes/n1", entries, false, false},
		{"another tree", []string{nd + "/graph.yaml", nd + "/tasks.yaml"}, nd, entries, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, dir := newWriter(c.keep...)
			appliedStat(t, w, o.applied, nd+"/tasks.yaml") // unchanged by its stat, whether kept or not
			if c.other {
				dir = o.applied.nodeDir("a/nodes/n1").dir
			}
			fi, err := os.Lstat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.keptTree(dir, c.nd, fi, c.entries); got != c.want {
				t.Errorf("keptTree = %v, want %v", got, c.want)
			}
		})
	}
}

// TestKeptInTreeFollowsKeep: the files keep kept in their trees without
// looking at their objects are found by their content (keptInTree, which
// checkKeptObject asks), those kept after the first question too.
func TestKeptInTreeFollowsKeep(t *testing.T) {
	w, l := lockedWorkdir(t)
	publishSealed(t, w, l, 1, sealFiles, false)
	publishSealed(t, w, l, 2, sealFiles, true)
	st := filesState(2, sealFiles)
	o := w.newObjectWriter(l)
	o.follow(st)
	first, then := "a/nodes/n1/graph.yaml", "b/nodes/n1/tasks.yaml"
	for _, name := range []string{first, then} {
		if _, ok := o.keptInTree(st.Artifacts[name]); ok {
			t.Errorf("%s: found before keep kept it", name)
		}
		if !o.keep(name, st.Artifacts[name]) {
			t.Fatalf("%s not kept", name)
		}
		ks := appliedStat(t, w, o.applied, name)
		if !ks.ok || !ks.inTree {
			t.Fatalf("%s: not kept in its tree", name)
		}
		if got, ok := o.keptInTree(st.Artifacts[name]); !ok || got != ks.p {
			t.Errorf("%s: keptInTree = %q, %v; want %q", name, got, ok, ks.p)
		}
	}
}

// appliedStat is the stat check of the applied set's file name.
func appliedStat(t *testing.T, w *Workdir, a *appliedSet, name string) *keptStat {
	t.Helper()
	i, found := slices.BinarySearch(a.names, name)
	if !found {
		t.Fatalf("%s is not a file of the applied set", name)
	}
	return a.statAt(w, i)
}
