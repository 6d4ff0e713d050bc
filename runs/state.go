package runs

import (
	"fmt"
	"slices"
)

// Status is a task's status in a run.
type Status uint8

// A task's statuses. Pending and Running are not finished; Succeeded and
// Skipped satisfy what requires the task; Failed, DepFailed and NotRun do not.
const (
	Pending Status = iota
	Running
	Succeeded
	Failed
	// DepFailed: the task requires a task that failed or will never run, or
	// its node failed; it never starts.
	DepFailed
	// Skipped: a no-op ended (stage, group, skipped, the sync node's tasks),
	// or the task is outside the run (a run of some nodes).
	Skipped
	// NotRun: the run stopped before the task started (skipped, on the wire,
	// with the reason).
	NotRun
)

var statusNames = [...]string{"pending", "running", "succeeded", "failed", "dep_failed", "skipped", "skipped"}

// String is the status as the API and pages name it (NotRun is "skipped").
func (s Status) String() string { return statusNames[s] }

// Finished says the task will not change any more in this run.
func (s Status) Finished() bool { return s >= Succeeded }

// Satisfies says a task that requires one of this status may start.
func (s Status) Satisfies() bool { return s == Succeeded || s == Skipped }

// Phase is a run's phase.
type Phase uint8

// A run's phases.
const (
	Active Phase = iota
	// Stopping: nothing new starts; the running tasks finish.
	Stopping
	Ended
)

var phaseNames = [...]string{"running", "stopping", "ended"}

func (p Phase) String() string { return phaseNames[p] }

// Options are what a run was asked to do.
type Options struct {
	// MaxNodes bounds the nodes busy at once (DefaultMaxNodes when 0).
	MaxNodes int
	// Noop is a noop run: agents run puppet with --noop and nothing else,
	// and a task that fails ends skipped, as astute's noop runs do.
	Noop bool
	// Nodes, when not empty, limit the run to these nodes (and sync); the
	// tasks of the others are outside it: they count as done.
	Nodes []string
	// Carry, when set, are the statuses each task ended with in the run
	// retried (by task index): a task that succeeded is not run again, and
	// on a node outside this run a task that failed or never ran holds back
	// what requires it.
	Carry []Status
}

// DefaultMaxNodes is how many nodes may be busy at once, astute's
// max_nodes_per_call.
const DefaultMaxNodes = 50

// State is a run's state: a pure function of its graph, options and events.
// Apply an Event to change it; Dispatch and the queries read it.
type State struct {
	G    *Graph
	Opts Options
	// Phase is the run's phase; Reason why it stopped ("" when it did not).
	Phase  Phase
	Reason string
	// Failed is the verdict once Ended: a critical node failed.
	Failed bool
	// Halted: an operator stopped the run (a stop event), as opposed to
	// its fault tolerance.
	Halted bool
	// Start and End are unix milliseconds (End 0 until Ended).
	Start, End int64
	// Seq counts the events applied.
	Seq int

	tasks       []taskState
	msgs        map[int32]string
	nodes       []nodeState
	running     []int32 // running tasks per limit slot
	busy        int     // nodes with a running task
	groupFailed []int
	open        int     // tasks in the run not finished
	noops       []int32 // no-op tasks ready, to settle
	// woken are nodes that may have a task to dispatch since the last
	// TakeWoken; all says any node may (a slot was freed).
	woken []int32
	all   bool
	// ended are nodes whose tasks of the run all finished, since the last
	// TakeEnded.
	ended []int32
}

type taskState struct {
	status  Status
	outside bool
	attempt int32
	waiting int32 // requirements not yet satisfied (finished, for sync)
	ready   int64 // when its requirements were met (unix ms)
	start   int64
	end     int64
}

type nodeState struct {
	busy   int32 // the running task, -1 when idle
	halted bool  // a task of its own failed: it starts nothing more
	failed bool  // a task of its own failed or dep_failed
	ready  []int32
	noops  []int32 // no-ops ready while the node was busy
	open   int32   // its tasks of the run not finished
}

