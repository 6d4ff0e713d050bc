package runs

import (
	"bufio"
	"bytes"
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

// Workdir keeps runs in the work directory Dir, beside the applied sets:
//
//	<workdir>/runs/<cluster>/<id>/run.json        the header
//	<workdir>/runs/<cluster>/<id>/events.jsonl    the log, one event a line, appended and synced
//	<workdir>/runs/<cluster>/<id>/summary.json    once it ended
//	<workdir>/runs/<cluster>/<id>/output/<task>   a task's last output (<task> its index)
//	<workdir>/runs/<cluster>/snapshots/<sha256>   the graph snapshots of the runs kept
//
// (<id> in 16 decimal digits). Whole files are written through a synced
// temporary file renamed over them; the log is appended and synced, and a
// last line a crash cut short is dropped when read. Runs are written only
// into a work directory fuelsync has claimed, and no directory on the way
// may be a symbolic link. One serve writes them; a log another process
// appended to (its size is not the one this process wrote) is read again
// before an append, so that an append after a stale length is refused
// (ErrConflict).
type Workdir struct {
	Dir string

	mu   sync.Mutex
	logs map[string]logLen // cluster/id → the log as this process last saw it
}

// logLen is a log's number of events and its size in bytes then: a log of
// another size was written by another process, and is counted again.
type logLen struct {
	n    int
	size int64
}

func (w *Workdir) String() string { return "the work directory " + w.Dir }

func idName(id string) (string, error) {
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n <= 0 || strconv.FormatInt(n, 10) != id {
		return "", fmt.Errorf("run id %q is not a positive number", id)
	}
	return fmt.Sprintf("%016d", n), nil
}

// dir returns <workdir>/runs/<parts...>, made when mk is set; each part a
// name, each directory on the way a directory (not a link).
func (w *Workdir) dir(mk bool, parts ...string) (string, error) {
	if _, err := os.Lstat(filepath.Join(w.Dir, state.MarkerName)); err != nil {
		if mk {
			return "", fmt.Errorf("%s is not a claimed work directory (nothing applied there yet): no run is kept", w.Dir)
		}
		return "", fs.ErrNotExist
	}
	p := filepath.Join(w.Dir, "runs")
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
			return "", fmt.Errorf("%s is not a directory (a link or a file): no run is read or written through it", p)
		}
	}
	return p, nil
}

func (w *Workdir) runDir(mk bool, cluster, id string) (string, error) {
	name, err := idName(id)
	if err != nil {
		return "", err
	}
	return w.dir(mk, cluster, name)
}

