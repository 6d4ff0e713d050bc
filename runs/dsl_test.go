package runs

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/render"
)

// The tests describe graphs and runs in a small language.
//
// A graph is one line per node, "name: task; task; ...", and optionally a
// line "groups: name=tolerance:node,node name=...". A task is
//
//	id[/type][*limit][<-req,req]
//
// where type defaults to puppet, limit is 1 (one_by_one), pN (parallel,
// amount N) or py (parallel, amount a yaql expression), and a requirement
// is "task" (same node) or "task@node". The sync node is called sync.

func parseGraph(t *testing.T, spec string) *Graph {
	t.Helper()
	g, err := NewGraph(specGraph(t, spec))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func specGraph(t *testing.T, spec string) *render.ClusterGraph {
	t.Helper()
	cg := &render.ClusterGraph{Cluster: "c", Graph: "default"}
	id := 0
	for _, line := range strings.Split(strings.TrimSpace(spec), "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			t.Fatalf("line %q: no colon", line)
		}
		if name == "groups" {
			for _, g := range strings.Fields(rest) {
				gname, def, _ := strings.Cut(g, "=")
				tol, nodes, _ := strings.Cut(def, ":")
				var n int
				fmt.Sscan(tol, &n)
				cg.Groups = append(cg.Groups, render.FaultToleranceGroup{Name: gname, FaultTolerance: n, Nodes: strings.Split(nodes, ",")})
			}
			continue
		}
		id++
		node := render.GraphNode{Name: name, ID: id}
		for _, tok := range strings.Split(rest, ";") {
			if tok = strings.TrimSpace(tok); tok != "" {
				node.Tasks = append(node.Tasks, parseTask(tok, name))
			}
		}
		cg.Nodes = append(cg.Nodes, node)
	}
	return cg
}

func parseTask(tok, node string) render.GraphTask {
	head, reqs, _ := strings.Cut(tok, "<-")
	head, limit, _ := strings.Cut(head, "*")
	id, typ, _ := strings.Cut(head, "/")
	if typ == "" {
		typ = "puppet"
	}
	params := map[string]any{}
	switch {
	case limit == "1":
		params["strategy"] = map[string]any{"type": "one_by_one"}
	case limit == "py":
		params["strategy"] = map[string]any{"type": "parallel", "amount": map[string]any{"yaql_exp": "switch(true => 6)"}}
	case strings.HasPrefix(limit, "p"):
		var n int
		fmt.Sscan(limit[1:], &n)
		params["strategy"] = map[string]any{"type": "parallel", "amount": n}
	}
	gt := render.GraphTask{ID: strings.TrimSpace(id), Def: render.NewDeployDef(typ, map[string]any{"parameters": params})}
	for _, r := range strings.Split(reqs, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		task, on, ok := strings.Cut(r, "@")
		if !ok {
			on = node
		}
		gt.Requires = append(gt.Requires, render.Requirement{Task: task, Node: on})
	}
	return gt
}

// play applies a script to a new run of g and returns the state. A step is
//
//	d NODE TASK   dispatch: NODE's next task must be TASK ("-": none)
//	ok|fail|skip NODE TASK [message]   NODE's agent reports TASK
//	lost NODE     NODE's agent went silent
//	stop [reason] an operator stops the run
//
// Each step is one millisecond after the one before.
func play(t *testing.T, g *Graph, opts Options, script ...string) *State {
	t.Helper()
	s, err := New(g, opts, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range script {
		at := int64(i + 2)
		f := strings.Fields(step)
		var ev Event
		switch f[0] {
		case "d":
			ni, ok := g.Node(f[1])
			if !ok {
				t.Fatalf("step %q: no node %s", step, f[1])
			}
			d, ok := s.Dispatch(ni, at)
			got := "-"
			if ok {
				got = d.Task
			}
			if got != f[2] {
				t.Fatalf("step %d %q: node %s was given %s\n%s", i+1, step, f[1], got, s.Dump())
			}
			if !ok {
				continue
			}
			ev = d
		case "ok", "fail", "skip":
			res := map[string]string{"ok": "succeeded", "fail": "failed", "skip": "skipped"}[f[0]]
			tk, _ := g.Task(f[1], f[2])
			ev = Event{Kind: KindFinish, At: at, Node: f[1], Task: f[2], Result: res, Attempt: s.tasks[tk].attempt,
				Message: strings.Join(f[3:], " ")}
		case "lost":
			ev = Event{Kind: KindLost, At: at, Node: f[1]}
		case "stop":
			ev = Event{Kind: KindStop, At: at, Message: strings.Join(f[1:], " ")}
		default:
			t.Fatalf("step %q: unknown", step)
		}
		if err := s.Apply(ev); err != nil {
			t.Fatalf("step %d %q: %v\n%s", i+1, step, err, s.Dump())
		}
	}
	return s
}

// Dump lists every task's status (tests print it when they fail).
func (s *State) Dump() string {
	var b strings.Builder
	fmt.Fprintf(&b, "phase %s, reason %q, failed %v\n", s.Phase, s.Reason, s.Failed)
	for t := range s.tasks {
		v := s.Task(int32(t))
		fmt.Fprintf(&b, "  %s: %s", s.G.Name(int32(t)), v.Status)
		if v.Status == NotRun {
			b.WriteString(" (not run)")
		}
		if v.Outside {
			b.WriteString(" (outside)")
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// statuses is "task@node=status ..." of every task, sorted (NotRun is
// "notrun"), for comparison.
func statuses(s *State) string {
	var out []string
	for t := range s.tasks {
		st := s.tasks[t].status.String()
		if s.tasks[t].status == NotRun {
			st = "notrun"
		}
		out = append(out, s.G.Name(int32(t))+"="+st)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}
