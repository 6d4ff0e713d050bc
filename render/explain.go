package render

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// Explanation says why each task of a node's graph is there (`fuelsync explain`).
type Explanation struct {
	Cluster string            `json:"cluster"`
	Node    string            `json:"node"`
	Graph   string            `json:"graph"`
	Roles   []string          `json:"roles"`
	Tags    []string          `json:"tags"`
	Tasks   []TaskExplanation `json:"tasks"`
}

// TaskExplanation is the provenance of one task on a node.
type TaskExplanation struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Position int    `json:"position"`
	// Definition is where the winning definition is written and by which layer.
	Definition Where `json:"definition"`
	// Overrode are the lower layers' definitions it replaced, wholesale.
	Overrode []Where `json:"overrode,omitempty"`
	// Via lists what put the task on the node.
	Via []Via `json:"via"`
	// Condition is a legacy condition and its value (skipped when false).
	Condition      string `json:"condition,omitempty"`
	ConditionValue *bool  `json:"condition_value,omitempty"`
	// Defaults are the values nailgun adds to a plugin's task (parameters.cwd), with
	// where each comes from.
	Defaults []DefaultExplanation `json:"defaults,omitempty"`
	Requires []EdgeExplanation    `json:"requires,omitempty"`
}

// DefaultExplanation is a value the task's definition does not write, added as
// nailgun adds it.
type DefaultExplanation struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	From  string `json:"from"`
	File  string `json:"file,omitempty"`
	Line  int    `json:"line,omitempty"`
}

// Where is a definition's layer and position.
type Where struct {
	Layer string `json:"layer"`
	File  string `json:"file"`
	Line  int    `json:"line"`
}

