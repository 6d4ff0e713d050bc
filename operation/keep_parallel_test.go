package operation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// TestEachIndex: every index is called once; after a failure, the error
// returned is the one of the lowest index that fails, whatever the number
// of workers, as a loop in order returns it, and every index below it was
// called.
func TestEachIndex(t *testing.T) {
	for _, tc := range []struct {
		n, workers int
		fail       []int
	}{
		{0, 8, nil},
		{1, 8, nil},
		{5, 1, nil},
		{1000, 8, nil},
		{1000, 1, []int{37, 900}},
		{1000, 3, []int{37, 900}},
		{1000, 8, []int{37, 38, 39, 900}},
		{1000, 8, []int{999}},
		{1000, 64, []int{0}},
	} {
		t.Run(fmt.Sprintf("n%d-w%d-fail%v", tc.n, tc.workers, tc.fail), func(t *testing.T) {
			calls := make([]atomic.Int32, tc.n)
			err := eachIndex(tc.n, tc.workers, func(i int) error {
				calls[i].Add(1)
				if slices.Contains(tc.fail, i) {
					return fmt.Errorf("index %d", i)
				}
				return nil
			})
			last := tc.n
			if len(tc.fail) > 0 {
				last = tc.fail[0]
				if err == nil || err.Error() != fmt.Sprintf("index %d", last) {
					t.Errorf("error %v, want index %d's", err, last)
				}
			} else if err != nil {
				t.Errorf("error %v", err)
			}
			for i := range calls {
				switch n := calls[i].Load(); {
				case n > 1:
					t.Errorf("index %d called %d times", i, n)
				case i <= last && i < tc.n && n != 1:
					t.Errorf("index %d, not after the first failure, called %d times", i, n)
				}
			}
		})
	}
}

// TestKeepAppliedInParallelAsInOrder: an apply that keeps many files of the
// applied set links them on several goroutines, and publishes what it
// publishes linking them one after another: the same set, the same clusters
// found changed in place and rendered again, or the same error when one of
// them cannot be. The files kept are of every kind: unchanged (linked by
// their stat), written since the seal with the same content or replaced by
// a copy or removed from the set (read, from the set or the object store,
// and checked), and written in place, the object with them (damaged).
func TestKeepAppliedInParallelAsInOrder(t *testing.T) {
	defer func(n int) { syscallWorkers = n }(syscallWorkers)
	type outcome struct {
		err     string
		damaged []string
		serial  int64
		files   map[string]string
	}
	run := func(workers int, canRender func(string) bool) outcome {
		syscallWorkers = workers
		w, l, st, files := keptFleet(t)
		damageKeptFleet(t, w, st)
		var mu sync.Mutex
		var out outcome
		src := setSource{
			staged: map[string]string{},
			render: func(clusters []string, put func(string, []byte) error) error {
				return putFiles(files, clusters, put)
			},
			canRender: canRender,
			damaged: func(c string, _ error) {
				mu.Lock()
				defer mu.Unlock()
				out.damaged = append(out.damaged, c)
			},
		}
		next, err := publishPlan(w, l, st, planOf(st, files, "r2"), nil, src)
		if err != nil {
			out.err = err.Error()
		}
		cur, rerr := w.ReadState()
		if rerr != nil {
			t.Fatal(rerr)
		}
		if err == nil && cur.Serial != next.Serial {
			t.Fatalf("serial %d published, %d read", next.Serial, cur.Serial)
		}
		out.serial, out.files = cur.Serial, setFiles(t, w, cur.Serial)
		return out
	}
	for _, tc := range []struct {
		name      string
		canRender func(string) bool
		damaged   []string
		err       string
	}{
		{name: "repaired", damaged: []string{"c03", "c04"}},
		{name: "unrenderable", canRender: func(c string) bool { return c != "c04" },
			err: "cluster c03: keeping the applied c03/nodes/node-2/default.yaml: neither the applied set nor the object store holds what the state says any more (changed in place); " +
				"cluster c04: keeping the applied c04/cluster.yaml: neither the applied set nor the object store holds what the state says any more (changed in place)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inOrder := run(1, tc.canRender)
			if inOrder.err != tc.err || !slices.Equal(inOrder.damaged, tc.damaged) {
				t.Fatalf("in order: error %q, damaged %q; want %q, %q", inOrder.err, inOrder.damaged, tc.err, tc.damaged)
			}
			if want := int64(2); tc.err != "" {
				want = 1
				if inOrder.serial != want {
					t.Fatalf("in order: serial %d after the failure", inOrder.serial)
				}
			} else if inOrder.serial != want || !maps.Equal(inOrder.files, fleetFiles()) {
				t.Fatalf("in order: serial %d, the set's files differ from the render's", inOrder.serial)
			}
			for range 2 {
				got := run(16, tc.canRender)
				if got.err != inOrder.err || !slices.Equal(got.damaged, inOrder.damaged) || got.serial != inOrder.serial || !maps.Equal(got.files, inOrder.files) {
					t.Fatalf("on 16 goroutines: error %q, damaged %q, serial %d, %d files; in order: %q, %q, %d, %d files",
						got.err, got.damaged, got.serial, len(got.files), inOrder.err, inOrder.damaged, inOrder.serial, len(inOrder.files))
				}
			}
		})
	}
}

