package diff

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/fuelsync/fuelsync/render"
)

// explain works out the causes of a node's change: its roles and tags (and the
// tasks they brought or took away), its primary tags, the cluster's plugins, and
// the task definitions. A side without its render (a plan against an applied set
// whose revision cannot be read again) gives fewer causes: tasks it cannot account
// for stay listed under their graph only.
func explain(nc *NodeChange, cc *ClusterChange, ov, nv *sideView) {
	nx := &nodeCauses{nc: nc, ov: ov, nv: nv, causes: &causeList{}}
	causes := nx.causes
	switch nc.Action {
	case Create:
		causes.get("new_node", strings.Join(nc.Roles, ", "), "")
		nc.Causes = causes.list
		return
	case Delete:
		causes.get("node_removed", strings.Join(nc.Roles, ", "), "")
		nc.Causes = causes.list
		return
	}
	for _, r := range nc.RolesAdded {
		causes.get("role_added", r, "")
	}
	for _, r := range nc.RolesRemoved {
		causes.get("role_removed", r, "")
	}
	for _, t := range nc.TagsAdded {
		nx.tag(t, true)
	}
	for _, t := range nc.TagsRemoved {
		nx.tag(t, false)
	}
	for _, gc := range nc.Graphs {
		nx.graph(gc, cc)
	}
	nc.Causes = causes.list
}

// nodeCauses is the work of explain on one node: the change, its two sides and the
// causes found so far.
type nodeCauses struct {
	nc     *NodeChange
	ov, nv *sideView
	causes *causeList
}

// tag is the cause of a tag's appearance (added) or disappearance: becoming (or no
// longer being) primary for it, a role added (removed) that brings it, else the tag
// assigned (unassigned).
func (nx *nodeCauses) tag(tag string, added bool) *Cause {
	nc, causes := nx.nc, nx.causes
	kind, side, roles := "tag_assigned", nx.nv, nc.RolesAdded
	if !added {
		kind, side, roles = "tag_unassigned", nx.ov, nc.RolesRemoved
	}
	// Becoming primary for X replaces tag X by primary-X, and the reverse.
	if base, ok := strings.CutPrefix(tag, "primary-"); ok && isPrimary(side, nc.Node, base) {
		if added {
			return causes.get("primary_gained", base, "")
		}
		return causes.get("primary_lost", base, "")
	}
	if !added && slices.Contains(nc.TagsAdded, "primary-"+tag) {
		return causes.get("primary_gained", tag, "")
	}
	if added && slices.Contains(nc.TagsRemoved, "primary-"+tag) {
		return causes.get("primary_lost", tag, "")
	}
	for _, src := range tagSources(side, nc.Node, tag) {
		if r, ok := strings.CutPrefix(src, "role "); ok && slices.Contains(roles, r) {
			return nx.role(r, added)
		}
		if src == "role name" && slices.Contains(roles, tag) {
			return nx.role(tag, added)
		}
	}
	if slices.Contains(roles, tag) {
		return nx.role(tag, added)
	}
	return causes.get(kind, tag, "")
}

// role is the cause role added (or removed).
func (nx *nodeCauses) role(role string, added bool) *Cause {
	return nx.causes.get(map[bool]string{true: "role_added", false: "role_removed"}[added], role, "")
}

// graph files the tasks of one graph's change under their causes: a task added
// (removed) under why it was (taskCause), a task whose requires alone changed under
// dependencies, another changed task under its edit.
func (nx *nodeCauses) graph(gc *GraphChange, cc *ClusterChange) {
	nc, ov, nv, causes := nx.nc, nx.ov, nx.nv, nx.causes
	for _, id := range gc.Added {
		c := taskCause(nv, ov, cc.PluginsEnabled, nc.Node, gc.Graph, id, nc.TagsAdded, true, nx.tag, causes)
		if c != nil {
			c.Added = append(c.Added, taskRef(gc.Graph, id))
		}
	}
	for _, id := range gc.Removed {
		c := taskCause(ov, nv, cc.PluginsDisabled, nc.Node, gc.Graph, id, nc.TagsRemoved, false, nx.tag, causes)
		if c != nil {
			c.Removed = append(c.Removed, taskRef(gc.Graph, id))
		}
	}
	for _, tc := range gc.Changed {
		var c *Cause
		if len(tc.Fields) == 1 && tc.Fields[0] == "requires" {
			c = causes.get("dependencies", "", "")
		} else {
			c = causes.get("task_edited", tc.ID, definitionSource(nv, gc.Graph, tc.ID))
		}
		c.Changed = append(c.Changed, taskRef(gc.Graph, tc.ID))
	}
}

