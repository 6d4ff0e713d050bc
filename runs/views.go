package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fuelsync/fuelsync/api"
)

// Views of runs for the API and pages.

func msTime(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := time.UnixMilli(ms).UTC()
	return &t
}

// summary is the run's summary, from its state.
func (l *live) summary() *Summary {
	return summaryOf(l.s)
}

func summaryOf(s *State) *Summary {
	sum := &Summary{Failed: s.Failed, Halted: s.Halted, Reason: s.Reason, Counts: map[string]int{}}
	if s.End > 0 {
		sum.Ended = time.UnixMilli(s.End).UTC()
	}
	counts, _ := s.Counts()
	for st, n := range counts {
		sum.Counts[st.String()] += n
	}
	for ni, n := range s.G.Nodes {
		if s.NodeFailed(int32(ni)) {
			sum.FailedNodes = append(sum.FailedNodes, n.Name)
		}
	}
	slices.Sort(sum.FailedNodes)
	return sum
}

// nodeTasks lists node ni's tasks (those outside the run too, when
// outside is set).
func (l *live) nodeTasks(ni int32, outside bool) []api.RunTask {
	return nodeTasks(l.g, l.s, ni, outside, nil)
}

func nodeTasks(g *Graph, s *State, ni int32, outside bool, hasOutput func(int32) bool) []api.RunTask {
	n := g.Nodes[ni]
	out := make([]api.RunTask, 0, n.End-n.First)
	for t := n.First; t < n.End; t++ {
		v := s.Task(t)
		if v.Outside && !outside {
			continue
		}
		rt := api.RunTask{ID: g.Tasks[t].ID, Type: g.Tasks[t].Def.Type, Status: v.Status.String(), Outside: v.Outside,
			Attempt: v.Attempt, Start: msTime(v.Start), End: msTime(v.End), Message: v.Message}
		for _, r := range g.Requires(t) {
			rt.Requires = append(rt.Requires, g.Name(r))
		}
		if hasOutput != nil && v.Attempt > 0 {
			rt.Output = hasOutput(t)
		}
		out = append(out, rt)
	}
	return out
}

// runView is the API's view of a run, with the tasks asked (api.TasksAll,
// TasksFailed, TasksNone).
func runView(h *Header, g *Graph, s *State, tasks string) api.Run {
	r := api.Run{Cluster: h.Cluster, ID: h.ID, Graph: h.Graph, Serial: h.Serial, Revision: h.Revision, Noop: h.Noop,
		Only: h.Nodes, RetryOf: h.RetryOf, Trigger: h.Trigger, Created: h.Created, Counts: map[string]int{}}
	sum := summaryOf(s)
	r.Counts, r.FailedNodes, r.Reason = sum.Counts, sum.FailedNodes, sum.Reason
	switch {
	case s.Phase == Active:
		r.Status = api.RunRunning
	case s.Phase == Stopping:
		r.Status = api.RunStopping
	default:
		r.Status, r.Ended = Verdict(sum), &sum.Ended
	}
	for ni := range g.Nodes {
		if t, busy := s.Running(int32(ni)); busy && len(r.Running) < api.MaxRunningListed {
			r.Running = append(r.Running, g.Name(t))
		}
	}
	if tasks == api.TasksNone {
		return r
	}
	for ni, n := range g.Nodes {
		rn := api.RunNode{Name: n.Name, Critical: n.Critical, Tasks: nodeTasks(g, s, int32(ni), true, nil)}
		rn.Status = nodeStatus(s, int32(ni), rn.Tasks)
		if tasks == api.TasksFailed {
			rn.Tasks = slices.DeleteFunc(rn.Tasks, func(t api.RunTask) bool { return t.Status != api.TaskFailed })
			if len(rn.Tasks) == 0 {
				continue
			}
		}
		r.Nodes = append(r.Nodes, rn)
	}
	return r
}

// nodeStatus is a node's status in a run: running while it runs a task,
// failed once it failed, succeeded once its tasks of the run finished,
// skipped when it has none, pending otherwise.
func nodeStatus(s *State, ni int32, tasks []api.RunTask) string {
	if _, busy := s.Running(ni); busy {
		return api.TaskRunning
	}
	if s.NodeFailed(ni) {
		return api.TaskFailed
	}
	in, open := 0, 0
	for _, t := range tasks {
		if t.Outside {
			continue
		}
		in++
		if t.Status == "pending" {
			open++
		}
	}
	switch {
	case in == 0:
		return api.TaskSkipped
	case open > 0:
		return "pending"
	}
	return api.TaskSucceeded
}

