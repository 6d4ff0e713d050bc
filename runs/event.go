package runs

import (
	"errors"
	"fmt"
	"slices"
)

// An Event changes a run's state: the run's log is its events, in order, and
// its state is New followed by Apply of each. Apply is deterministic (times
// come from the events), so every replica that reads a log gets the same state.
type Event struct {
	Kind Kind `json:"k"`
	// At is when the coordinator recorded it, in unix milliseconds.
	At int64 `json:"t"`
	// Node and Task name the node and its task (dispatch, finish, lost).
	Node string `json:"n,omitempty"`
	Task string `json:"id,omitempty"`
	// Attempt is the dispatch's number for the task (1 the first time).
	Attempt int32 `json:"a,omitempty"`
	// Result is how a task ended (finish): succeeded, failed or skipped.
	Result string `json:"s,omitempty"`
	// Started is when the agent started the task (finish), unix ms; 0: at
	// its dispatch.
	Started int64 `json:"st,omitempty"`
	// Message says why (finish, lost, stop).
	Message string `json:"m,omitempty"`
}

// Kind is an event's kind.
type Kind string

// The events.
const (
	// KindDispatch: Node's agent took Task (attempt Attempt) to run.
	KindDispatch Kind = "dispatch"
	// KindFinish: Node's agent reports how Task (attempt Attempt) ended.
	KindFinish Kind = "finish"
	// KindLost: Node's agent stopped while it ran its task (it went silent,
	// or asked for another task): the task failed.
	KindLost Kind = "lost"
	// KindStop: an operator stopped the run.
	KindStop Kind = "stop"
)

// ErrStale says an event no longer applies: the task is not the one running
// on the node, or not that attempt of it (a report arriving after the task
// was given up, or twice). It changes nothing.
var ErrStale = errors.New("the task is not running on the node in that attempt")

// Apply changes the state by ev. An event that does not apply (ErrStale, or
// another error naming what is wrong) changes nothing.
func (s *State) Apply(ev Event) error {
	if s.Phase == Ended {
		return fmt.Errorf("the run has ended")
	}
	var err error
	switch ev.Kind {
	case KindDispatch:
		err = s.applyDispatch(ev)
	case KindFinish:
		err = s.applyFinish(ev)
	case KindLost:
		err = s.applyLost(ev)
	case KindStop:
		s.Halted = s.Halted || s.Phase == Active
		s.stop(ev.At, ev.Message)
	default:
		err = fmt.Errorf("unknown event kind %q", ev.Kind)
	}
	if err != nil {
		return err
	}
	s.Seq++
	s.settle(ev.At)
	s.checkEnd(ev.At)
	return nil
}

// Next returns the task node ni's agent would be given now: its ready task
// of highest priority whose concurrency limit has room, while the run is
// active, the node idle and fewer than MaxNodes nodes busy.
func (s *State) Next(ni int32) (int32, bool) {
	n := &s.nodes[ni]
	if s.Phase != Active || n.busy >= 0 || n.halted || len(n.ready) == 0 || s.busy >= s.Opts.MaxNodes {
		return -1, false
	}
	best := -1
	for i, t := range n.ready {
		if l := s.G.Tasks[t].Limit; l >= 0 && int(s.running[l]) >= s.G.Limits[l] {
			continue
		}
		if best < 0 || s.G.Tasks[t].Priority > s.G.Tasks[n.ready[best]].Priority ||
			(s.G.Tasks[t].Priority == s.G.Tasks[n.ready[best]].Priority && t < n.ready[best]) {
			best = i
		}
	}
	if best < 0 {
		return -1, false
	}
	return n.ready[best], true
}

// Dispatch is the event that gives node ni its next task (Next) at at; false
// when there is none.
func (s *State) Dispatch(ni int32, at int64) (Event, bool) {
	t, ok := s.Next(ni)
	if !ok {
		return Event{}, false
	}
	return Event{Kind: KindDispatch, At: at, Node: s.G.Nodes[ni].Name, Task: s.G.Tasks[t].ID, Attempt: s.tasks[t].attempt + 1}, true
}

func (s *State) lookup(ev Event) (int32, int32, error) {
	ni, ok := s.G.Node(ev.Node)
	if !ok {
		return 0, 0, fmt.Errorf("node %q is not in the run's graph", ev.Node)
	}
	if ev.Kind == KindLost {
		return ni, -1, nil
	}
	t, ok := s.G.Task(ev.Node, ev.Task)
	if !ok {
		return 0, 0, fmt.Errorf("node %s has no task %q in the run's graph", ev.Node, ev.Task)
	}
	return ni, t, nil
}

func (s *State) applyDispatch(ev Event) error {
	ni, t, err := s.lookup(ev)
	if err != nil {
		return err
	}
	// Any ready task the node may run now (not only Next's choice: a log
	// written by another version, with other priorities, still replays).
	n := &s.nodes[ni]
	l := s.G.Tasks[t].Limit
	if s.Phase != Active || n.busy >= 0 || n.halted || s.busy >= s.Opts.MaxNodes || !slices.Contains(n.ready, t) ||
		(l >= 0 && int(s.running[l]) >= s.G.Limits[l]) || ev.Attempt != s.tasks[t].attempt+1 {
		return fmt.Errorf("task %s may not start on node %s now", ev.Task, ev.Node)
	}
	n.ready = slices.DeleteFunc(n.ready, func(r int32) bool { return r == t })
	n.busy = t
	s.busy++
	if l >= 0 {
		s.running[l]++
	}
	ts := &s.tasks[t]
	ts.status, ts.attempt, ts.start = Running, ev.Attempt, ev.At
	return nil
}

func (s *State) applyFinish(ev Event) error {
	ni, t, err := s.lookup(ev)
	if err != nil {
		return err
	}
	if s.nodes[ni].busy != t || s.tasks[t].status != Running || s.tasks[t].attempt != ev.Attempt {
		return ErrStale
	}
	var st Status
	switch ev.Result {
	case "succeeded":
		st = Succeeded
	case "skipped":
		st = Skipped
	case "failed":
		st = Failed
	default:
		return fmt.Errorf("result %q is not succeeded, failed or skipped", ev.Result)
	}
	msg := ev.Message
	if st == Failed && s.Opts.Noop {
		// A noop run's failures stop nothing (astute: fail_on_error false).
		st, msg = Skipped, "failed in a noop run: "+msg
	}
	if ev.Started > 0 && ev.Started >= s.tasks[t].start && ev.Started <= ev.At {
		s.tasks[t].start = ev.Started
	}
	s.end(ni, t, st, ev.At, msg)
	return nil
}

func (s *State) applyLost(ev Event) error {
	ni, _, err := s.lookup(ev)
	if err != nil {
		return err
	}
	t := s.nodes[ni].busy
	if t < 0 {
		return ErrStale
	}
	if ev.Task != "" && s.G.Tasks[t].ID != ev.Task {
		return ErrStale
	}
	msg := ev.Message
	if msg == "" {
		msg = "the agent stopped during the task"
	}
	s.end(ni, t, Failed, ev.At, msg)
	return nil
}

// end ends node ni's running task t with st.
func (s *State) end(ni, t int32, st Status, at int64, msg string) {
	s.freeNode(ni, t)
	s.finish(t, st, at, msg)
	if st == Failed {
		s.markFailed(ni, at)
		s.halt(ni, at, t)
	}
}
