package reports

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/state"
)

// The default bounds of the history: the last DefaultHistoryKeep reports of
// each node, the last DefaultReconcileKeep reconciles of each cluster (serve
// --report-history, --reconcile-history).
const (
	DefaultHistoryKeep   = 20
	DefaultReconcileKeep = 50
	// MaxKeep bounds both flags.
	MaxKeep = 1000
)

// Reconcile is one reconcile of a cluster that changed it: its artifacts
// (applied), or its status.
type Reconcile struct {
	Cluster string    `json:"cluster"`
	Seq     int64     `json:"seq"`
	At      time.Time `json:"at"`
	// Revision is the revision reconciled; Serial the applied state's serial
	// after it.
	Revision string `json:"revision"`
	Serial   int64  `json:"serial"`
	// Status is the cluster's status after it (synced, held, ...).
	Status string `json:"status"`
	// Applied says its artifacts changed; the counts say how many nodes.
	Applied      bool `json:"applied"`
	NodesAdded   int  `json:"nodes_added,omitempty"`
	NodesChanged int  `json:"nodes_changed,omitempty"`
	NodesRemoved int  `json:"nodes_removed,omitempty"`
	// Problems are the first of its problems (at most MaxReconcileProblems).
	Problems []string `json:"problems,omitempty"`
}

// MaxReconcileProblems bounds a Reconcile's problems.
const MaxReconcileProblems = 5

// Backend keeps the reports: the work directory's (Workdir) or etcd's
// (etcdstate). Every name it is given is a name the loader accepts for
// paths (loader.IsName); it refuses any other.
type Backend interface {
	// Put stores r as its node's newest report, numbering it (r.Seq): its
	// summary (Summarize) in the node's history, where it takes the place
	// of the newest one when that is an earlier report of the same run
	// (running, then its result), else it is added; then the node's
	// reports beyond keep are dropped, oldest first. r itself, with its
	// tasks, is kept as the node's last report, in place of the one
	// before: a node's history holds summaries, and one report whole.
	Put(ctx context.Context, r *Report, keep int) error
	// Last returns every node's last report, summarized.
	Last(ctx context.Context) ([]*Report, error)
	// History returns a node's kept reports, newest first, summarized.
	History(ctx context.Context, cluster, node string) ([]*Report, error)
	// Whole returns a node's last report with its tasks (when they were
	// kept); nil when it has none.
	Whole(ctx context.Context, cluster, node string) (*Report, error)
	// PutReconcile adds rec to its cluster's reconciles, numbering it
	// (rec.Seq), and drops those beyond keep, oldest first.
	PutReconcile(ctx context.Context, rec *Reconcile, keep int) error
	// Reconciles returns a cluster's kept reconciles, newest first.
	Reconciles(ctx context.Context, cluster string) ([]*Reconcile, error)
	// Remove forgets a node's reports; with node "", every report of the
	// cluster and its reconciles.
	Remove(ctx context.Context, cluster, node string) error
	// String names where the reports are kept, for messages.
	String() string
}

// Watcher is a Backend that other processes write too (etcd, where every
// replica accepts reports): Watch calls put with every last report stored
// and remove with every node (node "": every node of the cluster) whose
// reports are removed, by any process, from the Last read before, until ctx
// ends.
type Watcher interface {
	Watch(ctx context.Context, put func(*Report), remove func(cluster, node string)) error
}

// WriteChecker is a Backend that can say whether it takes writes now: etcd
// refuses every write while an alarm is raised (NOSPACE: its database over
// its quota).
type WriteChecker interface {
	CheckWrites(ctx context.Context) error
}

// provider is a state Backend that keeps reports too (etcd).
type provider interface {
	Reports() Backend
}

// Open returns where the reports of w are kept: beside its state (etcd), or
// in the work directory (<workdir>/reports).
func Open(w *state.Workdir) Backend {
	if p, ok := w.Backend.(provider); ok {
		return p.Reports()
	}
	return &Workdir{Dir: w.Dir}
}

