package runs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/fuelsync/fuelsync/api"
)

// Coordinator runs deployments: it keeps each cluster's active run (its
// state, rebuilt from the store's log at start), hands the nodes' agents
// their next task, takes their reports, completes the no-ops, notices agents
// gone silent, and writes every change to the store before it answers. It
// runs nothing itself. One committer per run applies what the agents and
// operators ask, in batches: each batch is one append to the store's log
// (group commit), so that thousands of agents cost a few writes a second.
type Coordinator struct {
	Store Store
	Log   *slog.Logger
	// Heartbeat is how often an agent says it still runs its task
	// (DefaultHeartbeat when 0); a task whose agent was silent for three
	// heartbeats fails (a reboot task: its timeout and three heartbeats).
	Heartbeat time.Duration
	// MaxNodes is the default bound of busy nodes (DefaultMaxNodes when 0).
	MaxNodes int
	// OnNodeDone is told when a node's tasks of a run all finished (serve
	// records the node's report from it); OnEnd when a run ended. Both are
	// called by the run's committer, in order, after the store has it.
	OnNodeDone func(h *Header, node string, failed bool, tasks []api.RunTask)
	OnEnd      func(h *Header, sum *Summary)
	// OnStart is told when a run started (not when one is resumed), once
	// the store has it.
	OnStart func(h *Header)
	// Now, when set, is the clock the runs are timed by (the system's when
	// nil): the page tests draw a run at the times of a real deployment
	// (minutes a task) without waiting for them. It must be safe to call
	// from several goroutines.
	Now func() time.Time

	mu      sync.Mutex
	runs    map[string]*live         // cluster → its active run
	started map[string]chan struct{} // cluster → closed when a run starts there
	latest  map[string]*api.Run      // cluster → its newest run that ended (nil: none), as Latest read it
	ctx     context.Context
	ready   bool // Resume loaded the runs
}

// DefaultHeartbeat is the agents' heartbeat when Coordinator.Heartbeat is 0.
const DefaultHeartbeat = 10 * time.Second

// StartRequest asks for a run.
type StartRequest struct {
	Cluster, Graph string
	Serial         int64
	Revision       string
	// Set is the applied set of Serial (every file checked against the
	// state's digest as it is read).
	Set      fs.FS
	Nodes    []string
	Noop     bool
	MaxNodes int
	Trigger  string
}

// Errors of a Coordinator.
var (
	ErrNoRun     = errors.New("no run")
	ErrNotLeader = errors.New("this replica does not coordinate runs")
)

func (c *Coordinator) clock() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *Coordinator) heartbeat() time.Duration {
	if c.Heartbeat > 0 {
		return c.Heartbeat
	}
	return DefaultHeartbeat
}

func (c *Coordinator) log() *slog.Logger {
	if c.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Log
}

// Resume loads every run that has not ended from the store and goes on with
// it; ctx bounds the runs' committers (the coordinator's life). A task that
// was running is given its agent's heartbeat again from now.
func (c *Coordinator) Resume(ctx context.Context) error {
	c.mu.Lock()
	c.ctx = ctx
	if c.runs == nil {
		c.runs, c.started = map[string]*live{}, map[string]chan struct{}{}
	}
	c.mu.Unlock()
	active, err := c.Store.Active(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for cluster, id := range active {
		rec, err := c.Store.Read(ctx, cluster, id)
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s of %s: %w", id, cluster, err))
			continue
		}
		g, err := GraphOf(rec.Snapshot, cluster, rec.Header.Graph)
		if err != nil {
			errs = append(errs, fmt.Errorf("run %s of %s: %w", id, cluster, err))
			continue
		}
		s, err := Replay(rec, g)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.log().Info("deployment run resumed", "cluster", cluster, "run", id, "events", len(rec.Events))
		c.launch(rec.Header, g, s, len(rec.Events))
	}
	c.mu.Lock()
	c.ready = true
	c.mu.Unlock()
	return errors.Join(errs...)
}

// Ready says the coordinator has resumed the runs and takes requests (a
// replica that does not lead, or one still reading the runs, does not: an
// agent's report would find its run missing).
func (c *Coordinator) Ready() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready && c.ctx != nil && c.ctx.Err() == nil
}

// Start starts a run.
func (c *Coordinator) Start(ctx context.Context, req StartRequest) (*Header, error) {
	if c.ctxOf() == nil {
		return nil, ErrNotLeader
	}
	snap, sum, err := SnapshotOf(req.Set, req.Cluster, req.Graph)
	if err != nil {
		return nil, err
	}
	g, err := GraphOf(snap, req.Cluster, req.Graph)
	if err != nil {
		return nil, err
	}
	maxNodes := req.MaxNodes
	if maxNodes <= 0 {
		maxNodes = max(c.MaxNodes, 0)
	}
	h := &Header{Cluster: req.Cluster, Graph: req.Graph, Serial: req.Serial, Revision: req.Revision,
		Snapshot: sum, MaxNodes: maxNodes, Noop: req.Noop, Nodes: req.Nodes, Trigger: req.Trigger,
		Created: c.clock().UTC().Truncate(time.Millisecond)}
	return c.create(ctx, h, g, snap)
}

