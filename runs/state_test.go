package runs

import (
	"strings"
	"testing"
)

// A three-node HA cluster in miniature: a primary controller (critical),
// two controllers that tolerate one failure, a compute (critical), the
// stages on sync.
const haGraph = `
sync: deploy_start/stage; deploy_end/stage<-deploy_start,db@n1,db@n2,db@n3,nova@n4; post/stage<-deploy_end
n1: hiera<-deploy_start@sync; db<-hiera; check/shell<-post@sync
n2: hiera<-deploy_start@sync; db<-hiera,db@n1; check/shell<-post@sync
n3: hiera<-deploy_start@sync; db<-hiera,db@n1; check/shell<-post@sync
n4: hiera<-deploy_start@sync; nova<-hiera,db@n1; check/shell<-post@sync
groups: primary=0:n1 ctrl=1:n2,n3 compute=0:n4
`

// TestRules: each rule of the scheduler, by a run that breaks when the rule
// does.
func TestRules(t *testing.T) {
	for name, c := range map[string]struct {
		graph  string
		opts   Options
		script []string
		want   string // statuses, or "" to skip
		phase  Phase
		failed bool
		halted bool   // stopped by an operator
		reason string // a part of the stop's reason
	}{
		"order across nodes: a task starts after its cross-node requirement succeeded": {
			graph:  "a: x\nb: y<-x@a",
			script: []string{"d b -", "d a x", "d b -", "ok a x", "d b y", "ok b y"},
			want:   "x@a=succeeded y@b=succeeded", phase: Ended,
		},
		"order on a node: one task at a time, in priority order": {
			graph:  "a: x; y; z<-y",
			script: []string{"d a y", "d a -", "ok a y", "d a x", "ok a x", "d a z", "ok a z"},
			want:   "x@a=succeeded y@a=succeeded z@a=succeeded", phase: Ended,
		},
		"sync-node tasks start when their requirements finished, failed or not": {
			graph:  "sync: end/stage<-x@a,x@b; post/stage<-end\na: x; z<-post@sync\nb: x; z<-post@sync\ngroups: g=1:a,b",
			script: []string{"d a x", "d b x", "fail a x boom", "d b -", "ok b x", "d b z", "ok b z"},
			want:   "end@sync=skipped post@sync=skipped x@a=failed x@b=succeeded z@a=dep_failed z@b=succeeded",
			phase:  Ended,
		},
		"one_by_one: one node at a time runs the task": {
			graph:  "a: x*1\nb: x*1\nc: x*1",
			script: []string{"d a x", "d b -", "d c -", "ok a x", "d c x", "d b -", "ok c x", "d b x", "ok b x"},
			want:   "x@a=succeeded x@b=succeeded x@c=succeeded", phase: Ended,
		},
		"parallel: amount nodes at a time": {
			graph:  "a: x*p2\nb: x*p2\nc: x*p2",
			script: []string{"d a x", "d b x", "d c -", "ok b x", "d c x", "ok a x", "ok c x"},
			want:   "x@a=succeeded x@b=succeeded x@c=succeeded", phase: Ended,
		},
		"parallel with a yaql amount: one at a time": {
			graph:  "a: x*py\nb: x*py",
			script: []string{"d a x", "d b -", "ok a x", "d b x", "ok b x"},
			phase:  Ended,
		},
		"the limit counts running tasks of one id only": {
			graph:  "a: x*1\nb: x*1; y",
			script: []string{"d a x", "d b y", "ok b y", "d b -", "ok a x", "d b x", "ok b x"},
			phase:  Ended,
		},
		"max nodes: at most that many nodes busy": {
			graph:  "a: x\nb: x\nc: x",
			opts:   Options{MaxNodes: 2},
			script: []string{"d a x", "d b x", "d c -", "ok a x", "d c x", "ok b x", "ok c x"},
			phase:  Ended,
		},
		"a failed task fails its node: its pending tasks dep_failed, transitively across nodes": {
			graph:  "a: x; y<-x; w\nb: u<-y@a\nc: v<-u@b; k\ngroups: g=5:a,b,c",
			script: []string{"d a x", "fail a x", "d a -", "d c k", "ok c k"},
			want:   "k@c=succeeded u@b=dep_failed v@c=dep_failed w@a=dep_failed x@a=failed y@a=dep_failed",
			phase:  Ended,
		},
		"a node with only a dep_failed task counts as failed and goes on with other tasks": {
			graph:  "a: x\nb: y<-x@a; z\ngroups: g=1:a,b",
			script: []string{"d a x", "d b z", "fail a x"},
			want:   "x@a=failed y@b=dep_failed z@b=running",
			phase:  Stopping, reason: "node a failed: 2 nodes of group g failed, and it tolerates 1",
		},
		"within tolerance: no stop, the run succeeds with a failed node": {
			graph:  "a: x\nb: x\ngroups: g=1:a,b",
			script: []string{"d a x", "d b x", "fail a x", "ok b x"},
			want:   "x@a=failed x@b=succeeded", phase: Ended,
		},
		"over tolerance: the run stops, running tasks finish, the rest are not run": {
			graph:  "a: x; y<-x\nb: x; y<-x\nc: x; y<-x\ngroups: g=1:a,b,c",
			script: []string{"d a x", "d b x", "d c x", "fail a x", "fail c x", "d b -", "ok b x", "d b -"},
			want:   "x@a=failed x@b=succeeded x@c=failed y@a=dep_failed y@b=notrun y@c=dep_failed",
			phase:  Ended, reason: "node c failed: 2 nodes of group g failed, and it tolerates 1",
		},
		"over the tolerance of a non-critical group: stopped, but succeeded": {
			graph:  "a: x\nb: x\nc: x\ngroups: g=1:a,b",
			script: []string{"d a x", "d b x", "fail a x", "fail b x"},
			want:   "x@a=failed x@b=failed x@c=notrun",
			phase:  Ended, reason: "group g",
		},
		"a node in no group is critical: its failure stops the run and fails it": {
			graph:  "a: x; y<-x\nb: x",
			script: []string{"d a x", "fail a x"},
			want:   "x@a=failed x@b=notrun y@a=dep_failed",
			phase:  Ended, failed: true, reason: "node a failed, and a node in no fault-tolerance group tolerates no failure",
		},
		"a critical node failed through dep_failed fails the run": {
			graph:  "a: x\nb: y<-x@a\ngroups: g=1:a",
			script: []string{"d a x", "fail a x"},
			want:   "x@a=failed y@b=dep_failed",
			phase:  Ended, failed: true, reason: "node b failed, and a node in no",
		},
		"an operator's stop: running tasks finish, nothing new starts": {
			graph:  "a: x; y<-x\nb: x",
			script: []string{"d a x", "stop by alice", "d b -", "ok a x", "d a -"},
			want:   "x@a=succeeded x@b=notrun y@a=notrun",
			phase:  Ended, halted: true, reason: "by alice",
		},
		"an agent lost during a task: the task fails": {
			graph:  "a: x; y\ngroups: g=1:a",
			script: []string{"d a x", "lost a"},
			want:   "x@a=failed y@a=dep_failed", phase: Ended,
		},
		"no-op tasks of a busy node wait until it is idle": {
			graph:  "a: x; n/skipped<-s@b\nb: s\nc: z<-n@a",
			script: []string{"d a x", "d b s", "ok b s", "d c -", "ok a x", "d c z", "ok c z"},
			phase:  Ended, want: "n@a=skipped s@b=succeeded x@a=succeeded z@c=succeeded",
		},
		"a noop run: a failure ends skipped and stops nothing": {
			graph:  "a: x; y<-x",
			opts:   Options{Noop: true},
			script: []string{"d a x", "fail a x", "d a y", "ok a y"},
			want:   "x@a=skipped y@a=succeeded", phase: Ended,
		},
		"a run of some nodes: the others' tasks count as done": {
			graph:  "a: x\nb: y<-x@a",
			opts:   Options{Nodes: []string{"b"}},
			script: []string{"d a -", "d b y", "ok b y"},
			want:   "x@a=skipped y@b=succeeded", phase: Ended,
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := parseGraph(t, c.graph)
			s := play(t, g, c.opts, c.script...)
			if c.want != "" && statuses(s) != c.want {
				t.Errorf("statuses\n got %s\nwant %s", statuses(s), c.want)
			}
			if s.Phase != c.phase || s.Failed != c.failed || s.Halted != c.halted {
				t.Errorf("phase %s failed %v halted %v, want %s failed %v halted %v", s.Phase, s.Failed, s.Halted, c.phase, c.failed, c.halted)
			}
			if !strings.Contains(s.Reason, c.reason) || (c.reason == "" && s.Reason != "") {
				t.Errorf("reason %q, want %q", s.Reason, c.reason)
			}
		})
	}
}