// Store holds every node's last report in memory (without its tasks: their
// counts and the first failed ones) over a Backend, which keeps them all.
type Store struct {
	Backend Backend
	// HistoryKeep and ReconcileKeep bound the history kept (the defaults
	// when 0).
	HistoryKeep, ReconcileKeep int
	// Convergence tells the nodes' states; its Sets reads the applied sets
	// (NewWorkdirStore sets it).
	Convergence Convergence

	mu     sync.RWMutex
	last   map[string]map[string]*Report // cluster → node → last report (summarized)
	loaded bool
	// reconciled are the clusters this store recorded reconciles of, for
	// Prune.
	reconciled map[string]bool
	// wholes are the last reports read whole (Whole), the newest
	// maxWholes; wholeReads bounds the reads of whole reports at once.
	wholeMu    sync.Mutex
	wholes     []*Report
	wholeReads chan struct{}
	// puts serializes the Puts of a node (by a hash of its names): on etcd,
	// concurrent reports of one node would retry each other's
	// transactions.
	puts [64]sync.Mutex
	// writeErr is the error of the last write to the backend (nil after a
	// write that succeeded); checked and checkedAt the last CheckWrites.
	writeMu               sync.Mutex
	writeErr, checked     error
	writeErrAt, checkedAt time.Time
	// changed, when set, is called after a report changed a node's last
	// report, with its cluster.
	changed func(cluster string)
}

// NewStore makes a store over b with the default bounds.
func NewStore(b Backend) *Store {
	return &Store{Backend: b, HistoryKeep: DefaultHistoryKeep, ReconcileKeep: DefaultReconcileKeep, last: map[string]map[string]*Report{},
		wholeReads: make(chan struct{}, maxWholeReads)}
}

// NewWorkdirStore makes a store of w's reports (Open) that reads w's applied
// sets to tell convergence.
func NewWorkdirStore(w *state.Workdir) *Store {
	s := NewStore(Open(w))
	s.Convergence.Sets = w.SetFS
	return s
}

// NodeState is the state of node of cluster in the applied state st given
// its last report (Convergence.NodeState); a nil Store compares view digests
// only.
func (s *Store) NodeState(st *state.State, cluster, node string, last *Report) string {
	if s == nil {
		return (*Convergence)(nil).NodeState(st, cluster, node, last)
	}
	return s.Convergence.NodeState(st, cluster, node, last)
}

// GraphDigest is Convergence.GraphDigest ("" for a nil Store).
func (s *Store) GraphDigest(st *state.State, name string) string {
	if s == nil {
		return ""
	}
	return s.Convergence.GraphDigest(st, name)
}

// OnChange makes the store call f with a report's cluster after each report
// that changes a node's last report (its own or, on a Watcher, another
// process's).
func (s *Store) OnChange(f func(cluster string)) {
	s.mu.Lock()
	s.changed = f
	s.mu.Unlock()
}

func (s *Store) historyKeep() int {
	if s.HistoryKeep <= 0 {
		return DefaultHistoryKeep
	}
	return s.HistoryKeep
}

func (s *Store) reconcileKeep() int {
	if s.ReconcileKeep <= 0 {
		return DefaultReconcileKeep
	}
	return s.ReconcileKeep
}