// ids lists a cluster's run ids, ascending.
func (w *Workdir) ids(cluster string) ([]int64, error) {
	dir, err := w.dir(false, cluster)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, e := range ents {
		if n, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && len(e.Name()) == 16 && e.IsDir() {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

func readJSONFile(name string, v any, max int64) error {
	f, err := os.OpenFile(name, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return err
	}
	if int64(len(data)) > max {
		return fmt.Errorf("%s is over %d bytes", name, max)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s does not parse: %w", name, err)
	}
	return nil
}

// maxHeader bounds a stored header (its carry is a letter a task).
const maxHeader = 64 << 20

// Create implements Store.
func (w *Workdir) Create(_ context.Context, h *Header, snapshot []byte) (string, error) {
	ids, err := w.ids(h.Cluster)
	if err != nil {
		return "", err
	}
	next := int64(1)
	if len(ids) > 0 {
		last := ids[len(ids)-1]
		dir, err := w.runDir(false, h.Cluster, strconv.FormatInt(last, 10))
		if err != nil {
			return "", err
		}
		if _, err := os.Lstat(filepath.Join(dir, "summary.json")); err == nil {
			next = last + 1
		} else if errors.Is(err, fs.ErrNotExist) {
			return "", ErrBusy
		} else {
			return "", err
		}
	}
	snaps, err := w.dir(true, h.Cluster, "snapshots")
	if err != nil {
		return "", err
	}
	if err := state.WriteFileAtomic(filepath.Join(snaps, h.Snapshot), snapshot); err != nil {
		return "", err
	}
	h.ID = strconv.FormatInt(next, 10)
	dir, err := w.runDir(true, h.Cluster, h.ID)
	if err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return "", err
	}
	if err := state.WriteFileAtomic(filepath.Join(dir, "run.json"), append(data, '\n')); err != nil {
		return "", err
	}
	w.prune(h.Cluster, append(ids, next))
	return h.ID, nil
}

// prune removes the runs beyond the Keep newest, and the snapshots no run
// kept uses.
func (w *Workdir) prune(cluster string, ids []int64) {
	if len(ids) <= Keep {
		return
	}
	for _, n := range ids[:len(ids)-Keep] {
		if dir, err := w.runDir(false, cluster, strconv.FormatInt(n, 10)); err == nil {
			os.RemoveAll(dir)
		}
	}
	used := map[string]bool{}
	for _, n := range ids[len(ids)-Keep:] {
		var h Header
		if dir, err := w.runDir(false, cluster, strconv.FormatInt(n, 10)); err == nil &&
			readJSONFile(filepath.Join(dir, "run.json"), &h, maxHeader) == nil {
			used[h.Snapshot] = true
		}
	}
	snaps, err := w.dir(false, cluster, "snapshots")
	if err != nil {
		return
	}
	ents, _ := os.ReadDir(snaps)
	for _, e := range ents {
		if !used[e.Name()] && len(e.Name()) == 64 {
			os.Remove(filepath.Join(snaps, e.Name()))
		}
	}
}

// Append implements Store.
func (w *Workdir) Append(_ context.Context, cluster, id string, n int, events []Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	dir, err := w.runDir(false, cluster, id)
	if err != nil {
		return err
	}
	key := cluster + "/" + id
	name := filepath.Join(dir, "events.jsonl")
	var size int64
	if fi, err := os.Lstat(name); err == nil {
		size = fi.Size()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	have, ok := w.logs[key]
	if !ok || have.size != size {
		evs, err := readEvents(name, true)
		if err != nil {
			return err
		}
		if fi, err := os.Lstat(name); err == nil {
			size = fi.Size()
		}
		have = logLen{len(evs), size}
	}
	if have.n != n {
		return ErrConflict
	}
	var buf bytes.Buffer
	for _, ev := range events {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|noFollow, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		delete(w.logs, key) // read it again: a part may have been written
		return err
	}
	if w.logs == nil {
		w.logs = map[string]logLen{}
	}
	w.logs[key] = logLen{n + len(events), size + int64(buf.Len())}
	return nil
}

// maxEventLine bounds a line of a stored log.
const maxEventLine = 64 << 10

// readEvents reads a log; a last line without its newline (a write a crash
// cut short) is dropped, and cut off the file when trim is set.
func readEvents(name string, trim bool) ([]Event, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	var out []Event
	var good int64
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, fmt.Errorf("%s: a line over %d bytes", name, maxEventLine)
		}
		if err == io.EOF {
			if len(line) > 0 && trim {
				if terr := os.Truncate(name, good); terr != nil {
					return nil, terr
				}
			}
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return nil, fmt.Errorf("%s: event %d: %w", name, len(out)+1, err)
		}
		out = append(out, ev)
		good += int64(len(line))
	}
}

// End implements Store.
func (w *Workdir) End(_ context.Context, cluster, id string, sum *Summary) error {
	dir, err := w.runDir(false, cluster, id)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(sum, "", "  ")
	if err != nil {
		return err
	}
	return state.WriteFileAtomic(filepath.Join(dir, "summary.json"), append(data, '\n'))
}

// Read implements Store.
func (w *Workdir) Read(_ context.Context, cluster, id string) (*Record, error) {
	dir, err := w.runDir(false, cluster, id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	rec := &Record{Header: &Header{}}
	if err := readJSONFile(filepath.Join(dir, "run.json"), rec.Header, maxHeader); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	if len(rec.Header.Snapshot) != 64 || strings.Trim(rec.Header.Snapshot, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("run %s of %s: snapshot %q is not a sha256", id, cluster, rec.Header.Snapshot)
	}
	snaps, err := w.dir(false, cluster, "snapshots")
	if err != nil {
		return nil, err
	}
	if rec.Snapshot, err = readFileBounded(filepath.Join(snaps, rec.Header.Snapshot), MaxSnapshot); err != nil {
		return nil, err
	}
	if rec.Events, err = readEvents(filepath.Join(dir, "events.jsonl"), false); err != nil {
		return nil, err
	}
	var sum Summary
	if err := readJSONFile(filepath.Join(dir, "summary.json"), &sum, 1<<20); err == nil {
		rec.Summary = &sum
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return rec, nil
}

func readFileBounded(name string, max int64) ([]byte, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("%s is over %d bytes", name, max)
	}
	return data, err
}

// List implements Store.
func (w *Workdir) List(_ context.Context, cluster string) ([]*Listed, error) {
	ids, err := w.ids(cluster)
	if err != nil {
		return nil, err
	}
	var out []*Listed
	for i := len(ids) - 1; i >= 0 && len(out) < Keep; i-- {
		dir, err := w.runDir(false, cluster, strconv.FormatInt(ids[i], 10))
		if err != nil {
			return nil, err
		}
		l := &Listed{Header: &Header{}}
		if err := readJSONFile(filepath.Join(dir, "run.json"), l.Header, maxHeader); err != nil {
			continue // being created
		}
		var sum Summary
		if readJSONFile(filepath.Join(dir, "summary.json"), &sum, 1<<20) == nil {
			l.Summary = &sum
		}
		out = append(out, l)
	}
	return out, nil
}

// Active implements Store.
func (w *Workdir) Active(ctx context.Context) (map[string]string, error) {
	root, err := w.dir(false)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, e := range ents {
		if !e.IsDir() || !loader.IsName(e.Name()) {
			continue
		}
		ids, err := w.ids(e.Name())
		if err != nil || len(ids) == 0 {
			continue
		}
		id := strconv.FormatInt(ids[len(ids)-1], 10)
		dir, _ := w.runDir(false, e.Name(), id)
		if _, err := os.Lstat(filepath.Join(dir, "summary.json")); errors.Is(err, fs.ErrNotExist) {
			out[e.Name()] = id
		}
	}
	return out, nil
}

// PutOutput implements Store.
func (w *Workdir) PutOutput(_ context.Context, cluster, id string, task int32, out []byte) error {
	dir, err := w.runDir(false, cluster, id)
	if err != nil {
		return err
	}
	od, err := w.dir(true, cluster, filepath.Base(dir), "output")
	if err != nil {
		return err
	}
	if len(out) > MaxOutput {
		out = out[len(out)-MaxOutput:]
	}
	return state.WriteFileAtomic(filepath.Join(od, strconv.Itoa(int(task))), out)
}

// Output implements Store.
func (w *Workdir) Output(_ context.Context, cluster, id string, task int32) ([]byte, error) {
	dir, err := w.runDir(false, cluster, id)
	if err != nil {
		return nil, err
	}
	data, err := readFileBounded(filepath.Join(dir, "output", strconv.Itoa(int(task))), MaxOutput)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}
