package runs

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/render"
)

// live is an active run: its state, and the committer that changes it.
type live struct {
	c *Coordinator
	h *Header
	g *Graph

	ops  chan *op
	done chan struct{} // closed when the run ended
	exit chan struct{} // closed when the committer returned

	mu       sync.Mutex // guards what follows
	s        *State
	n        int                       // events in the store's log
	wake     map[int32]chan struct{}   // node → closed when it may have a task
	seen     []time.Time               // node → its agent's last word while its task runs
	reported []bool                    // node → OnNodeDone told
	params   map[*render.DeployDef]any // decoded parameters, by definition
	finished bool                      // the store has the summary
}

type opKind int

const (
	opNext opKind = iota
	opFinish
	opStop
)

type op struct {
	kind   opKind
	node   int32
	report *api.TaskReport
	reason string
	reply  chan opResult
}

type opResult struct {
	assignment *api.Assignment
	err        error
}

// maxBatch bounds the operations one append carries.
const maxBatch = 4096

// submit hands o to the committer and waits for its answer.
func (l *live) submit(ctx context.Context, o *op) opResult {
	o.reply = make(chan opResult, 1)
	select {
	case l.ops <- o:
	case <-l.done:
		return opResult{err: errRunEnded}
	case <-ctx.Done():
		return opResult{err: ctx.Err()}
	}
	select {
	case r := <-o.reply:
		return r
	case <-l.done:
		// The committer answers before it ends the run: an answer is
		// there, or o came too late.
		select {
		case r := <-o.reply:
			return r
		default:
			return opResult{err: errRunEnded}
		}
	case <-ctx.Done():
		return opResult{err: ctx.Err()}
	}
}

// errRunEnded says an operation came after its run ended.
var errRunEnded = fmt.Errorf("the run has ended: %w", ErrStale)

func (l *live) stopped() <-chan struct{} { return l.exit }

// waker returns a channel closed when node ni may have a task to take.
func (l *live) waker(ni int32) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := l.wake[ni]
	if ch == nil {
		ch = make(chan struct{})
		l.wake[ni] = ch
	}
	return ch
}

// heard notes a heartbeat of node ni's agent on its running task.
func (l *live) heard(ni int32, task string, attempt int32) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.s.Running(ni)
	if !ok || l.g.Tasks[t].ID != task || l.s.Task(t).Attempt != attempt {
		return ErrStale
	}
	l.seen[ni] = l.c.clock()
	return nil
}

// commit is the run's committer: it applies batches of operations until the
// run ended (its summary stored) or ctx ends.
func (l *live) commit(ctx context.Context) {
	defer close(l.exit)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		var batch []*op
		select {
		case o := <-l.ops:
			batch = append(batch, o)
		case <-tick.C:
		case <-ctx.Done():
			return
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case o := <-l.ops:
				batch = append(batch, o)
			default:
				break drain
			}
		}
		if l.step(ctx, batch) {
			return
		}
	}
}

// step applies one batch, writes its events to the store, then answers,
// wakes the agents that may have a task, tells the nodes done and ends the
// run when it is over. It says whether the run ended.
func (l *live) step(ctx context.Context, batch []*op) bool {
	now := l.c.clock()
	at := now.UnixMilli()
	l.mu.Lock()
	events := l.lost(now, nil)
	results := make([]opResult, len(batch))
	for i, o := range batch {
		results[i] = l.apply(o, at, now, &events)
	}
	woken, all := l.s.TakeWoken()
	ended := l.s.TakeEnded()
	phase := l.s.Phase
	l.mu.Unlock()
	if len(events) > 0 {
		if err := l.c.Store.Append(ctx, l.h.Cluster, l.h.ID, l.n, events); err != nil {
			l.c.log().Error("writing a run's log; reading it again", "cluster", l.h.Cluster, "run", l.h.ID, "error", err.Error())
			for i := range results {
				if results[i].err == nil {
					results[i] = opResult{err: fmt.Errorf("keeping the run's log: %w", err)}
				}
			}
			l.reply(batch, results)
			l.reload(ctx)
			return false
		}
		l.n += len(events)
	}
	l.reply(batch, results)
	l.wakeUp(woken, all)
	l.nodesDone(ended)
	if phase == Ended {
		return l.finish(ctx)
	}
	return false
}

