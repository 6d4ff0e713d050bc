package runs

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing/fstest"
	"time"

	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// Header is what a run was asked to do, written when it starts.
type Header struct {
	// ID is the run's number in its cluster, in decimal: 1, 2, ...
	ID       string `json:"id"`
	Cluster  string `json:"cluster"`
	Graph    string `json:"graph"`
	Serial   int64  `json:"serial"`
	Revision string `json:"revision,omitempty"`
	// Snapshot is the sha256 of the run's graph snapshot (SnapshotOf).
	Snapshot string `json:"snapshot"`
	MaxNodes int    `json:"max_nodes"`
	Noop     bool   `json:"noop,omitempty"`
	// Nodes limit the run to these nodes (all when empty).
	Nodes []string `json:"nodes,omitempty"`
	// RetryOf is the run retried, and Carry the statuses its tasks ended
	// with (one letter a task, CarryLetters), when this run is a retry.
	RetryOf string `json:"retry_of,omitempty"`
	Carry   string `json:"carry,omitempty"`
	// Trigger says what started the run: "apply" (deploy: auto), "request"
	// (fuelsync deploy, the API), "retry".
	Trigger string    `json:"trigger"`
	Created time.Time `json:"created"`
}

// Summary is what a run ended with, written when it ends.
type Summary struct {
	Ended  time.Time `json:"ended"`
	Failed bool      `json:"failed"`
	// Halted: an operator stopped it.
	Halted bool   `json:"halted,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Counts are the tasks of the run by status.
	Counts map[string]int `json:"counts"`
	// FailedNodes are the nodes that failed, sorted.
	FailedNodes []string `json:"failed_nodes,omitempty"`
}

// Record is a stored run: its header, graph snapshot, events and summary
// (nil while it runs).
type Record struct {
	Header   *Header
	Snapshot []byte
	Events   []Event
	Summary  *Summary
}

// Store keeps runs (in the work directory, or on etcd): one run per cluster
// at a time, each with its header, graph snapshot, log of events, summary
// and the tasks' output.
type Store interface {
	fmt.Stringer
	// Create stores a new run and returns its id: the next number of the
	// cluster. ErrBusy when the cluster has a run that has not ended.
	Create(ctx context.Context, h *Header, snapshot []byte) (string, error)
	// Append adds events to a run's log after its first n: ErrConflict when
	// the log has more than n (another writer appended first).
	Append(ctx context.Context, cluster, id string, n int, events []Event) error
	// End writes a run's summary: the cluster may start another.
	End(ctx context.Context, cluster, id string, sum *Summary) error
	// Read reads a run whole.
	Read(ctx context.Context, cluster, id string) (*Record, error)
	// List returns a cluster's runs, newest first, with their summaries
	// (nil while running), at most Keep.
	List(ctx context.Context, cluster string) ([]*Listed, error)
	// Active returns each cluster's run that has not ended (cluster → id).
	Active(ctx context.Context) (map[string]string, error)
	// PutOutput keeps a task's output (its last MaxOutput bytes); Output
	// reads it back (nil when none).
	PutOutput(ctx context.Context, cluster, id string, task int32, out []byte) error
	Output(ctx context.Context, cluster, id string, task int32) ([]byte, error)
}

// Open returns the store of runs beside w's state: its backend's own (etcd),
// or the work directory.
func Open(w *state.Workdir) Store {
	if p, ok := w.Backend.(interface{ Runs() Store }); ok {
		return p.Runs()
	}
	return &Workdir{Dir: w.Dir}
}

// Listed is a run as List returns it.
type Listed struct {
	Header  *Header
	Summary *Summary
}

// Errors of a Store.
var (
	ErrBusy     = errors.New("the cluster has a run that has not ended")
	ErrConflict = errors.New("the run's log moved on (another writer)")
	ErrNotFound = errors.New("no such run")
)

// Bounds of what a store keeps.
const (
	// Keep is how many runs a store keeps per cluster.
	Keep = 20
	// MaxOutput bounds a task's kept output.
	MaxOutput = 16 << 10
	// MaxSnapshot bounds a run's graph snapshot, compressed.
	MaxSnapshot = 64 << 20
)

// CarryLetters are the letters of Header.Carry, by Status.
const CarryLetters = "PRSFDKN"

// EncodeCarry writes statuses as Header.Carry.
func EncodeCarry(sts []Status) string {
	b := make([]byte, len(sts))
	for i, s := range sts {
		b[i] = CarryLetters[s]
	}
	return string(b)
}

// DecodeCarry reads Header.Carry.
func DecodeCarry(s string) ([]Status, error) {
	out := make([]Status, len(s))
	for i := range len(s) {
		k := strings.IndexByte(CarryLetters, s[i])
		if k < 0 {
			return nil, fmt.Errorf("carry: %q is not a status letter", s[i])
		}
		out[i] = Status(k)
	}
	return out, nil
}

// SnapshotOf copies what a run of cluster's graph needs out of an applied set
// (cluster.yaml, the task catalogue, every node's file of the graph) into one
// compressed document, and returns it with its sha256: a run keeps its own
// copy, so that it resumes after the set is pruned, on any replica.
func SnapshotOf(set fs.FS, cluster, graph string) ([]byte, string, error) {
	files := map[string]string{}
	add := func(name string, must bool) error {
		data, err := fs.ReadFile(set, name)
		if errors.Is(err, fs.ErrNotExist) && !must {
			return nil
		}
		if err != nil {
			return err
		}
		files[name] = string(data)
		return nil
	}
	if err := add(path.Join(cluster, "cluster.yaml"), true); err != nil {
		return nil, "", err
	}
	if err := add(render.CataloguePath(cluster, graph), false); err != nil {
		return nil, "", err
	}
	nodes, err := fs.ReadDir(set, render.NodesDir(cluster))
	if err != nil {
		return nil, "", err
	}
	for _, n := range nodes {
		if err := add(render.NodeAddress(cluster, n.Name(), graph).String(), false); err != nil {
			return nil, "", err
		}
	}
	js, err := json.Marshal(files)
	if err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	zw.Write(js)
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	if buf.Len() > MaxSnapshot {
		return nil, "", fmt.Errorf("the graph of %s is %d bytes compressed, over the bound of %d", cluster, buf.Len(), MaxSnapshot)
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), hex.EncodeToString(sum[:]), nil
}

// GraphOf builds a run's graph from its snapshot.
func GraphOf(snapshot []byte, cluster, graph string) (*Graph, error) {
	zr, err := gzip.NewReader(bytes.NewReader(snapshot))
	if err != nil {
		return nil, fmt.Errorf("the run's snapshot: %w", err)
	}
	// A snapshot is at most MaxSnapshot compressed; its files at most 16
	// times that.
	js, err := io.ReadAll(io.LimitReader(zr, 16*MaxSnapshot))
	if err != nil {
		return nil, fmt.Errorf("the run's snapshot: %w", err)
	}
	var files map[string]string
	if err := json.Unmarshal(js, &files); err != nil {
		return nil, fmt.Errorf("the run's snapshot: %w", err)
	}
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	cg, err := render.ReadClusterGraph(fsys, cluster, graph)
	if err != nil {
		return nil, err
	}
	return NewGraph(cg)
}

// Replay rebuilds a run's state from its record.
func Replay(rec *Record, g *Graph) (*State, error) {
	h := rec.Header
	opts := Options{MaxNodes: h.MaxNodes, Noop: h.Noop, Nodes: h.Nodes}
	if h.Carry != "" {
		carry, err := DecodeCarry(h.Carry)
		if err != nil {
			return nil, err
		}
		opts.Carry = carry
	}
	s, err := New(g, opts, h.Created.UnixMilli())
	if err != nil {
		return nil, err
	}
	for i, ev := range rec.Events {
		if err := s.Apply(ev); err != nil {
			return nil, fmt.Errorf("run %s of %s: event %d (%s): %w", h.ID, h.Cluster, i+1, ev.Kind, err)
		}
	}
	return s, nil
}