// TestRetry: a retry runs what did not succeed, and holds back what needs a
// task outside it that did not succeed.
func TestRetry(t *testing.T) {
	g := parseGraph(t, "a: x; y<-x\nb: z<-y@a\nc: w\ngroups: g=5:a,b,c")
	first := play(t, g, Options{}, "d a x", "d c w", "ok a x", "d a y", "fail a y", "ok c w")
	if first.Phase != Ended {
		t.Fatalf("first run: %s", first.Dump())
	}
	t.Run("every node", func(t *testing.T) {
		s := play(t, g, Options{Carry: first.Statuses()}, "d c -", "d a y", "ok a y", "d b z", "ok b z")
		if got, want := statuses(s), "w@c=succeeded x@a=succeeded y@a=succeeded z@b=succeeded"; got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
		if v := s.Task(mustTask(t, g, "a", "x")); !v.Outside {
			t.Errorf("x@a succeeded before: it is outside the retry, got %+v", v)
		}
	})
	t.Run("one node whose requirement failed outside it", func(t *testing.T) {
		s := play(t, g, Options{Carry: first.Statuses(), Nodes: []string{"b"}})
		if got, want := statuses(s), "w@c=succeeded x@a=succeeded y@a=failed z@b=dep_failed"; got != want {
			t.Errorf("got %s\nwant %s", got, want)
		}
		if s.Phase != Ended {
			t.Errorf("the retry should end at once: %s", s.Dump())
		}
	})
}

