package diff

import (
	"fmt"
	"strings"

	"github.com/fuelsync/fuelsync/base/safetext"
)

// Colors are the ANSI sequences of the text output; the zero value prints none.
type Colors struct {
	Add, Change, Delete, Bold, Reset string
}

// ANSI are the plan's colours: green for what is added, yellow for what
// changes, red for what goes.
var ANSI = Colors{Add: "\x1b[32m", Change: "\x1b[33m", Delete: "\x1b[31m", Bold: "\x1b[1m", Reset: "\x1b[0m"}

func (c Colors) paint(color, s string) string {
	if color == "" {
		return s
	}
	return color + s + c.Reset
}

func (c Colors) symbol(a Action) string {
	switch a {
	case Create:
		return c.paint(c.Add, "+")
	case Delete:
		return c.paint(c.Delete, "-")
	}
	return c.paint(c.Change, "~")
}

// Line is the closing line of a plan.
func (s Summary) Line() string {
	return fmt.Sprintf("Plan: %s %s to deploy, %s to provision, %s to delete; %s %s added, %s removed, %s changed.",
		count(s.Deploy), plural(s.Deploy, "node", "nodes"), count(s.Provision), count(s.Delete),
		count(s.TasksAdded), plural(s.TasksAdded, "task", "tasks"), count(s.TasksRemoved), count(s.TasksChanged))
}

// Text is the change set for a terminal: per cluster, each group of nodes with
// the same change, its action, its causes with the tasks each brought or took
// away, and the changes no cause accounts for; then the summary line. Names
// from the repository are escaped (safetext.Line): none can break a line or
// send the terminal an escape sequence.
func (cs *ChangeSet) Text(c Colors) string {
	var b strings.Builder
	if cs.Empty() {
		b.WriteString("No changes: the rendered artifacts are the same.\n")
		return b.String()
	}
	if cs.Mass() {
		return cs.massText(c)
	}
	for _, cc := range cs.Clusters {
		fmt.Fprintf(&b, "%s cluster %s\n", c.symbol(cc.Action), c.paint(c.Bold, esc(cc.Name)))
		writeClusterLines(&b, cc)
		for _, g := range cc.Groups {
			writeChange(&b, c, g.Title(), g.Change, nil)
		}
		b.WriteByte('\n')
	}
	b.WriteString(cs.Summary.Line())
	b.WriteByte('\n')
	return b.String()
}

// writeClusterLines writes what changes in cluster cc itself: its plugins,
// its registry, or the files that changed when no node did.
func writeClusterLines(b *strings.Builder, cc *ClusterChange) {
	for _, p := range cc.PluginsEnabled {
		fmt.Fprintf(b, "    plugin %s enabled\n", esc(p))
	}
	for _, p := range cc.PluginsDisabled {
		fmt.Fprintf(b, "    plugin %s disabled\n", esc(p))
	}
	for _, r := range cc.Registry {
		fmt.Fprintf(b, "    registry %s\n", esc(r))
	}
	if len(cc.Groups)+len(cc.PluginsEnabled)+len(cc.PluginsDisabled)+len(cc.Registry) == 0 {
		fmt.Fprintf(b, "    no node changes; changed: %s\n", esc(strings.Join(cc.Files, ", ")))
	}
}

// Title is "node-2 (controller)" or "4 nodes (compute, controller): node-2, …".
func (g *Group) Title() string {
	roles := ""
	if len(g.Roles) > 0 {
		roles = " (" + strings.Join(g.Roles, ", ") + ")"
	}
	if len(g.Nodes) == 1 {
		return g.Nodes[0] + roles
	}
	return fmt.Sprintf("%d nodes%s: %s", len(g.Nodes), roles, strings.Join(g.Nodes, ", "))
}

// ActionText says what applying does to the nodes.
func (nc *NodeChange) ActionText() string {
	switch nc.Action {
	case Create:
		return "provision + deploy"
	case Delete:
		return "delete"
	}
	return "deploy"
}