// New returns a run's initial state: every task of the run pending (those
// without requirements ready), the others as the options say. start is the
// run's start in unix milliseconds.
func New(g *Graph, opts Options, start int64) (*State, error) {
	if opts.MaxNodes <= 0 {
		opts.MaxNodes = DefaultMaxNodes
	}
	if opts.Carry != nil && len(opts.Carry) != len(g.Tasks) {
		return nil, fmt.Errorf("the run retried has %d tasks, this graph %d", len(opts.Carry), len(g.Tasks))
	}
	s := &State{G: g, Opts: opts, Start: start, msgs: map[int32]string{},
		tasks: make([]taskState, len(g.Tasks)), nodes: make([]nodeState, len(g.Nodes)),
		running: make([]int32, len(g.Limits)), groupFailed: make([]int, len(g.Groups))}
	in, err := s.selected()
	if err != nil {
		return nil, err
	}
	for ni := range s.nodes {
		s.nodes[ni].busy = -1
	}
	for t := range g.Tasks {
		ts := &s.tasks[t]
		switch node := g.Tasks[t].Node; {
		case !in[node] && opts.Carry != nil:
			ts.status, ts.outside = opts.Carry[t], true
		case !in[node]:
			ts.status, ts.outside = Skipped, true
		case opts.Carry != nil && opts.Carry[t] == Succeeded:
			ts.status, ts.outside = Succeeded, true
		default:
			s.open++
			s.nodes[g.Tasks[t].Node].open++
		}
	}
	s.initWaiting(start)
	s.settle(start)
	s.checkEnd(start)
	return s, nil
}

// selected says which nodes are in the run: all, or those named (and sync).
func (s *State) selected() ([]bool, error) {
	in := make([]bool, len(s.G.Nodes))
	for ni, n := range s.G.Nodes {
		in[ni] = len(s.Opts.Nodes) == 0 || n.Sync
	}
	for _, name := range s.Opts.Nodes {
		ni, ok := s.G.Node(name)
		if !ok {
			return nil, fmt.Errorf("node %s has no task in graph %s of cluster %s", name, s.G.Type, s.G.Cluster)
		}
		in[ni] = true
	}
	return in, nil
}

// initWaiting counts each pending task's requirements not yet satisfied,
// fails at once those that require a task outside the run that failed or
// never ran, and readies the rest that wait for nothing.
func (s *State) initWaiting(at int64) {
	g := s.G
	var blocked []int32
	for t := range g.Tasks {
		ts := &s.tasks[t]
		if ts.status != Pending {
			continue
		}
		sync := g.Nodes[g.Tasks[t].Node].Sync
		for _, r := range g.Requires(int32(t)) {
			rs := s.tasks[r].status
			switch {
			case !rs.Finished():
				ts.waiting++
			case !sync && !rs.Satisfies():
				blocked = append(blocked, int32(t))
			}
		}
	}
	for _, t := range blocked {
		if s.tasks[t].status == Pending {
			s.depFail(t, at, fmt.Sprintf("requires a task that did not succeed in the run retried (%s)", s.failedRequirement(t)))
		}
	}
	for t := range g.Tasks {
		if s.tasks[t].status == Pending && s.tasks[t].waiting == 0 {
			s.ready(int32(t), at)
		}
	}
}

// failedRequirement names the first requirement of t that did not succeed.
func (s *State) failedRequirement(t int32) string {
	for _, r := range s.G.Requires(t) {
		if st := s.tasks[r].status; st.Finished() && !st.Satisfies() {
			return s.G.Name(r)
		}
	}
	return "?"
}

// ready makes a task whose requirements are met ready: a no-op is settled,
// another joins its node's ready tasks.
func (s *State) ready(t int32, at int64) {
	s.tasks[t].ready = at
	if s.G.Tasks[t].Noop {
		s.noops = append(s.noops, t)
		return
	}
	ni := s.G.Tasks[t].Node
	s.nodes[ni].ready = append(s.nodes[ni].ready, t)
	s.woken = append(s.woken, ni)
}

// settle ends the ready no-ops: at once on sync, when its node is idle
// elsewhere (a node runs one task at a time, no-ops too).
func (s *State) settle(at int64) {
	for len(s.noops) > 0 {
		t := s.noops[len(s.noops)-1]
		s.noops = s.noops[:len(s.noops)-1]
		if s.tasks[t].status != Pending {
			continue
		}
		ni := s.G.Tasks[t].Node
		if n := &s.nodes[ni]; !s.G.Nodes[ni].Sync && n.busy >= 0 {
			n.noops = append(n.noops, t)
			continue
		}
		s.tasks[t].start = at
		s.finish(t, Skipped, at, "")
	}
}

// finish records that t ended with st and passes it on to what requires it.
func (s *State) finish(t int32, st Status, at int64, msg string) {
	ts := &s.tasks[t]
	ts.status, ts.end = st, at
	if msg != "" {
		s.msgs[t] = msg
	}
	s.closeTask(t)
	s.passOn(t, at)
}

// closeTask counts a task of the run finished, in the run and its node.
func (s *State) closeTask(t int32) {
	s.open--
	ni := s.G.Tasks[t].Node
	if s.nodes[ni].open--; s.nodes[ni].open == 0 {
		s.ended = append(s.ended, ni)
	}
}

