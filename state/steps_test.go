//go:build fuelsync_testhooks && linux

package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The tests that fail, kill or count the steps of a publish through
// the failpoint state/step (onStep), which only a build with the tag
// fuelsync_testhooks has (make test passes it; nohooks_test.go says when it is
// missing).

// TestPublishFailedStep fails each step of Tidy and Publish in turn (its failpoint
// returning an error, as a full disk would), publishing serial 1, then 2, then 6
// over 5 sets, each with node directories (shared trees, one new each time):
// an error before the switch leaves the previous state and is not an
// *AppliedError; one after it is, and the new state is in place; the next
// Publish works either way.
func TestPublishFailedStep(t *testing.T) {
	defer offStep()
	boom := errors.New("no space left on device")
	for _, before := range []int64{0, 1, Keep} {
		failed, applied := 0, 0
		for n := 1; ; n++ {
			w := Open(filepath.Join(t.TempDir(), "wd"))
			l, err := w.Lock(context.Background(), "test", 0)
			if err != nil {
				t.Fatal(err)
			}
			for s := int64(1); s <= before; s++ {
				if err := publish(t, w, l, s, map[string]string{"c/a.yaml": "a" + strconv.FormatInt(s, 10), "c/nodes/n/a.yaml": "n" + strconv.FormatInt(s, 10), "c/nodes/m/a.yaml": "m"}); err != nil {
					t.Fatal(err)
				}
			}
			count, hit := 0, ""
			var mu sync.Mutex // steps of node directories run in parallel
			onStep(func(step string) error {
				mu.Lock()
				defer mu.Unlock()
				if count++; count == n {
					hit = step
					return boom
				}
				return nil
			})
			err = w.Tidy(l)
			if err == nil {
				err = publish(t, w, l, before+1, map[string]string{"c/a.yaml": "new", "c/d/b.yaml": "b", "c/nodes/n/a.yaml": "new", "c/nodes/m/a.yaml": "m"})
			}
			offStep()
			if hit == "" {
				l.Unlock()
				break
			}
			what := fmt.Sprintf("serial %d, step %d (%s)", before+1, n, hit)
			st, rerr := w.ReadState()
			if rerr != nil {
				t.Fatalf("%s: the state does not read: %v", what, rerr)
			}
			var ae *AppliedError
			switch {
			case err == nil && strings.HasPrefix(hit, "remove "):
				// Removing leftovers and old sets is best effort.
			case err == nil:
				t.Errorf("%s: no error", what)
			case st.Serial == before && !errors.As(err, &ae) && errors.Is(err, boom):
				failed++
			case st.Serial == before+1 && errors.As(err, &ae) && ae.Serial == before+1 && errors.Is(err, boom):
				applied++
			default:
				t.Errorf("%s: serial %d after the error %v", what, st.Serial, err)
			}
			if err := publish(t, w, l, st.Serial+1, map[string]string{"c/a.yaml": "next"}); err != nil {
				t.Errorf("%s: the next publish: %v", what, err)
			}
			l.Unlock()
		}
		if failed < 10 || applied == 0 {
			t.Errorf("serial %d: %d failures before the switch, %d after", before+1, failed, applied)
		}
	}
}