func (l *live) reply(batch []*op, results []opResult) {
	for i, o := range batch {
		o.reply <- results[i]
	}
}

// apply applies one operation under l.mu, adding its events.
func (l *live) apply(o *op, at int64, now time.Time, events *[]Event) opResult {
	s := l.s
	name := l.g.Nodes[o.node].Name
	add := func(ev Event) error {
		if err := s.Apply(ev); err != nil {
			return err
		}
		*events = append(*events, ev)
		return nil
	}
	switch o.kind {
	case opNext:
		if t, busy := s.Running(o.node); busy {
			// The agent asks for a task while it runs one: it lost it
			// (it restarted without its state).
			add(Event{Kind: KindLost, At: at, Node: name, Task: l.g.Tasks[t].ID,
				Message: "the agent stopped during the task (it asked for another one)"})
		}
		ev, ok := s.Dispatch(o.node, at)
		if !ok {
			return opResult{}
		}
		if err := add(ev); err != nil {
			return opResult{err: err}
		}
		l.seen[o.node] = now
		return opResult{assignment: l.assignment(o.node, ev)}
	case opFinish:
		r := o.report
		ev := Event{Kind: KindFinish, At: at, Node: name, Task: r.Task, Attempt: r.Attempt, Result: r.Status, Message: r.Message}
		if r.StartedAt != nil {
			ev.Started = r.StartedAt.UnixMilli()
		}
		if err := add(ev); err != nil {
			return opResult{err: err}
		}
		if !r.Next {
			return opResult{}
		}
		// The node's next task, in the same commit, when it may start now.
		s.settle(at)
		next, ok := s.Dispatch(o.node, at)
		if !ok || add(next) != nil {
			return opResult{}
		}
		l.seen[o.node] = now
		return opResult{assignment: l.assignment(o.node, next)}
	case opStop:
		if s.Phase != Active {
			return opResult{}
		}
		return opResult{err: add(Event{Kind: KindStop, At: at, Message: o.reason})}
	}
	return opResult{err: fmt.Errorf("unknown operation %d", o.kind)}
}

// lost fails the running tasks whose agents were silent too long.
func (l *live) lost(now time.Time, events []Event) []Event {
	for ni := range l.g.Nodes {
		t, busy := l.s.Running(int32(ni))
		if !busy || now.Sub(l.seen[ni]) <= l.lostAfter(t) {
			continue
		}
		ev := Event{Kind: KindLost, At: now.UnixMilli(), Node: l.g.Nodes[ni].Name, Task: l.g.Tasks[t].ID,
			Message: fmt.Sprintf("the agent stopped during the task (silent for %s)", now.Sub(l.seen[ni]).Round(time.Second))}
		if l.s.Apply(ev) == nil {
			events = append(events, ev)
		}
	}
	return events
}

// lostAfter is how long a task's agent may be silent: three heartbeats; a
// reboot task's timeout more (the agent is down while the node reboots).
func (l *live) lostAfter(t int32) time.Duration {
	d := 3 * l.c.heartbeat()
	if def := l.g.Tasks[t].Def; def.Type == "reboot" {
		if p, err := def.Parameters(); err == nil {
			if secs, ok := p["timeout"].(int); ok && secs > 0 {
				d += time.Duration(secs) * time.Second
			} else {
				d += 15 * time.Minute
			}
		}
	}
	return d
}

// assignment is what node ni's agent is given for its dispatch ev.
func (l *live) assignment(ni int32, ev Event) *api.Assignment {
	t, _ := l.g.Task(ev.Node, ev.Task)
	def := l.g.Tasks[t].Def
	params, ok := l.params[def]
	if !ok {
		p, err := def.Parameters()
		if err != nil {
			l.c.log().Error("decoding a task's parameters", "cluster", l.h.Cluster, "task", ev.Task, "error", err.Error())
		}
		params = jsonable(p)
		if l.params == nil {
			l.params = map[*render.DeployDef]any{}
		}
		l.params[def] = params
	}
	a := &api.Assignment{Cluster: l.h.Cluster, Node: ev.Node, Run: l.h.ID, Graph: l.h.Graph, Serial: l.h.Serial,
		Attempt: ev.Attempt, Noop: l.h.Noop, HeartbeatSeconds: int(l.c.heartbeat() / time.Second),
		Task: api.Task{ID: ev.Task, Type: def.Type}}
	if m, ok := params.(map[string]any); ok {
		a.Task.Parameters = m
	}
	return a
}