func mustTask(t *testing.T, g *Graph, node, id string) int32 {
	t.Helper()
	tk, ok := g.Task(node, id)
	if !ok {
		t.Fatalf("no task %s@%s", id, node)
	}
	return tk
}

// TestApplyRefuses: events that do not apply change nothing.
func TestApplyRefuses(t *testing.T) {
	g := parseGraph(t, "a: x; y<-x\nb: z")
	s := play(t, g, Options{}, "d a x")
	before := statuses(s)
	for _, ev := range []Event{
		{Kind: KindFinish, Node: "a", Task: "x", Attempt: 2, Result: "succeeded"}, // another attempt
		{Kind: KindFinish, Node: "a", Task: "y", Attempt: 1, Result: "succeeded"}, // not running
		{Kind: KindFinish, Node: "b", Task: "z", Attempt: 1, Result: "succeeded"},
		{Kind: KindFinish, Node: "a", Task: "x", Attempt: 1, Result: "maybe"},
		{Kind: KindDispatch, Node: "a", Task: "y", Attempt: 1}, // the node is busy
		{Kind: KindDispatch, Node: "b", Task: "nope", Attempt: 1},
		{Kind: KindLost, Node: "b"}, // nothing running
		{Kind: KindFinish, Node: "zz", Task: "x"},
		{Kind: "what"},
	} {
		if err := s.Apply(ev); err == nil {
			t.Errorf("%+v applied", ev)
		}
	}
	if statuses(s) != before || s.Seq != 1 {
		t.Errorf("refused events changed the state: %s (seq %d)", statuses(s), s.Seq)
	}
}

// TestGraphRules: requirements on tasks nobody has are dropped, a cycle is
// refused, groups and criticality as astute sets them.
func TestGraphRules(t *testing.T) {
	g := parseGraph(t, "a: x<-gone@b,nope\nb: y\nc: z\ngroups: soft=1:a hard=0:b")
	if g.Dangling != 2 || len(g.Requires(0)) != 0 {
		t.Errorf("dangling %d, requires %v", g.Dangling, g.Requires(0))
	}
	crit := map[string]bool{}
	for _, n := range g.Nodes {
		crit[n.Name] = n.Critical
	}
	if crit["a"] || !crit["b"] || !crit["c"] {
		t.Errorf("critical: %v, want b (tolerance 0) and c (no group)", crit)
	}
	if _, err := NewGraph(specGraph(t, "a: x<-y; y<-x")); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("a cycle: %v", err)
	}
}