// TestPublishStepsSameEachRun publishes one set, its files put from several
// goroutines, into new work directories again and again: the steps are the
// same each time (in some order), as the kill tests that count them need.
// Objects share directories by the first two hex digits of their sha256 and
// node directories share their cluster's nodes/, so two goroutines often
// need one directory at once; it is made in one step, not one per goroutine.
func TestPublishStepsSameEachRun(t *testing.T) {
	defer offStep()
	files := map[string]string{}
	for i := range 240 {
		switch i % 3 {
		case 0:
			files[fmt.Sprintf("c%d/nodes/n%d/graph.yaml", i%4, i)] = fmt.Sprint("node ", i)
		case 1:
			files[fmt.Sprintf("c%d/tasks/t%d.yaml", i%4, i)] = fmt.Sprint("task ", i)
		default:
			files[fmt.Sprintf("c%d/f%d.yaml", i%4, i)] = fmt.Sprint("file ", i)
		}
	}
	names := slices.Sorted(maps.Keys(files))
	random := regexp.MustCompile(`(\.tmp-[0-9a-z]*)-[0-9a-f]+`)
	var first []string
	for run := range 6 {
		w := Open(filepath.Join(t.TempDir(), "wd"))
		l, err := w.Lock(context.Background(), "test", 0)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var steps []string
		onStep(func(step string) error {
			mu.Lock()
			defer mu.Unlock()
			steps = append(steps, random.ReplaceAllString(step, "$1-*"))
			return nil
		})
		st := Empty()
		st.Serial = 1
		for name := range files {
			st.Artifacts[name] = "x"
		}
		err = w.Publish(l, st, func(put func(string, []byte) error) error {
			return inParallel(len(names), func(i int) error { return put(names[i], []byte(files[names[i]])) })
		})
		offStep()
		l.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(steps)
		if run == 0 {
			first = steps
			continue
		}
		if diff := cmp.Diff(first, steps); diff != "" {
			t.Fatalf("run %d took other steps than the first (-first +run %d):\n%s", run, run, diff)
		}
	}
	if len(first) < len(files) {
		t.Fatalf("%d steps for %d files", len(first), len(files))
	}
}