// jsonable turns a decoded YAML value into one encoding/json writes: maps
// with keys that are not strings get their keys written as strings.
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonable(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}

// wakeUp wakes the agents waiting on nodes (all of them with all).
func (l *live) wakeUp(nodes []int32, all bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if all {
		for ni, ch := range l.wake {
			close(ch)
			delete(l.wake, ni)
		}
		return
	}
	for _, ni := range nodes {
		if ch := l.wake[ni]; ch != nil {
			close(ch)
			delete(l.wake, ni)
		}
	}
}

// nodesDone tells OnNodeDone of each node whose tasks of the run all
// finished.
func (l *live) nodesDone(nodes []int32) {
	if l.c.OnNodeDone == nil {
		return
	}
	for _, ni := range nodes {
		if l.g.Nodes[ni].Sync || l.reported[ni] {
			continue
		}
		l.reported[ni] = true
		l.mu.Lock()
		failed := l.s.NodeFailed(ni)
		tasks := l.nodeTasks(ni, false)
		l.mu.Unlock()
		l.c.OnNodeDone(l.h, l.g.Nodes[ni].Name, failed, tasks)
	}
}

// endWait bounds how long awaitEnd waits for the summary of a run that ended
// to be stored (a variable for the test of that bound).
var endWait = 10 * time.Second

// awaitEnd returns once the run, which has ended, has its summary stored:
// its view shows it ended a moment before (finish), and a retry asked in
// that moment waits rather than being refused. ErrBusy while the run has not
// ended, or when its summary is not stored within endWait.
func (l *live) awaitEnd(ctx context.Context) error {
	l.mu.Lock()
	phase := l.s.Phase
	l.mu.Unlock()
	busy := fmt.Errorf("run %s of cluster %s has not ended: %w", l.h.ID, l.h.Cluster, ErrBusy)
	if phase != Ended {
		return busy
	}
	t := time.NewTimer(endWait)
	defer t.Stop()
	select {
	case <-l.done:
		return nil
	case <-t.C:
		return busy
	case <-ctx.Done():
		return ctx.Err()
	}
}

// finish stores the summary of a run that ended and lets it go; false when
// the store refused it (the next step tries again).
func (l *live) finish(ctx context.Context) bool {
	l.mu.Lock()
	sum := l.summary()
	l.mu.Unlock()
	if err := l.c.Store.End(ctx, l.h.Cluster, l.h.ID, sum); err != nil {
		l.c.log().Error("writing the end of a run", "cluster", l.h.Cluster, "run", l.h.ID, "error", err.Error())
		return false
	}
	l.c.log().Info("deployment run ended", "cluster", l.h.Cluster, "run", l.h.ID, "failed", sum.Failed,
		"reason", sum.Reason, "failed_nodes", len(sum.FailedNodes))
	l.c.ended(l, sum)
	close(l.done)
	l.wakeUp(nil, true)
	if l.c.OnEnd != nil {
		l.c.OnEnd(l.h, sum)
	}
	return true
}

// reload rebuilds the state from the store's log, after a write failed.
func (l *live) reload(ctx context.Context) {
	rec, err := l.c.Store.Read(ctx, l.h.Cluster, l.h.ID)
	var s *State
	if err == nil {
		s, err = Replay(rec, l.g)
	}
	if err != nil {
		l.c.log().Error("reading a run's log again", "cluster", l.h.Cluster, "run", l.h.ID, "error", err.Error())
		return
	}
	l.mu.Lock()
	l.s, l.n = s, len(rec.Events)
	l.mu.Unlock()
	l.wakeUp(nil, true)
}