// writeChange writes the change nc of the nodes title names, then the lines
// of members (the classes of nodes of a mass change).
func writeChange(b *strings.Builder, c Colors, title string, nc *NodeChange, members []string) {
	fmt.Fprintf(b, "  %s %s: %s\n", c.symbol(nc.Action), esc(title), nc.ActionText())
	defer func() {
		for _, m := range members {
			fmt.Fprintf(b, "      · %s\n", esc(m))
		}
	}()
	accounted := map[string]bool{}
	for _, cause := range nc.Causes {
		fmt.Fprintf(b, "      %s", esc(cause.Text()))
		var items []string
		for _, id := range cause.Added {
			items = append(items, c.paint(c.Add, "+ "+esc(id)))
			accounted["+"+id] = true
		}
		for _, id := range cause.Removed {
			items = append(items, c.paint(c.Delete, "- "+esc(id)))
			accounted["-"+id] = true
		}
		for _, id := range cause.Changed {
			items = append(items, c.paint(c.Change, "~ "+esc(id)))
			accounted["~"+id] = true
		}
		if len(items) > 0 {
			b.WriteString(": " + strings.Join(items, ", "))
		}
		b.WriteByte('\n')
	}
	if nc.Action != Update {
		// A new node runs its provision and default graphs, a removed one its
		// deletion graph: their sizes tell what applying does.
		for _, run := range nc.Run {
			for _, gc := range nc.Graphs {
				if gc.Graph == run {
					n := len(gc.Added) + len(gc.Removed)
					fmt.Fprintf(b, "      %s graph: %d %s\n", esc(gc.Graph), n, plural(n, "task", "tasks"))
				}
			}
		}
		return
	}
	for _, gc := range nc.Graphs {
		var items []string
		for _, id := range gc.Added {
			if !accounted["+"+taskRef(gc.Graph, id)] {
				items = append(items, c.paint(c.Add, "+ "+esc(id)))
			}
		}
		for _, id := range gc.Removed {
			if !accounted["-"+taskRef(gc.Graph, id)] {
				items = append(items, c.paint(c.Delete, "- "+esc(id)))
			}
		}
		for _, tc := range gc.Changed {
			if !accounted["~"+taskRef(gc.Graph, tc.ID)] {
				items = append(items, c.paint(c.Change, "~ "+esc(tc.ID))+" ("+esc(strings.Join(tc.Fields, ", "))+")")
			}
		}
		if len(items) > 0 {
			fmt.Fprintf(b, "      %s graph: %s\n", esc(gc.Graph), strings.Join(items, ", "))
		}
	}
}

// esc escapes a name from the repository for one line of text.
func esc(s string) string { return safetext.Line(s) }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Text says what the cause is, in a few words.
func (c *Cause) Text() string {
	src := ""
	if c.Source != "" {
		src = " (" + c.Source + ")"
	}
	switch c.Kind {
	case "new_node":
		return "new node, roles " + c.Subject
	case "node_removed":
		return "node removed, roles " + c.Subject
	case "role_added":
		return "role " + c.Subject + " added"
	case "role_removed":
		return "role " + c.Subject + " removed"
	case "tag_assigned":
		return "tag " + c.Subject + " assigned"
	case "tag_unassigned":
		return "tag " + c.Subject + " unassigned"
	case "primary_gained":
		return "now primary for " + c.Subject
	case "primary_lost":
		return "no longer primary for " + c.Subject
	case "plugin_enabled":
		return "plugin " + c.Subject + " enabled"
	case "plugin_disabled":
		return "plugin " + c.Subject + " disabled"
	case "task_edited":
		return "task " + c.Subject + " edited" + src
	case "task_defined":
		return "task " + c.Subject + " defined" + src
	case "task_undefined":
		return "task " + c.Subject + " no longer defined" + src
	case "dependencies":
		return "dependencies changed"
	case CauseUnverified:
		return c.Subject
	}
	return c.Kind + " " + c.Subject
}
