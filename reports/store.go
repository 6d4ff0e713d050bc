package reports

import (
	"context"
	"fmt"
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
// (state/etcdstate). Every name it is given is a name the loader accepts for
// paths (loader.IsName); it refuses any other.
type Backend interface {
	// Put stores r as its node's newest report, numbering it (r.Seq): it
	// takes the place of the newest one when that is an earlier report of
	// the same run (running, then its result), else it is added; then the
	// node's reports beyond keep are dropped, oldest first.
	Put(ctx context.Context, r *Report, keep int) error
	// Last returns every node's last report.
	Last(ctx context.Context) ([]*Report, error)
	// History returns a node's kept reports, newest first.
	History(ctx context.Context, cluster, node string) ([]*Report, error)
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
	// changed, when set, is called after a report changed a node's last
	// report, with its cluster.
	changed func(cluster string)
}

// NewStore makes a store over b with the default bounds.
func NewStore(b Backend) *Store {
	return &Store{Backend: b, HistoryKeep: DefaultHistoryKeep, ReconcileKeep: DefaultReconcileKeep, last: map[string]map[string]*Report{}}
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
	if err := s.Backend.Put(ctx, r, s.historyKeep()); err != nil {
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

// History returns a node's kept reports, newest first, with their tasks.
func (s *Store) History(ctx context.Context, cluster, node string) ([]*Report, error) {
	return s.Backend.History(ctx, cluster, node)
}

// AddReconcile records a reconcile of its cluster.
func (s *Store) AddReconcile(ctx context.Context, rec *Reconcile) error {
	if !loader.IsName(rec.Cluster) {
		return fmt.Errorf("cluster %q: not a name the loader accepts", rec.Cluster)
	}
	if len(rec.Problems) > MaxReconcileProblems {
		rec.Problems = rec.Problems[:MaxReconcileProblems]
	}
	return s.Backend.PutReconcile(ctx, rec, s.reconcileKeep())
}

// Reconciles returns a cluster's kept reconciles, newest first.
func (s *Store) Reconciles(ctx context.Context, cluster string) ([]*Reconcile, error) {
	return s.Backend.Reconciles(ctx, cluster)
}

// Prune forgets the reports of every node that st, the applied state, does
// not have (a node removed, a cluster removed), so that nothing is kept of
// nodes that are gone. Only nodes seen in the store are looked at.
func (s *Store) Prune(ctx context.Context, st *state.State) error {
	s.mu.RLock()
	var gone [][2]string
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
		return
	}
	delete(s.last[cluster], node)
	if len(s.last[cluster]) == 0 {
		delete(s.last, cluster)
	}
}
