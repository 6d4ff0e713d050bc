package reports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/state"
)

// Workdir keeps the reports in the work directory Dir, beside (not inside)
// the applied sets:
//
//	<workdir>/reports/nodes/<cluster>/<node>/<seq>.json   a node's reports, summarized (MarshalSummary), the highest seq its last
//	<workdir>/reports/nodes/<cluster>/<node>/last.json    the node's last report whole, with its tasks (MarshalWhole)
//	<workdir>/reports/reconciles/<cluster>/<seq>.json     a cluster's reconciles
//
// (<seq> in 16 decimal digits). Each file is written whole through a synced
// temporary file renamed over it (state.WriteFileAtomic): a crash leaves the
// old content or the new. Reports are written only into a work directory
// fuelsync has claimed (its marker), and no directory on the way may be a
// symbolic link. One process writes (serve holds the work directory's lock
// for its reconciles; another reads, as fuelsync status does).
type Workdir struct {
	Dir string

	locks sync.Map // cluster/node → *sync.Mutex: one Put at a time per node
}

// maxStoredFile bounds a stored report or reconcile read back.
const maxStoredFile = 4 * MaxBody

func (w *Workdir) String() string { return "the work directory " + w.Dir }

func seqName(seq int64) string { return SeqKey(seq) + ".json" }