// EdgeExplanation is one dependency and the entry it comes from.
type EdgeExplanation struct {
	Task   string `json:"task"`
	Node   string `json:"node"`
	Origin string `json:"origin"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
}

func where(d *TaskDef) Where {
	return Where{Layer: d.Layer, File: d.Task.Range.Filename, Line: d.Task.Range.Start.Line}
}

// nodeGraph finds a graph type and a node of a rendered cluster.
func (r *Rendered) nodeGraph(graph, node string) (*Graph, *NodeGraph, error) {
	g := r.Graph(graph)
	if g == nil {
		var types []string
		for _, x := range r.Graphs {
			types = append(types, x.Type)
		}
		return nil, nil, fmt.Errorf("cluster %s has no graph %q; graphs: %s", r.Model.Cluster.Name, graph, strings.Join(types, ", "))
	}
	ng := g.byNode[node]
	if ng == nil {
		var names []string
		for _, n := range r.Model.Cluster.Nodes {
			names = append(names, n.Name)
		}
		return nil, nil, fmt.Errorf("cluster %s has no node %q; nodes: %s (and the pseudo nodes master, sync)", r.Model.Cluster.Name, node, strings.Join(names, ", "))
	}
	return g, ng, nil
}

// Explain returns the provenance of every task of node in graph; with task, of that
// task only.
func (r *Rendered) Explain(graph, node, task string) (*Explanation, error) {
	_, ng, err := r.nodeGraph(graph, node)
	if err != nil {
		return nil, err
	}
	ex := &Explanation{Cluster: r.Model.Cluster.Name, Node: node, Graph: graph, Roles: []string{}, Tags: []string{}}
	if ng.Tags != nil {
		ex.Roles, ex.Tags = ng.Tags.Roles, ng.Tags.Resolution
	}
	for i, pt := range ng.Tasks {
		if task != "" && pt.ID() != task {
			continue
		}
		te := TaskExplanation{ID: pt.ID(), Type: pt.Type(), Position: i + 1, Definition: where(pt.Def), Via: pt.Via()}
		for _, o := range pt.Def.Overrode {
			te.Overrode = append(te.Overrode, where(o))
		}
		for _, d := range pt.Def.Defaults {
			te.Defaults = append(te.Defaults, DefaultExplanation{Key: d.Key, Value: d.Value, From: d.Reason, File: d.Range.Filename, Line: d.Range.Start.Line})
		}
		if c := pt.Def.Task.Data.Get("condition"); c != nil && c.Kind == loader.KindString {
			te.Condition, te.ConditionValue = c.Text, pt.Condition()
		}
		for e := range pt.Requires() {
			te.Requires = append(te.Requires, EdgeExplanation{Task: e.Task(), Node: e.Node(), Origin: e.Describe(), File: e.Range.Filename, Line: e.Range.Start.Line})
		}
		ex.Tasks = append(ex.Tasks, te)
	}
	if task != "" && len(ex.Tasks) == 0 {
		return nil, fmt.Errorf("task %s is not on node %s in graph %s; run explain --why-not %s", task, node, graph, task)
	}
	return ex, nil
}

// WhyNot says why task is not on node in graph: it exists nowhere, it has no
// selector (an override without one), it is a group or a stage, or no selector
// entry matches the node's tags. When the task is on the node, it says so (and
// whether a condition skips it). A task the graph does not define is an error,
// with the closest task ID as a suggestion.
// File names are prefixed with prefix (the CLI's --repo).
func (r *Rendered) WhyNot(graph, node, task, prefix string) ([]string, error) {
	at := func(rg hcl.Range) string { return prefix + at(rg) }
	g, ng, err := r.nodeGraph(graph, node)
	if err != nil {
		return nil, err
	}
	if pt := ng.Task(task); pt != nil {
		if pt.Type() == "skipped" && pt.Condition() != nil && !*pt.Condition() {
			return []string{fmt.Sprintf("%s is on %s, skipped: its condition %q is false (%s)", task, node, pt.Def.Task.Data.Get("condition").Text, at(pt.Def.Task.Data.Get("condition").Range))}, nil
		}
		return []string{fmt.Sprintf("%s is on %s (position %d of %d); see explain %s", task, node, indexOf(ng.Tasks, pt)+1, len(ng.Tasks), task)}, nil
	}
	d := g.defs[task]
	if d == nil {
		ids := make([]string, 0, len(g.defs))
		for id := range g.defs {
			ids = append(ids, id)
		}
		msg := fmt.Sprintf("no task %s in graph %s of cluster %s", task, graph, r.Model.Cluster.Name)
		if best := loader.Suggest(task, ids); best != "" {
			msg += fmt.Sprintf("; did you mean %s?", best)
		}
		return nil, errors.New(msg)
	}
	t := d.Task
	desc := fmt.Sprintf("%s is defined by the %s at %s", task, d.Layer, at(t.Range))
	for _, o := range d.Overrode {
		desc += fmt.Sprintf(", overriding the %s's definition at %s", o.Layer, at(o.Task.Range))
	}
	out := []string{desc}
	switch t.Type {
	case "group":
		return append(out, "it is a group: groups are not emitted; their tasks: are placed on the group's nodes"), nil
	case "stage":
		return append(out, "it is a stage: stages run on the sync node only"), nil
	}
	key, sel := r.Model.selectorOf(t)
	if sel == nil {
		return append(out, "it has no selector (tags, roles, role or groups), so it runs on no node"), nil
	}
	if sel.IsMap() {
		return append(out, fmt.Sprintf("its %s is a yaql expression, evaluated by the deployer", key)), nil
	}
	tags := []string{}
	if ng.Tags != nil {
		tags = ng.Tags.Resolution
	}
	out = append(out, fmt.Sprintf("no entry of its %s %s matches a tag of %s: %s", key, selectorText(sel), node, strings.Join(tags, ", ")))
	for _, grp := range g.groupsListing(task) {
		out = append(out, fmt.Sprintf("group %s lists it, but the group does not select %s", grp, node))
	}
	return out, nil
}

func indexOf(list []*PlacedTask, pt *PlacedTask) int {
	for i, x := range list {
		if x == pt {
			return i
		}
	}
	return -1
}

func selectorText(v *loader.Value) string {
	if names, ok := v.Strings(); ok {
		if v.Kind == loader.KindString {
			return fmt.Sprintf("%q", v.Text)
		}
		return "[" + strings.Join(names, ", ") + "]"
	}
	return fmt.Sprint(v.Interface())
}