// taskCause finds why task id was added to (or removed from) the node: here is the
// side that has the task on the node, there the other one. The tag that selects it
// here, when that tag was added (removed); a plugin enabled (disabled); else the
// definition, when it is known.
func taskCause(here, there *sideView, plugins []string, node, graph, id string, tags []string, added bool,
	tagCause func(string, bool) *Cause, causes *causeList) *Cause {
	pt := placed(here, graph, node, id)
	if pt == nil {
		// The side that had the task is not rendered (a plan against an applied
		// working tree): a selector entry of the other side's definition naming a
		// tag the node lost (gained) is the likely cause.
		if tag, ok := selectedBy(definition(there, graph, id), tags); ok {
			return tagCause(tag, added)
		}
		return nil
	}
	for _, v := range pt.Via() {
		if v.Tag != "" && slices.Contains(tags, v.Tag) {
			return tagCause(v.Tag, added)
		}
		// A group lists the task (its tasks:): the tag that selects the group.
		if v.Selector == "group" {
			if tag, ok := selectedBy(definition(here, graph, v.Item), tags); ok {
				return tagCause(tag, added)
			}
		}
	}
	if p := pt.Def.Plugin; p != nil && slices.Contains(plugins, p.Name) {
		return causes.get(map[bool]string{true: "plugin_enabled", false: "plugin_disabled"}[added], p.Name, "")
	}
	if there.rendered() == nil {
		return nil
	}
	g := there.rendered().Graph(graph)
	if g == nil || g.Definition(id) == nil {
		kind := map[bool]string{true: "task_defined", false: "task_undefined"}[added]
		return causes.get(kind, id, sourceOf(pt.Def))
	}
	// Defined on both sides: its selector (or its groups) changed.
	return causes.get("task_edited", id, definitionSource(map[bool]*sideView{true: here, false: there}[added], graph, id))
}

// definition returns the definition of task id in the side's render, or nil.
func definition(v *sideView, graph, id string) *render.TaskDef {
	if v.rendered() == nil {
		return nil
	}
	if g := v.rendered().Graph(graph); g != nil {
		return g.Definition(id)
	}
	return nil
}

// selectedBy returns the first entry of d's node selector (tags, roles or role)
// that is one of tags.
func selectedBy(d *render.TaskDef, tags []string) (string, bool) {
	if d == nil {
		return "", false
	}
	for _, key := range []string{"tags", "roles", "role"} {
		items, _ := d.Task.Data.Get(key).Strings()
		for _, it := range items {
			if slices.Contains(tags, it) {
				return it, true
			}
		}
	}
	return "", false
}

// placed returns the task on the node in the side's render, or nil.
func placed(v *sideView, graph, node, id string) *render.PlacedTask {
	if v.rendered() == nil {
		return nil
	}
	g := v.rendered().Graph(graph)
	if g == nil || g.Node(node) == nil {
		return nil
	}
	return g.Node(node).Task(id)
}

func definitionSource(v *sideView, graph, id string) string {
	if v.rendered() == nil {
		return ""
	}
	if g := v.rendered().Graph(graph); g != nil {
		return sourceOf(g.Definition(id))
	}
	return ""
}

func sourceOf(d *render.TaskDef) string {
	if d == nil || d.Task.Range.Filename == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", d.Task.Range.Filename, d.Task.Range.Start.Line)
}

// tagSources says where the node's tag comes from on a side (render known).
func tagSources(v *sideView, node, tag string) []string {
	if v.rendered() == nil {
		return nil
	}
	nt := v.rendered().Model.NodeTags[node]
	if nt == nil {
		return nil
	}
	return nt.Sources[tag]
}

// isPrimary reports whether the side's cluster.yaml lists the node as primary for
// tag.
func isPrimary(v *sideView, node, tag string) bool {
	n := v.node(node)
	return n != nil && slices.Contains(n.Primary, tag)
}

// causeList keeps a node's causes in the order found, one per kind and subject.
type causeList struct{ list []*Cause }

func (l *causeList) get(kind, subject, source string) *Cause {
	for _, c := range l.list {
		if c.Kind == kind && c.Subject == subject {
			return c
		}
	}
	c := &Cause{Kind: kind, Subject: subject, Source: source}
	l.list = append(l.list, c)
	return c
}

// group puts together the nodes whose changes are the same but for the node names
// (in dependencies, task@node) and their roles.
func group(nodes []*NodeChange) []*Group {
	var groups []*Group
	keys := map[string]*Group{}
	for _, nc := range nodes {
		key := groupKey(nc)
		if g := keys[key]; g != nil {
			g.Nodes = append(g.Nodes, nc.Node)
			g.Roles = union(g.Roles, nc.Roles)
			continue
		}
		g := &Group{Nodes: []string{nc.Node}, Roles: union(nil, nc.Roles), Change: nc}
		keys[key] = g
		groups = append(groups, g)
	}
	return groups
}

func groupKey(nc *NodeChange) string {
	c := *nc
	c.Node, c.Roles = "", nil
	graphs := make([]*GraphChange, len(nc.Graphs))
	for i, g := range nc.Graphs {
		gc := *g
		gc.Changed = make([]*TaskChange, len(g.Changed))
		for j, tc := range g.Changed {
			t := *tc
			t.RequiresAdded, t.RequiresRemoved = nil, nil // they name nodes
			gc.Changed[j] = &t
		}
		graphs[i] = &gc
	}
	c.Graphs = graphs
	data, _ := json.Marshal(&c)
	return string(data)
}
