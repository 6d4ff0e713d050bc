package diff

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MassNodes is the number of changed nodes above which a change set is
// written by class of nodes across its clusters (Classes), not node group by
// node group in each cluster: the plan of a release change on 100,000 nodes
// is a few lines a class, with counts. JSON keeps every node.
const MassNodes = 50

// Mass reports whether the change set is written by class of nodes.
func (cs *ChangeSet) Mass() bool {
	n := 0
	for _, cc := range cs.Clusters {
		for _, nc := range cc.Nodes {
			if !nc.Pseudo {
				n++
			}
		}
	}
	return n > MassNodes
}

// ClassChange is the nodes of one class (the same roles; master or sync)
// that have the same change, in one cluster or several.
type ClassChange struct {
	// Roles are the class's roles; Pseudo the pseudo node's name (master,
	// sync) for those.
	Roles  []string
	Pseudo string
	// First is the first node's name; Nodes their number.
	First    string
	Nodes    int
	Clusters []string // in the change set's order
	// Change is the first node's change, standing for all of them.
	Change *NodeChange
}

// Title is "2,000 nodes of class compute+controller in 4 clusters: c-01, …".
func (k *ClassChange) Title() string { return k.Who() + " in " + k.Where() }

// Who is "2,000 nodes of class compute+controller", the pseudo node, or the
// node of a class of one: "node-3 (compute, controller)".
func (k *ClassChange) Who() string {
	switch {
	case k.Pseudo != "":
		return k.Pseudo
	case k.Nodes == 1 && len(k.Roles) > 0:
		return k.First + " (" + strings.Join(k.Roles, ", ") + ")"
	case k.Nodes == 1:
		return k.First
	case len(k.Roles) == 0:
		return fmt.Sprintf("%s %s without roles", count(k.Nodes), plural(k.Nodes, "node", "nodes"))
	}
	return fmt.Sprintf("%s %s of class %s", count(k.Nodes), plural(k.Nodes, "node", "nodes"), strings.Join(k.Roles, "+"))
}

// Where is "4 clusters: c-01, c-02, …, c-40" (the first three and the
// last), or the cluster's name when there is one.
func (k *ClassChange) Where() string {
	if len(k.Clusters) == 1 {
		return k.Clusters[0]
	}
	names := k.Clusters
	if len(names) > 4 {
		names = append(slices.Clone(names[:3]), "…", names[len(names)-1])
	}
	return fmt.Sprintf("%s %s: %s", count(len(k.Clusters)), plural(len(k.Clusters), "cluster", "clusters"), strings.Join(names, ", "))
}

// MassChange is one change and the classes of nodes it is the change of.
type MassChange struct {
	Change  *NodeChange // the first node's, standing for all of them
	Nodes   int
	Classes []*ClassChange
}

// ByChange puts together the changed nodes of every cluster by change (the
// same but for the node names, as a cluster's groups) and, within a change,
// by class of nodes, in the order first met.
func (cs *ChangeSet) ByChange() []*MassChange {
	var out []*MassChange
	changes := map[string]*MassChange{}
	classes := map[string]*ClassChange{}
	for _, cc := range cs.Clusters {
		roles := make(map[string][]string, len(cc.Nodes))
		for _, nc := range cc.Nodes {
			roles[nc.Node] = nc.Roles
		}
		for _, g := range cc.Groups {
			key := groupKey(g.Change)
			mc := changes[key]
			if mc == nil {
				mc = &MassChange{Change: g.Change}
				changes[key] = mc
				out = append(out, mc)
			}
			for _, n := range g.Nodes {
				k := &ClassChange{Roles: roles[n], First: n, Change: g.Change}
				if g.Change.Pseudo {
					k.Pseudo = n
				}
				ck := key + "\x00" + k.Pseudo + "\x00" + strings.Join(k.Roles, "\x00")
				if have := classes[ck]; have != nil {
					k = have
				} else {
					classes[ck] = k
					mc.Classes = append(mc.Classes, k)
				}
				mc.Nodes++
				k.Nodes++
				if l := len(k.Clusters); l == 0 || k.Clusters[l-1] != cc.Name {
					k.Clusters = append(k.Clusters, cc.Name)
				}
			}
		}
	}
	return out
}

// MassClassLines is the number of classes of nodes a change lists in the text
// of a mass change; JSON lists every node.
const MassClassLines = 30

// massText is Text of a mass change: the clusters by action, what changes in
// a cluster itself (plugins, registry), then each class of nodes with its
// change once.
func (cs *ChangeSet) massText(c Colors) string {
	var b strings.Builder
	nodes := cs.Summary.Deploy + cs.Summary.Delete
	fmt.Fprintf(&b, "%s %s in %s %s, by class of nodes (--format json lists every node):\n",
		count(nodes), plural(nodes, "node", "nodes"), count(len(cs.Clusters)), plural(len(cs.Clusters), "cluster", "clusters"))
	for _, a := range []Action{Create, Update, Delete} {
		var names []string
		for _, cc := range cs.Clusters {
			if cc.Action == a {
				names = append(names, esc(cc.Name))
			}
		}
		if n := len(names); n > 0 {
			if n > massClusterNames {
				names = append(names[:massClusterNames-1], fmt.Sprintf("… and %s more", count(n-massClusterNames+1)))
			}
			fmt.Fprintf(&b, "%s %s %s: %s\n", c.symbol(a), count(n), plural(n, "cluster", "clusters"), strings.Join(names, ", "))
		}
	}
	for _, cc := range cs.Clusters {
		if len(cc.PluginsEnabled)+len(cc.PluginsDisabled)+len(cc.Registry) == 0 && len(cc.Groups) > 0 {
			continue
		}
		fmt.Fprintf(&b, "  cluster %s\n", c.paint(c.Bold, esc(cc.Name)))
		writeClusterLines(&b, cc)
	}
	b.WriteByte('\n')
	for _, mc := range cs.ByChange() {
		var lines []string
		for i, k := range mc.Classes {
			if i == MassClassLines {
				lines = append(lines, fmt.Sprintf("… and %s more %s", count(len(mc.Classes)-i), plural(len(mc.Classes)-i, "class", "classes")))
				break
			}
			lines = append(lines, k.Title())
		}
		title := fmt.Sprintf("%s %s of %s %s", count(mc.Nodes), plural(mc.Nodes, "node", "nodes"), count(len(mc.Classes)), plural(len(mc.Classes), "class", "classes"))
		writeChange(&b, c, title, mc.Change, lines)
	}
	b.WriteByte('\n')
	b.WriteString(cs.Summary.Line())
	b.WriteByte('\n')
	return b.String()
}

// massClusterNames is the number of clusters a mass change names by action.
const massClusterNames = 10

// count is n with a comma every three digits: 100,000.
func count(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