// TestStorePruneTrees publishes Keep+3 sets, each changing one node directory
// and sharing the others: after each publish, trees/ holds exactly the trees
// the kept sets link, and nodesets/ exactly the nodesets they link (cluster
// d's, shared by every set, stays while sets linking it are pruned); a tree
// or nodeset planted by hand that no set links and a temporary one of a
// crashed run are removed, only after the commit point, the nodesets before
// the trees, and the trees before the objects only they linked.
func TestStorePruneTrees(t *testing.T) {
	w, l := lockedWorkdir(t)
	defer offStep()
	for n := int64(1); n <= Keep+3; n++ {
		if n > 1 {
			for _, name := range []string{strings.Repeat("ab", 16), ".tmp-" + strings.Repeat("cd", 16) + "-c0ffee00"} {
				if err := os.MkdirAll(filepath.Join(w.trees(), name), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(w.trees(), name, "x.yaml"), []byte("stray"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.MkdirAll(filepath.Join(w.nodesets(), name), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(nodesetTreePrefix+strings.Repeat("ab", 16), filepath.Join(w.nodesets(), name, "n")); err != nil {
					t.Fatal(err)
				}
			}
		}
		files := map[string]string{
			"c/nodes/shared/a.yaml": "shared",
			"c/nodes/own/a.yaml":    fmt.Sprintf("own %d", n),
			"d/nodes/shared/a.yaml": "d shared", "d/nodes/shared/b.yaml": "d b",
		}
		var steps []string
		var mu sync.Mutex // steps of node directories run in parallel
		onStep(func(step string) error { mu.Lock(); steps = append(steps, step); mu.Unlock(); return nil })
		err := publish(t, w, l, n, files)
		offStep()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, s := range w.sets() {
			for _, nd := range []string{"c/nodes/shared", "c/nodes/own", "d/nodes/shared"} {
				want[treeOfNode(t, w, s, nd)] = true
			}
		}
		if diff := cmp.Diff(slices.Sorted(func(yield func(string) bool) {
			for id := range want {
				if !yield(id) {
					return
				}
			}
		}), treeNames(t, w)); diff != "" {
			t.Errorf("serial %d: trees (-linked by the kept sets +trees/):\n%s", n, diff)
		}
		if got := int64(len(want)); got != min(n, Keep)+2 {
			t.Errorf("serial %d: %d trees, want %d (one own per kept set, two shared)", n, got, min(n, Keep)+2)
		}
		checkNodesetsKept(t, w, n)
		checkPruneOrder(t, n, steps)
		for s := range w.sets() {
			checkSet(t, w, w.sets()[s], map[string]string{
				"c/nodes/shared/a.yaml": "shared",
				"c/nodes/own/a.yaml":    fmt.Sprintf("own %d", w.sets()[s]),
				"d/nodes/shared/a.yaml": "d shared", "d/nodes/shared/b.yaml": "d b",
			})
		}
	}
	// The objects: the strays' content went with them; the kept sets' stay.
	if diff := cmp.Diff(Keep+3, len(objectNames(t, w))); diff != "" {
		t.Errorf("objects (-want +got): %s %q", diff, objectNames(t, w))
	}
}

// checkNodesetsKept checks that nodesets/ holds exactly the nodesets the
// kept sets link, after the publish of serial n of TestStorePruneTrees: c's of
// each kept set, and d's, shared by all.
func checkNodesetsKept(t *testing.T, w *Workdir, n int64) {
	t.Helper()
	wantSets := map[string]bool{}
	for _, s := range w.sets() {
		for _, c := range []string{"c", "d"} {
			wantSets[nodesetOf(t, w, s, c)] = true
		}
	}
	var gotSets []string
	if ents, err := os.ReadDir(w.nodesets()); err == nil {
		for _, e := range ents {
			gotSets = append(gotSets, e.Name())
		}
	}
	if diff := cmp.Diff(slices.Sorted(maps.Keys(wantSets)), gotSets); diff != "" {
		t.Errorf("serial %d: nodesets (-linked by the kept sets +nodesets/):\n%s", n, diff)
	}
	if got := int64(len(wantSets)); got != min(n, Keep)+1 {
		t.Errorf("serial %d: %d nodesets, want %d (c's of each kept set, d's shared)", n, got, min(n, Keep)+1)
	}
}

// checkPruneOrder checks the steps of the publish of serial n of
// TestStorePruneTrees: nodesets, trees and objects are removed after the
// commit point, the nodesets before the trees, the trees before the objects.
func checkPruneOrder(t *testing.T, n int64, steps []string) {
	t.Helper()
	commit := slices.Index(steps, "rename current")
	lastTree, firstObject, lastNodeset, firstTree := -1, len(steps), -1, len(steps)
	for i, s := range steps {
		if strings.HasPrefix(s, "remove nodeset ") {
			if i < commit {
				t.Errorf("serial %d: %s before the commit point", n, s)
			}
			lastNodeset = i
		}
		if strings.HasPrefix(s, "remove tree ") {
			if i < commit {
				t.Errorf("serial %d: %s before the commit point", n, s)
			}
			lastTree, firstTree = i, min(firstTree, i)
		}
		if strings.HasPrefix(s, "remove object ") {
			firstObject = min(firstObject, i)
		}
	}
	if lastTree > firstObject {
		t.Errorf("serial %d: a tree removed after an object", n)
	}
	if lastNodeset > firstTree {
		t.Errorf("serial %d: a nodeset removed after a tree", n)
	}
	if n > 1 && lastNodeset < 0 {
		t.Errorf("serial %d: no nodeset removed", n)
	}
	if n > 1 && lastTree < 0 {
		t.Errorf("serial %d: no tree removed", n)
	}
}

// TestStoreSymlinkFallback makes the first symlink of a node directory fail
// with EPERM (as on a file system without symlinks): the node directories are
// real directories of links to the objects, every set reads right, and Warn
// says so once.
func TestStoreSymlinkFallback(t *testing.T) {
	defer offStep()
	w, l := lockedWorkdir(t)
	var warnings []string
	w.Warn = func(msg string) { warnings = append(warnings, msg) }
	onStep(func(step string) error {
		if strings.HasPrefix(step, "symlink tree ") || strings.HasPrefix(step, "symlink nodeset ") || strings.HasPrefix(step, "symlink nodes ") {
			return &os.LinkError{Op: "symlink", Old: "tree", New: step, Err: syscall.EPERM}
		}
		return nil
	})
	for n := int64(1); n <= 2; n++ {
		files := map[string]string{"c/nodes/n1/a.yaml": "a", "c/nodes/n2/a.yaml": fmt.Sprintf("b%d", n)}
		if err := publish(t, w, l, n, files); err != nil {
			t.Fatal(err)
		}
		checkSet(t, w, n, files)
		for _, nd := range []string{"n1", "n2"} {
			fi, err := os.Lstat(filepath.Join(w.SetDir(n), "c", "nodes", nd))
			if err != nil || !fi.IsDir() {
				t.Errorf("set %d: c/nodes/%s is %v, want a directory", n, nd, fi.Mode())
			}
		}
		p := filepath.Join(w.SetDir(n), "c", "nodes", "n1", "a.yaml")
		obj := filepath.Join(w.objects(), shaHex([]byte("a"))[:2], shaHex([]byte("a")))
		if ino, _ := inode(t, p); ino != func() uint64 { i, _ := inode(t, obj); return i }() {
			t.Errorf("set %d: c/nodes/n1/a.yaml is not a link to its object", n)
		}
	}
	offStep()
	if len(warnings) != 1 || !strings.Contains(warnings[0], "symlinks do not work") {
		t.Errorf("warnings: %q", warnings)
	}
	if trees := treeNames(t, w); len(trees) != 0 {
		t.Errorf("trees no set links are left: %q", trees)
	}
	if sets, _ := os.ReadDir(w.nodesets()); len(sets) != 0 {
		t.Errorf("nodesets no set links are left: %v", sets)
	}
}

// TestStoreTreeRebuildFailedStep damages a tree two sets share, or the
// nodeset they share (an entry removed), then fails each step of the publish
// that rebuilds it in turn (as a full disk would): after every failure the
// state is the previous one or the new one, the next publish works, and then
// every kept set reads right. The exchange of the damaged tree or nodeset
// and the removal of the old one are among the steps failed.
func TestStoreTreeRebuildFailedStep(t *testing.T) {
	defer offStep()
	for _, tc := range []struct {
		name   string
		files  map[string]string
		damage func(w *Workdir) string
		want   []string
	}{
		// One node directory: its steps come in one order (node
		// directories are linked in parallel).
		{"tree", map[string]string{"c/nodes/n1/a.yaml": "a\n", "c/nodes/n1/b.yaml": "b\n", "c/cluster.yaml": "other\n"},
			func(w *Workdir) string { return filepath.Join(w.trees(), treeOfNode(t, w, 1, "c/nodes/n1"), "b.yaml") },
			[]string{"mkdir tree", "link tree", "exchange tree", "remove tree", "symlink nodes"}},
		{"nodeset", map[string]string{"c/nodes/n1/a.yaml": "a\n", "c/nodes/n2/a.yaml": "b\n", "c/cluster.yaml": "other\n"},
			func(w *Workdir) string { return filepath.Join(w.nodesets(), nodesetOf(t, w, 1, "c"), "n2") },
			[]string{"mkdir nodeset", "symlink nodeset", "exchange nodeset", "remove nodeset", "symlink nodes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hit := failEachRebuildStep(t, tc.files, tc.damage)
			for _, s := range tc.want {
				if !hit[s] {
					t.Errorf("no step %q failed; failed: %v", s, hit)
				}
			}
		})
	}
}

// failEachRebuildStep publishes files twice, damages what damage returns
// (removes it), and fails each step of the next publish in turn; it returns
// the kinds of steps failed (their first two words).
func failEachRebuildStep(t *testing.T, files map[string]string, damage func(w *Workdir) string) map[string]bool {
	boom := errors.New("no space left on device")
	hit := map[string]bool{}
	for n := 1; ; n++ {
		w, l := lockedWorkdir(t)
		for s := int64(1); s <= 2; s++ {
			if err := publish(t, w, l, s, files); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Remove(damage(w)); err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		count, step := 0, ""
		onStep(func(s string) error {
			mu.Lock()
			defer mu.Unlock()
			if count++; count == n {
				step = s
				return boom
			}
			return nil
		})
		err := publish(t, w, l, 3, files)
		offStep()
		if step == "" {
			if err != nil {
				t.Fatal(err)
			}
			return hit
		}
		hit[strings.Join(strings.Fields(step)[:2], " ")] = true
		st, rerr := w.ReadState()
		if rerr != nil || (st.Serial != 2 && st.Serial != 3) {
			t.Fatalf("step %d (%s): serial %v, %v", n, step, st, rerr)
		}
		if err := publish(t, w, l, st.Serial+1, files); err != nil {
			t.Fatalf("step %d (%s): the next publish: %v", n, step, err)
		}
		for _, s := range w.sets() {
			checkSet(t, w, s, files)
		}
	}
}

// TestStorePruneObjects publishes Keep+3 sets sharing one file and each with a
// file of its own: after each publish, the objects are exactly the contents of
// the kept sets; an object planted by hand that no set links and the temporary
// object of a crashed run are removed too, and only after the commit point.
func TestStorePruneObjects(t *testing.T) {
	w, l := lockedWorkdir(t)
	kept := func() []string {
		want := map[string]bool{}
		for _, n := range w.sets() {
			_ = filepath.WalkDir(w.SetDir(n), func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && d.Name() != ".state.json" && d.Name() != sealName {
					data, _ := os.ReadFile(p)
					want[shaHex(data)] = true
				}
				return err
			})
		}
		return slices.Sorted(maps.Keys(want))
	}
	defer offStep()
	for n := int64(1); n <= Keep+3; n++ {
		stray := []byte(fmt.Sprintf("stray %d", n))
		strayDir := filepath.Join(w.objects(), shaHex(stray)[:2])
		if n > 1 {
			if err := os.MkdirAll(strayDir, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{shaHex(stray), ".tmp-" + shaHex(stray) + "-c0ffee00"} {
				if err := os.WriteFile(filepath.Join(strayDir, name), stray, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		var steps []string
		onStep(func(step string) error { steps = append(steps, step); return nil })
		err := publish(t, w, l, n, map[string]string{"c/shared.yaml": "shared", "c/own.yaml": fmt.Sprintf("own %d", n)})
		offStep()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(kept(), objectNames(t, w)); diff != "" {
			t.Errorf("serial %d: objects (-the kept sets' contents +the store):\n%s", n, diff)
		}
		if len(w.sets()) > Keep {
			t.Errorf("serial %d: %d sets", n, len(w.sets()))
		}
		commit := slices.Index(steps, "rename current")
		for i, s := range steps {
			if strings.HasPrefix(s, "remove object ") && i < commit {
				t.Errorf("serial %d: %s before the commit point (step %d of %d)", n, s, i, commit)
			}
		}
		removed := slices.DeleteFunc(slices.Clone(steps), func(s string) bool { return !strings.HasPrefix(s, "remove object ") })
		if want := map[bool]int{true: 2, false: 0}[n > 1] + map[bool]int{true: 1, false: 0}[n > Keep]; len(removed) != want {
			t.Errorf("serial %d: removed %q, want %d objects (the strays, and the own file of the pruned set)", n, removed, want)
		}
	}
	if diff := cmp.Diff(1+Keep, len(objectNames(t, w))); diff != "" {
		t.Errorf("objects of 5 sets sharing one file: (-want +got):\n%s", diff)
	}
}

// TestStoreLinkFallback makes the first hard link fail with EPERM (as on a file
// system without them) or EXDEV: the sets are written as full copies, with the
// right contents, and Warn says so once.
func TestStoreLinkFallback(t *testing.T) {
	defer offStep()
	for _, errno := range []syscall.Errno{syscall.EPERM, syscall.EXDEV} {
		t.Run(errno.Error(), func(t *testing.T) {
			w, l := lockedWorkdir(t)
			var warnings []string
			w.Warn = func(msg string) { warnings = append(warnings, msg) }
			onStep(func(step string) error {
				if strings.HasPrefix(step, "link ") {
					return &os.LinkError{Op: "link", Old: "object", New: step, Err: errno}
				}
				return nil
			})
			for n := int64(1); n <= 2; n++ {
				files := map[string]string{"c/a.yaml": "a", "c/b.yaml": fmt.Sprintf("b%d", n)}
				if err := publish(t, w, l, n, files); err != nil {
					t.Fatal(err)
				}
				for name, want := range files {
					p := filepath.Join(w.SetDir(n), filepath.FromSlash(name))
					if got, err := os.ReadFile(p); err != nil || string(got) != want {
						t.Errorf("set %d: %s = %q, %v", n, name, got, err)
					}
					if _, nlink := inode(t, p); nlink != 1 {
						t.Errorf("set %d: %s has %d links, want a copy", n, name, nlink)
					}
				}
			}
			offStep()
			if len(warnings) != 1 || !strings.Contains(warnings[0], "full copy") || !strings.Contains(warnings[0], errno.Error()) {
				t.Errorf("warnings: %q", warnings)
			}
			if objs := objectNames(t, w); len(objs) != 0 {
				t.Errorf("objects nothing links are left: %v", objs)
			}
		})
	}
}