// Load reads every node's last report from the backend (once; again after
// an error).
func (s *Store) Load(ctx context.Context) error {
	s.mu.RLock()
	loaded := s.loaded
	s.mu.RUnlock()
	if loaded {
		return nil
	}
	all, err := s.Backend.Last(ctx)
	if err != nil {
		return fmt.Errorf("reading the nodes' reports from %s: %w", s.Backend, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded {
		return nil
	}
	for _, r := range all {
		s.setLocked(Summarize(r))
	}
	s.loaded = true
	return nil
}

// Run follows the reports other processes store (a Watcher backend), until
// ctx ends; it loads first. On any other backend it only loads.
func (s *Store) Run(ctx context.Context) error {
	if err := s.Load(ctx); err != nil {
		return err
	}
	w, ok := s.Backend.(Watcher)
	if !ok {
		return nil
	}
	return w.Watch(ctx, func(r *Report) { s.set(Summarize(r)) }, s.forget)
}

// set makes r (summarized) the last report of its node, unless the store
// holds a newer one.
func (s *Store) set(r *Report) {
	s.mu.Lock()
	changed := s.setLocked(r)
	f := s.changed
	s.mu.Unlock()
	if changed && f != nil {
		f(r.Cluster)
	}
}

func (s *Store) setLocked(r *Report) bool {
	nodes := s.last[r.Cluster]
	if nodes == nil {
		nodes = map[string]*Report{}
		s.last[r.Cluster] = nodes
	}
	if prev := nodes[r.Node]; prev != nil && (prev.Seq > r.Seq || prev.Seq == r.Seq && !prev.ReceivedAt.Before(r.ReceivedAt)) {
		return false
	}
	nodes[r.Node] = r
	return true
}

// Put stores r (a report Parse accepted, its Cluster, Node and the server's
// fields set) and makes it its node's last report.
func (s *Store) Put(ctx context.Context, r *Report) error {
	if !loader.IsName(r.Cluster) || !loader.IsName(r.Node) {
		return fmt.Errorf("cluster %q, node %q: not names the loader accepts", r.Cluster, r.Node)
	}
	h := fnv.New32a()
	h.Write([]byte(r.Cluster + "/" + r.Node))
	mu := &s.puts[h.Sum32()%uint32(len(s.puts))]
	mu.Lock()
	defer mu.Unlock()
	if err := s.wrote(ctx, s.Backend.Put(ctx, r, s.historyKeep())); err != nil {
		return err
	}
	s.set(Summarize(r))
	return nil
}

// Last returns the last report of a node (without its tasks), nil when none.
func (s *Store) Last(cluster, node string) *Report {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.last[cluster][node]
}

// Cluster returns the last report of every node of cluster that reported.
func (s *Store) Cluster(cluster string) map[string]*Report {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return maps.Clone(s.last[cluster])
}

// Clusters lists the clusters with reports, sorted.
func (s *Store) Clusters() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Sorted(maps.Keys(s.last))
}

// History returns a node's kept reports, newest first, summarized (their
// task counts and first failed tasks; Whole has the last one's tasks).
func (s *Store) History(ctx context.Context, cluster, node string) ([]*Report, error) {
	return s.Backend.History(ctx, cluster, node)
}

// The bounds of the whole reports a Store reads: at most maxWholeReads at
// once (each up to MaxBody of JSON, a few MiB decoded), and the newest
// maxWholes kept, so that many views of one node decode its report once.
const (
	maxWholeReads = 4
	maxWholes     = 8
)

// Whole returns a node's last report with its tasks (nil when none): the
// one read before while it is still the node's last report, else read from
// the backend, at most maxWholeReads at once. The caller does not modify it.
func (s *Store) Whole(ctx context.Context, cluster, node string) (*Report, error) {
	if r := s.cachedWhole(cluster, node); r != nil {
		return r, nil
	}
	select {
	case s.wholeReads <- struct{}{}:
		defer func() { <-s.wholeReads }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r := s.cachedWhole(cluster, node); r != nil {
		return r, nil // read by another meanwhile
	}
	r, err := s.Backend.Whole(ctx, cluster, node)
	if err != nil || r == nil {
		return r, err
	}
	s.wholeMu.Lock()
	defer s.wholeMu.Unlock()
	s.wholes = slices.DeleteFunc(s.wholes, func(w *Report) bool { return w.Cluster == cluster && w.Node == node })
	if len(s.wholes) == maxWholes {
		s.wholes = slices.Delete(s.wholes, 0, 1)
	}
	s.wholes = append(s.wholes, r)
	return r, nil
}

// cachedWhole is the node's whole report read before, when it is still the
// node's last report.
func (s *Store) cachedWhole(cluster, node string) *Report {
	last := s.Last(cluster, node)
	if last == nil {
		return nil
	}
	s.wholeMu.Lock()
	defer s.wholeMu.Unlock()
	for _, w := range s.wholes {
		if w.Cluster == cluster && w.Node == node && w.Seq == last.Seq && w.ReceivedAt.Equal(last.ReceivedAt) {
			return w
		}
	}
	return nil
}

// AddReconcile records a reconcile of its cluster.
func (s *Store) AddReconcile(ctx context.Context, rec *Reconcile) error {
	if !loader.IsName(rec.Cluster) {
		return fmt.Errorf("cluster %q: not a name the loader accepts", rec.Cluster)
	}
	if len(rec.Problems) > MaxReconcileProblems {
		rec.Problems = rec.Problems[:MaxReconcileProblems]
	}
	s.mu.Lock()
	if s.reconciled == nil {
		s.reconciled = map[string]bool{}
	}
	s.reconciled[rec.Cluster] = true
	s.mu.Unlock()
	return s.wrote(ctx, s.Backend.PutReconcile(ctx, rec, s.reconcileKeep()))
}

// The bounds of Writable: a write that failed says the backend refuses
// writes for writeErrorFor (unless a write succeeds meanwhile: the backend
// is not written to while nobody reports); the backend's own answer is
// asked at most every checkEvery.
const (
	writeErrorFor = 30 * time.Second
	checkEvery    = time.Second
)

// wrote records the outcome err of a write to the backend, and returns it.
// A write the caller gave up on (ctx ended) says nothing of the backend.
func (s *Store) wrote(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return err
	}
	s.writeMu.Lock()
	s.writeErr, s.writeErrAt = err, time.Now()
	s.writeMu.Unlock()
	return err
}

// Writable says why the backend refuses writes now, nil when it takes them:
// what it says of itself (a WriteChecker: etcd's alarms), else the error of
// the last write to it, if it failed within writeErrorFor.
func (s *Store) Writable(ctx context.Context) error {
	if wc, ok := s.Backend.(WriteChecker); ok {
		s.writeMu.Lock()
		fresh := time.Since(s.checkedAt) < checkEvery
		err := s.checked
		s.writeMu.Unlock()
		if !fresh {
			err = wc.CheckWrites(ctx)
			s.writeMu.Lock()
			s.checked, s.checkedAt = err, time.Now()
			s.writeMu.Unlock()
		}
		if err != nil {
			return err
		}
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if s.writeErr != nil && time.Since(s.writeErrAt) < writeErrorFor {
		return fmt.Errorf("the last write to %s failed %s ago: %w", s.Backend, time.Since(s.writeErrAt).Round(time.Second), s.writeErr)
	}
	return nil
}

// Reconciles returns a cluster's kept reconciles, newest first.
func (s *Store) Reconciles(ctx context.Context, cluster string) ([]*Reconcile, error) {
	return s.Backend.Reconciles(ctx, cluster)
}

// Prune forgets the reports of every node that st, the applied state, does
// not have (a node removed, a cluster removed), and the reconciles of every
// cluster it does not have, so that nothing is kept of nodes and clusters
// that are gone. Only nodes seen in the store, and clusters it recorded
// reconciles of, are looked at.
func (s *Store) Prune(ctx context.Context, st *state.State) error {
	s.mu.RLock()
	var gone [][2]string
	for cluster := range s.reconciled {
		if st.Clusters[cluster] == nil && s.last[cluster] == nil {
			gone = append(gone, [2]string{cluster, ""})
		}
	}
	for cluster, nodes := range s.last {
		cs := st.Clusters[cluster]
		for node := range nodes {
			if cs == nil {
				gone = append(gone, [2]string{cluster, ""})
				break
			}
			if _, ok := cs.Nodes[node]; !ok {
				gone = append(gone, [2]string{cluster, node})
			}
		}
	}
	s.mu.RUnlock()
	for _, g := range gone {
		if err := s.Backend.Remove(ctx, g[0], g[1]); err != nil {
			return err
		}
		s.forget(g[0], g[1])
	}
	return nil
}

// forget drops a node's last report from memory (node "": the cluster's).
func (s *Store) forget(cluster, node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if node == "" {
		delete(s.last, cluster)
		delete(s.reconciled, cluster)
		return
	}
	delete(s.last[cluster], node)
	if len(s.last[cluster]) == 0 {
		delete(s.last, cluster)
	}
}