// passOn tells t's dependents that t finished: a sync task counts any end, a
// task elsewhere is ready when all it requires succeeded or was skipped, and
// fails (dep_failed) when one did not.
func (s *State) passOn(t int32, at int64) {
	g := s.G
	st := s.tasks[t].status
	for _, d := range g.Dependents(t) {
		ds := &s.tasks[d]
		if ds.status != Pending {
			continue
		}
		if g.Nodes[g.Tasks[d].Node].Sync || st.Satisfies() {
			if ds.waiting--; ds.waiting == 0 {
				s.ready(d, at)
			}
			continue
		}
		s.depFail(d, at, fmt.Sprintf("requires %s, which %s", g.Name(t), didNot(st)))
	}
}

func didNot(st Status) string {
	switch st {
	case Failed:
		return "failed"
	case DepFailed:
		return "could not run (dep_failed)"
	}
	return "did not run"
}

// depFail marks a pending task dep_failed, fails its node (for fault
// tolerance) and passes it on.
func (s *State) depFail(t int32, at int64, msg string) {
	s.finish(t, DepFailed, at, msg)
	s.markFailed(s.G.Tasks[t].Node, at)
}

// markFailed counts a node failed once in each of its groups, and stops the
// run when a group has more failed nodes than it tolerates.
func (s *State) markFailed(ni int32, at int64) {
	n := &s.nodes[ni]
	if n.failed || s.G.Nodes[ni].Sync {
		return
	}
	n.failed = true
	for _, gi := range s.G.Nodes[ni].Groups {
		s.groupFailed[gi]++
		if gr := s.G.Groups[gi]; s.groupFailed[gi] > gr.Tolerance {
			s.stop(at, s.overTolerance(ni, gi))
		}
	}
}

// overTolerance says why node ni's failure stops the run.
func (s *State) overTolerance(ni, gi int32) string {
	gr, name := s.G.Groups[gi], s.G.Nodes[ni].Name
	if gr.Name == NoGroup {
		return fmt.Sprintf("node %s failed, and a node in no fault-tolerance group tolerates no failure", name)
	}
	nodes := "nodes"
	if s.groupFailed[gi] == 1 {
		nodes = "node"
	}
	return fmt.Sprintf("node %s failed: %d %s of group %s failed, and it tolerates %d", name, s.groupFailed[gi], nodes, gr.Name, gr.Tolerance)
}

// halt stops a node after one of its tasks failed: its pending tasks are
// dep_failed.
func (s *State) halt(ni int32, at int64, failed int32) {
	n := &s.nodes[ni]
	n.halted, n.ready, n.noops = true, nil, nil
	node := s.G.Nodes[ni]
	for t := node.First; t < node.End; t++ {
		if s.tasks[t].status == Pending {
			s.depFail(t, at, fmt.Sprintf("node %s failed: task %s failed", node.Name, s.G.Tasks[failed].ID))
		}
	}
}

// stop stops the run: nothing new starts, every pending task of the run ends
// not run; running tasks finish with their own result.
func (s *State) stop(at int64, reason string) {
	if s.Phase != Active {
		return
	}
	s.Phase, s.Reason = Stopping, reason
	for t := range s.tasks {
		if s.tasks[t].status == Pending {
			s.tasks[t].status, s.tasks[t].end = NotRun, at
			s.msgs[int32(t)] = "the run stopped: " + reason
			s.closeTask(int32(t))
		}
	}
	for ni := range s.nodes {
		s.nodes[ni].ready, s.nodes[ni].noops = nil, nil
	}
	s.noops = nil
}

// checkEnd ends the run once every task of it finished: failed when a
// critical node failed.
func (s *State) checkEnd(at int64) {
	if s.Phase == Ended || s.open > 0 {
		return
	}
	s.Phase, s.End = Ended, at
	for ni, n := range s.G.Nodes {
		s.Failed = s.Failed || (n.Critical && s.nodes[ni].failed)
	}
}

// freeNode ends a node's running task's hold on the node and its slots, and
// settles the no-ops that waited for it.
func (s *State) freeNode(ni int32, t int32) {
	n := &s.nodes[ni]
	n.busy = -1
	if s.busy == s.Opts.MaxNodes {
		s.all = true
	}
	s.busy--
	if l := s.G.Tasks[t].Limit; l >= 0 {
		if int(s.running[l]) == s.G.Limits[l] {
			s.all = true
		}
		s.running[l]--
	}
	s.noops = append(s.noops, n.noops...)
	n.noops = nil
	s.woken = append(s.woken, ni)
}

// TakeEnded returns the nodes whose tasks of the run all finished since the
// last call.
func (s *State) TakeEnded() []int32 {
	out := s.ended
	s.ended = nil
	return out
}

// TakeWoken returns the nodes that may have a task to dispatch since the last
// call, or all=true when any node may (a concurrency slot was freed).
func (s *State) TakeWoken() (nodes []int32, all bool) {
	nodes, all = s.woken, s.all
	s.woken, s.all = nil, false
	slices.Sort(nodes)
	return slices.Compact(nodes), all
}