// fleetFiles are the files of keptFleet's render: 8 clusters of 8 nodes.
func fleetFiles() map[string]string {
	files := map[string]string{}
	for c := range 8 {
		cluster := fmt.Sprintf("c%02d", c)
		files[cluster+"/cluster.yaml"] = "cluster: " + cluster + "\n"
		for n := 1; n <= 8; n++ {
			for _, f := range []string{"default.yaml", "provision.yaml"} {
				name := fmt.Sprintf("%s/nodes/node-%d/%s", cluster, n, f)
				files[name] = "file: " + name + "\n"
			}
		}
	}
	return files
}

// keptFleet applies fleetFiles into a new work directory, as an apply of a
// render would, and returns the work directory, its lock (held until the
// test ends), the state applied and the files.
func keptFleet(t *testing.T) (*state.Workdir, *state.Lock, *state.State, map[string]string) {
	t.Helper()
	w := state.Open(filepath.Join(t.TempDir(), "wd"))
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Unlock() })
	st, err := w.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	files := fleetFiles()
	clusters := map[string]bool{}
	for name := range files {
		clusters[state.ClusterOf(name)] = true
	}
	src := setSource{fromRender: slices.Sorted(maps.Keys(clusters)), render: func(clusters []string, put func(string, []byte) error) error {
		return putFiles(files, clusters, put)
	}}
	next, err := publishPlan(w, l, st, planOf(st, files, "r1"), nil, src)
	if err != nil {
		t.Fatal(err)
	}
	// The next apply's seal is after every mtime of this one's.
	time.Sleep(10 * time.Millisecond)
	return w, l, next, files
}

// damageKeptFleet changes files of keptFleet's set st: c01's written again
// as they were (after the seal), c02's replaced by a copy, c05's removed
// from the set (its object stays), c03's and c04's written in place, their
// objects with them (damaged).
func damageKeptFleet(t *testing.T, w *state.Workdir, st *state.State) {
	t.Helper()
	set := w.SetDir(st.Serial)
	for _, d := range []struct {
		name string
		do   func(p string, data []byte) error
	}{
		{"c01/nodes/node-3/default.yaml", func(p string, data []byte) error { return os.WriteFile(p, data, 0o644) }},
		{"c01/cluster.yaml", func(p string, data []byte) error { return os.WriteFile(p, data, 0o644) }},
		{"c02/nodes/node-7/provision.yaml", func(p string, data []byte) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.WriteFile(p, data, 0o644)
		}},
		{"c05/nodes/node-6/default.yaml", func(p string, _ []byte) error { return os.Remove(p) }},
		{"c03/nodes/node-2/default.yaml", func(p string, _ []byte) error { return os.WriteFile(p, []byte("damaged\n"), 0o644) }},
		{"c04/cluster.yaml", func(p string, _ []byte) error { return os.WriteFile(p, []byte("damaged\n"), 0o644) }},
	} {
		p := filepath.Join(set, filepath.FromSlash(d.name))
		data, err := os.ReadFile(p)
		if err == nil {
			err = d.do(p, data)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// putFiles puts the files of clusters, sorted.
func putFiles(files map[string]string, clusters []string, put func(string, []byte) error) error {
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if slices.Contains(clusters, state.ClusterOf(name)) {
			if err := put(name, []byte(files[name])); err != nil {
				return err
			}
		}
	}
	return nil
}

// planOf is the plan of revision rev, whose files are files, made against st.
func planOf(st *state.State, files map[string]string, rev string) *Plan {
	p := &Plan{FormatVersion: PlanFormatVersion, Lineage: st.Lineage, Serial: st.Serial, Revision: rev, ToolVersion: "test", Artifacts: map[string]string{}}
	for name, data := range files {
		p.Artifacts[name] = digestOf([]byte(data))
	}
	manifest, err := render.Manifest(p.Artifacts, p.SetRev(), p.ToolVersion)
	if err != nil {
		panic(err)
	}
	p.Artifacts["manifest.json"] = digestOf(manifest)
	p.ChangesPresent = true
	return p
}

// setFiles are the files of the applied set n but its manifest, read.
func setFiles(t *testing.T, w *state.Workdir, n int64) map[string]string {
	t.Helper()
	files := map[string]string{}
	fsys := w.SetFS(n)
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || name == "manifest.json" || strings.HasPrefix(name, ".") {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		files[name] = string(data)
		return err
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return files
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