// seqOf is the seq of a stored file's name; ok is false for any other name
// (the temporary files among them).
func seqOf(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok || len(digits) != 16 {
		return 0, false
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	return n, err == nil && n > 0
}

// dir returns the directory <workdir>/reports/<parts...>, made when make is
// set: every part must be a name (the first is nodes or reconciles), and every
// directory on the way a directory, not a link. A missing one is
// fs.ErrNotExist when make is not set.
func (w *Workdir) dir(mk bool, parts ...string) (string, error) {
	if _, err := os.Lstat(filepath.Join(w.Dir, state.MarkerName)); err != nil {
		if mk {
			return "", fmt.Errorf("%s is not a claimed work directory (nothing applied there yet): no report is kept", w.Dir)
		}
		return "", fs.ErrNotExist
	}
	p := filepath.Join(w.Dir, "reports")
	for i, part := range append([]string{""}, parts...) {
		if i > 0 {
			if !loader.IsName(part) {
				return "", fmt.Errorf("%q is not a name", part)
			}
			p = filepath.Join(p, part)
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) && mk {
			if err = os.Mkdir(p, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				fi, err = os.Lstat(p)
			}
		}
		if err != nil {
			return "", err
		}
		if !fi.IsDir() {
			return "", fmt.Errorf("%s is not a directory (a link or a file): no report is read or written through it", p)
		}
	}
	return p, nil
}

func (w *Workdir) lock(key string) func() {
	m, _ := w.locks.LoadOrStore(key, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// seqs lists the stored files' seqs in dir, ascending, and removes the
// temporary files crashed writes left.
func seqs(dir string, clean bool) ([]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range entries {
		if n, ok := seqOf(e.Name()); ok && e.Type().IsRegular() {
			out = append(out, n)
		} else if clean && strings.HasPrefix(e.Name(), ".") && strings.Contains(e.Name(), ".json.tmp-") {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

// lastName is the file of a node's last report, whole.
const lastName = "last.json"

// readFile reads a stored file, at most maxStoredFile bytes.
func readFile(name string) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStoredFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxStoredFile {
		return nil, fmt.Errorf("%s is over %d bytes", name, maxStoredFile)
	}
	return data, nil
}

// readJSON reads a stored file into v.
func readJSON(name string, v any) error {
	return readWith(name, func(data []byte) error { return json.Unmarshal(data, v) })
}

// readWith reads a stored file and decodes it with decode.
func readWith(name string, decode func([]byte) error) error {
	data, err := readFile(name)
	if err != nil {
		return err
	}
	if err := decode(data); err != nil {
		return fmt.Errorf("%s does not parse: %w", name, err)
	}
	return nil
}

// readSummary reads a history file: a summary (or a report kept whole
// before, summarized).
func readSummary(name string) (*Report, error) {
	var r *Report
	err := readWith(name, func(data []byte) (err error) {
		r, err = UnmarshalSummary(data)
		return err
	})
	return r, err
}

// trim removes the files of dir whose seq is at most last-keep.
func trim(dir string, have []int64, last int64, keep int) {
	for _, n := range have {
		if n <= last-int64(keep) {
			os.Remove(filepath.Join(dir, seqName(n)))
		}
	}
}

// Put implements Backend.
func (w *Workdir) Put(_ context.Context, r *Report, keep int) error {
	defer w.lock(r.Cluster + "/" + r.Node)()
	dir, err := w.dir(true, "nodes", r.Cluster, r.Node)
	if err != nil {
		return err
	}
	have, err := seqs(dir, true)
	if err != nil {
		return err
	}
	r.Seq = 1
	if len(have) > 0 {
		newest := have[len(have)-1]
		prev, err := readSummary(filepath.Join(dir, seqName(newest)))
		if err != nil {
			return err
		}
		r.Seq = newest + 1
		if SameRun(prev, r) {
			r.Seq = newest
		}
	}
	summary, err := MarshalSummary(r)
	if err != nil {
		return err
	}
	whole, err := MarshalWhole(r)
	if err != nil {
		return err
	}
	// The history's entry first: it is the node's last report (Last); the
	// whole one is taken only when it is that report (Whole).
	if err := state.WriteFileAtomic(filepath.Join(dir, seqName(r.Seq)), summary); err != nil {
		return err
	}
	if err := state.WriteFileAtomic(filepath.Join(dir, lastName), whole); err != nil {
		return err
	}
	trim(dir, have, r.Seq, keep)
	return nil
}

// Whole implements Backend: last.json when it is the report of the
// history's newest entry (same seq and receipt), else that entry (a report
// kept whole before, or a summary).
func (w *Workdir) Whole(_ context.Context, cluster, node string) (*Report, error) {
	dir, err := w.dir(false, "nodes", cluster, node)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	have, err := seqs(dir, false)
	if err != nil || len(have) == 0 {
		return nil, err
	}
	var newest *Report
	if err := readWith(filepath.Join(dir, seqName(have[len(have)-1])), func(data []byte) (err error) {
		newest, err = UnmarshalWhole(data)
		return err
	}); err != nil {
		return nil, err
	}
	var last *Report
	err = readWith(filepath.Join(dir, lastName), func(data []byte) (err error) {
		last, err = UnmarshalWhole(data)
		return err
	})
	if err == nil && last.Seq == newest.Seq && last.ReceivedAt.Equal(newest.ReceivedAt) {
		newest = last
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	newest.Cluster, newest.Node = cluster, node
	return newest, nil
}

// Last implements Backend.
func (w *Workdir) Last(context.Context) ([]*Report, error) {
	root, err := w.dir(false, "nodes")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	clusters, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []*Report
	for _, c := range clusters {
		if !c.IsDir() || !loader.IsName(c.Name()) {
			continue
		}
		nodes, err := os.ReadDir(filepath.Join(root, c.Name()))
		if err != nil {
			return nil, err
		}
		for _, n := range nodes {
			if !n.IsDir() || !loader.IsName(n.Name()) {
				continue
			}
			dir := filepath.Join(root, c.Name(), n.Name())
			have, err := seqs(dir, false)
			if err != nil || len(have) == 0 {
				continue
			}
			r, err := readSummary(filepath.Join(dir, seqName(have[len(have)-1])))
			if err != nil {
				return nil, err
			}
			r.Cluster, r.Node = c.Name(), n.Name()
			out = append(out, r)
		}
	}
	return out, nil
}

// History implements Backend.
func (w *Workdir) History(_ context.Context, cluster, node string) ([]*Report, error) {
	dir, err := w.dir(false, "nodes", cluster, node)
	out, err := newestFirst(dir, err, readSummary)
	for _, r := range out {
		r.Cluster, r.Node = cluster, node
	}
	return out, err
}

// newestFirst reads the numbered files of dir (seqs), newest first, each by
// read, skipping a file dropped meanwhile; none when dir does not exist. err
// is the error of finding dir.
func newestFirst[T any](dir string, err error, read func(name string) (*T, error)) ([]*T, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	have, err := seqs(dir, false)
	if err != nil {
		return nil, err
	}
	out := make([]*T, 0, len(have))
	for _, n := range slices.Backward(have) {
		v, err := read(filepath.Join(dir, seqName(n)))
		if errors.Is(err, fs.ErrNotExist) {
			continue // dropped meanwhile
		} else if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// PutReconcile implements Backend.
func (w *Workdir) PutReconcile(_ context.Context, rec *Reconcile, keep int) error {
	defer w.lock(rec.Cluster + "/")()
	dir, err := w.dir(true, "reconciles", rec.Cluster)
	if err != nil {
		return err
	}
	have, err := seqs(dir, true)
	if err != nil {
		return err
	}
	rec.Seq = 1
	if len(have) > 0 {
		rec.Seq = have[len(have)-1] + 1
	}
	data, err := Marshal(rec)
	if err != nil {
		return err
	}
	if err := state.WriteFileAtomic(filepath.Join(dir, seqName(rec.Seq)), data); err != nil {
		return err
	}
	trim(dir, have, rec.Seq, keep)
	return nil
}

// Reconciles implements Backend.
func (w *Workdir) Reconciles(_ context.Context, cluster string) ([]*Reconcile, error) {
	dir, err := w.dir(false, "reconciles", cluster)
	return newestFirst(dir, err, func(name string) (*Reconcile, error) {
		rec := &Reconcile{}
		return rec, readJSON(name, rec)
	})
}

// Remove implements Backend.
func (w *Workdir) Remove(_ context.Context, cluster, node string) error {
	if node == "" {
		for _, kind := range []string{"nodes", "reconciles"} {
			dir, err := w.dir(false, kind, cluster)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			if err := os.RemoveAll(dir); err != nil {
				return err
			}
		}
		return nil
	}
	defer w.lock(cluster + "/" + node)()
	dir, err := w.dir(false, "nodes", cluster, node)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return os.RemoveAll(dir)
}