// Runs lists cluster's runs, newest first, without their nodes.
func (c *Coordinator) Runs(ctx context.Context, cluster string) ([]api.Run, error) {
	list, err := c.Store.List(ctx, cluster)
	if err != nil {
		return nil, err
	}
	l, _ := c.active(cluster)
	out := make([]api.Run, 0, len(list))
	for _, it := range list {
		if l != nil && l.h.ID == it.Header.ID {
			l.mu.Lock()
			out = append(out, runView(l.h, l.g, l.s, api.TasksNone))
			l.mu.Unlock()
			continue
		}
		out = append(out, listedView(it))
	}
	return out, nil
}

// listedView is the view of a listed run from its header and summary.
func listedView(it *Listed) api.Run {
	h := it.Header
	r := api.Run{Cluster: h.Cluster, ID: h.ID, Graph: h.Graph, Serial: h.Serial, Revision: h.Revision, Noop: h.Noop,
		Only: h.Nodes, RetryOf: h.RetryOf, Trigger: h.Trigger, Created: h.Created, Status: api.RunRunning, Counts: map[string]int{}}
	if s := it.Summary; s != nil {
		r.Status, r.Ended, r.Reason, r.Counts, r.FailedNodes = Verdict(s), &s.Ended, s.Reason, s.Counts, s.FailedNodes
	}
	return r
}

// Verdict is an ended run's status: failed when a critical node failed,
// else stopped when an operator stopped it, else succeeded.
func Verdict(s *Summary) string {
	switch {
	case s.Failed:
		return api.RunFailed
	case s.Halted:
		return api.RunStopped
	}
	return api.RunSucceeded
}

// Run returns one of cluster's runs with its nodes and tasks ("latest": the
// newest): every task, the failed ones, or none (api.TasksAll, TasksFailed,
// TasksNone).
func (c *Coordinator) Run(ctx context.Context, cluster, id, tasks string) (*api.Run, error) {
	if id == "latest" {
		list, err := c.Store.List(ctx, cluster)
		if err != nil {
			return nil, err
		}
		if len(list) == 0 {
			return nil, ErrNotFound
		}
		id = list[0].Header.ID
	}
	if l, _ := c.active(cluster); l != nil && l.h.ID == id {
		l.mu.Lock()
		r := runView(l.h, l.g, l.s, tasks)
		l.mu.Unlock()
		c.markOutputs(ctx, l.g, &r)
		return &r, nil
	}
	rec, err := c.Store.Read(ctx, cluster, id)
	if err != nil {
		return nil, err
	}
	g, err := GraphOf(rec.Snapshot, cluster, rec.Header.Graph)
	if err != nil {
		return nil, err
	}
	s, err := Replay(rec, g)
	if err != nil {
		return nil, err
	}
	r := runView(rec.Header, g, s, tasks)
	if rec.Summary == nil && s.Phase == Ended {
		r.Status = api.RunRunning // the end not yet written
	}
	c.markOutputs(ctx, g, &r)
	return &r, nil
}

// markOutputs says which failed tasks have an output kept (the links of
// the run's page and API).
func (c *Coordinator) markOutputs(ctx context.Context, g *Graph, r *api.Run) {
	for ni := range r.Nodes {
		for ti := range r.Nodes[ni].Tasks {
			t := &r.Nodes[ni].Tasks[ti]
			if t.Attempt == 0 || t.Status != api.TaskFailed {
				continue
			}
			if idx, ok := g.Task(r.Nodes[ni].Name, t.ID); ok {
				if out, err := c.Store.Output(ctx, r.Cluster, r.ID, idx); err == nil && len(out) > 0 {
					t.Output = true
				}
			}
		}
	}
}

// Output returns the output kept of a task of a run.
func (c *Coordinator) Output(ctx context.Context, cluster, id, node, task string) ([]byte, error) {
	rec, err := c.Store.Read(ctx, cluster, id)
	if err != nil {
		return nil, err
	}
	g, err := GraphOf(rec.Snapshot, cluster, rec.Header.Graph)
	if err != nil {
		return nil, err
	}
	t, ok := g.Task(node, task)
	if !ok {
		return nil, fmt.Errorf("node %s has no task %s in run %s: %w", node, task, id, ErrNotFound)
	}
	out, err := c.Store.Output(ctx, cluster, id, t)
	if err == nil && out == nil {
		err = errors.Join(ErrNotFound, errors.New("no output kept"))
	}
	return out, err
}