// Retry starts a run of what did not succeed in the cluster's last run: its
// failed, dep_failed and not run tasks, on nodes (when given) or on the nodes
// of the run it retries.
func (c *Coordinator) Retry(ctx context.Context, cluster string, nodes []string) (*Header, error) {
	if c.ctxOf() == nil {
		return nil, ErrNotLeader
	}
	if l, _ := c.active(cluster); l != nil {
		if err := l.awaitEnd(ctx); err != nil {
			return nil, err
		}
	}
	list, err := c.Store.List(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, fmt.Errorf("cluster %s has no run to retry: %w", cluster, ErrNoRun)
	}
	if list[0].Summary == nil {
		return nil, fmt.Errorf("run %s of cluster %s has not ended: %w", list[0].Header.ID, cluster, ErrBusy)
	}
	rec, err := c.Store.Read(ctx, cluster, list[0].Header.ID)
	if err != nil {
		return nil, err
	}
	g, err := GraphOf(rec.Snapshot, cluster, rec.Header.Graph)
	if err != nil {
		return nil, err
	}
	last, err := Replay(rec, g)
	if err != nil {
		return nil, err
	}
	old := rec.Header
	if len(nodes) == 0 {
		nodes = old.Nodes // the nodes of the run it retries
	}
	h := &Header{Cluster: cluster, Graph: old.Graph, Serial: old.Serial, Revision: old.Revision,
		Snapshot: old.Snapshot, MaxNodes: old.MaxNodes, Noop: old.Noop, Nodes: nodes,
		RetryOf: old.ID, Carry: EncodeCarry(last.Statuses()), Trigger: "retry",
		Created: c.clock().UTC().Truncate(time.Millisecond)}
	return c.create(ctx, h, g, rec.Snapshot)
}

// create checks a new run's options against its graph, stores it and starts
// its committer.
func (c *Coordinator) create(ctx context.Context, h *Header, g *Graph, snap []byte) (*Header, error) {
	opts := Options{MaxNodes: h.MaxNodes, Noop: h.Noop, Nodes: h.Nodes}
	if h.Carry != "" {
		opts.Carry, _ = DecodeCarry(h.Carry)
	}
	if _, err := New(g, opts, h.Created.UnixMilli()); err != nil {
		return nil, err
	}
	c.mu.Lock()
	if l := c.runs[h.Cluster]; l != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("run %s of cluster %s is running: %w", l.h.ID, h.Cluster, ErrBusy)
	}
	c.mu.Unlock()
	id, err := c.Store.Create(ctx, h, snap)
	if err != nil {
		return nil, err
	}
	h.ID = id
	s, err := New(g, opts, h.Created.UnixMilli())
	if err != nil {
		return nil, err
	}
	c.log().Info("deployment run started", "cluster", h.Cluster, "run", id, "graph", h.Graph, "serial", h.Serial,
		"trigger", h.Trigger, "tasks", len(g.Tasks), "nodes", len(g.Nodes))
	c.launch(h, g, s, 0)
	if c.OnStart != nil {
		c.OnStart(h)
	}
	return h, nil
}

func (c *Coordinator) ctxOf() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ctx
}

// launch makes a run live and starts its committer.
func (c *Coordinator) launch(h *Header, g *Graph, s *State, n int) {
	l := &live{c: c, h: h, g: g, s: s, n: n, ops: make(chan *op, 1024), done: make(chan struct{}), exit: make(chan struct{}),
		wake: map[int32]chan struct{}{}, seen: make([]time.Time, len(g.Nodes)), reported: make([]bool, len(g.Nodes))}
	// A run resumed (by a restarted serve, a new leader) gives the agents
	// of its running tasks ten heartbeats to find it, not three.
	now := c.clock()
	if n > 0 {
		now = now.Add(7 * c.heartbeat())
	}
	for ni := range l.seen {
		l.seen[ni] = now
	}
	c.mu.Lock()
	c.runs[h.Cluster] = l
	if ch := c.started[h.Cluster]; ch != nil {
		close(ch)
		delete(c.started, h.Cluster)
	}
	ctx := c.ctx
	c.mu.Unlock()
	go l.commit(ctx)
}

// active returns cluster's active run, or a channel closed when one starts.
func (c *Coordinator) active(cluster string) (*live, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if l := c.runs[cluster]; l != nil {
		return l, nil
	}
	if c.started == nil {
		c.started = map[string]chan struct{}{}
	}
	ch := c.started[cluster]
	if ch == nil {
		ch = make(chan struct{})
		c.started[cluster] = ch
	}
	return nil, ch
}

// ended forgets a run that ended, and keeps its view (sum) as the
// cluster's newest.
func (c *Coordinator) ended(l *live, sum *Summary) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs[l.h.Cluster] == l {
		delete(c.runs, l.h.Cluster)
	}
	if c.latest == nil {
		c.latest = map[string]*api.Run{}
	}
	r := listedView(&Listed{Header: l.h, Summary: sum})
	c.latest[l.h.Cluster] = &r
}

// Latest returns cluster's newest run without its nodes (nil when it had
// none): the running one as it is now, else the last that ended, read from
// the store once and then kept, so that a page or a poll of every cluster's
// status costs no read.
func (c *Coordinator) Latest(ctx context.Context, cluster string) (*api.Run, error) {
	if l, _ := c.active(cluster); l != nil {
		l.mu.Lock()
		r := runView(l.h, l.g, l.s, api.TasksNone)
		l.mu.Unlock()
		return &r, nil
	}
	c.mu.Lock()
	r, ok := c.latest[cluster]
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	list, err := c.Store.List(ctx, cluster)
	if err != nil {
		return nil, err
	}
	if len(list) > 0 {
		v := listedView(list[0])
		r = &v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, running := c.runs[cluster]; running {
		return r, nil // one started meanwhile: keep nothing
	}
	if c.latest == nil {
		c.latest = map[string]*api.Run{}
	}
	if kept, ok := c.latest[cluster]; ok {
		return kept, nil // a run ended meanwhile: its view is newer
	}
	c.latest[cluster] = r
	return r, nil
}

// Busy says whether cluster has a run that has not ended (here).
func (c *Coordinator) Busy(cluster string) bool {
	l, _ := c.active(cluster)
	return l != nil
}

// Next returns node's next task of cluster's active run, waiting up to wait
// for one: nil when none came. An agent that asks while serve holds it
// running a task has lost that task: it fails.
func (c *Coordinator) Next(ctx context.Context, cluster, node string, wait time.Duration) (*api.Assignment, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		l, started := c.active(cluster)
		var wake <-chan struct{}
		if l != nil {
			ni, ok := l.g.Node(node)
			if !ok || l.g.Nodes[ni].Sync {
				wake = l.done // nothing of this node in the run
			} else {
				wake = l.waker(ni)
				res := l.submit(ctx, &op{kind: opNext, node: ni})
				if errors.Is(res.err, errRunEnded) {
					continue // wait for the next run
				}
				if res.err != nil || res.assignment != nil {
					return res.assignment, res.err
				}
			}
		} else {
			wake = started
		}
		select {
		case <-wake:
		case <-timer.C:
			return nil, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Report takes an agent's report on a task of run id: a heartbeat (running)
// or its end, and returns the node's next task when one may start at once
// (in the same commit). ErrStale when the task is not running on the node in
// that attempt (the report came too late, or twice).
func (c *Coordinator) Report(ctx context.Context, cluster, node, id string, r *api.TaskReport) (*api.Assignment, error) {
	l, _ := c.active(cluster)
	if l == nil || l.h.ID != id {
		return nil, ErrStale
	}
	ni, ok := l.g.Node(node)
	if !ok {
		return nil, ErrStale
	}
	if r.Status == api.TaskRunning {
		return nil, l.heard(ni, r.Task, r.Attempt)
	}
	res := l.submit(ctx, &op{kind: opFinish, node: ni, report: r})
	if res.err != nil {
		return nil, res.err
	}
	if r.Output != "" && r.Status == api.TaskFailed {
		// A failed task's output is kept (the pages and the API link it).
		if t, ok := l.g.Task(node, r.Task); ok {
			if err := c.Store.PutOutput(ctx, cluster, id, t, []byte(r.Output)); err != nil {
				c.log().Warn("keeping a task's output", "cluster", cluster, "run", id, "node", node, "task", r.Task, "error", err.Error())
			}
		}
	}
	return res.assignment, nil
}

// Stop stops cluster's active run: running tasks finish, nothing new starts.
func (c *Coordinator) Stop(ctx context.Context, cluster, reason string) (*Header, error) {
	l, _ := c.active(cluster)
	if l == nil {
		return nil, fmt.Errorf("cluster %s has no running run: %w", cluster, ErrNoRun)
	}
	res := l.submit(ctx, &op{kind: opStop, reason: reason})
	return l.h, res.err
}

// Pause stops coordinating (a replica that no longer leads): it waits for
// the committers to stop (the context given to Resume must have ended) and
// forgets the runs; Resume takes them up again.
func (c *Coordinator) Pause() {
	c.Shutdown()
	c.mu.Lock()
	c.runs, c.ctx, c.ready, c.latest = map[string]*live{}, nil, false, nil
	c.mu.Unlock()
}

// Shutdown waits for every run's committer to stop (after the context given
// to Resume ended).
func (c *Coordinator) Shutdown() {
	c.mu.Lock()
	ls := make([]*live, 0, len(c.runs))
	for _, l := range c.runs {
		ls = append(ls, l)
	}
	c.mu.Unlock()
	for _, l := range ls {
		<-l.stopped()
	}
}

// Clusters lists the clusters with an active run, sorted.
func (c *Coordinator) Clusters() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.runs))
	for k := range c.runs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
