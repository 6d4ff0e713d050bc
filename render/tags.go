package render

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// AppliedState is what the applied state says about a cluster: which node
// is primary for a tag, and which nodes are deployed. Primary tags are sticky through
// it. A nil AppliedState is an empty state: nothing deployed, no primaries yet.
type AppliedState interface {
	Primary(cluster, tag string) (node string, ok bool)
	Deployed(cluster, node string) bool
}

// NodeTags are a node's tags and where each comes from.
type NodeTags struct {
	Node *loader.Node
	// Roles are the node's known roles, in the order written.
	Roles []string
	// Tags are the node's tags before primary substitution, sorted.
	Tags []string
	// Sources maps each tag to where it comes from: "role <r>" (a role's tag),
	// "role name" (the implicit role tag), "assigned", "instance" (auto-assigned by
	// instances:).
	Sources map[string][]string
	// Primary lists the tags this node is primary for, sorted.
	Primary []string
	// Resolution are the tags task selectors match: Tags with each primary tag
	// replaced by primary-<tag> (with resolution: roles, the role names instead).
	Resolution []string
	// Instances maps each instance tag of the node to the nodes that share it.
	Instances map[string][]string
}

// instanceTag splits "<tag>:<n>" into the tag and n.
func instanceTag(s string) (string, int, bool) {
	base, num, ok := strings.Cut(s, ":")
	if !ok || base == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return "", 0, false
	}
	return base, n, true
}

// resolveTags computes every node's tags: role tags, implicit role tags, assign and
// unassign, automatic instances, and primary tags (ha only).
func (m *Model) resolveTags(state AppliedState) hcl.Diagnostics {
	var diags hcl.Diagnostics
	c := m.Cluster
	m.NodeTags = map[string]*NodeTags{}
	declared := map[string]bool{} // tags the cluster's roles and spec declare
	for _, t := range c.Tags {
		declared[t.Name] = true
	}
	unassignedAt := map[string]hcl.Range{}
	for _, n := range c.Nodes {
		nt, ds := m.nodeTags(n, declared)
		diags = append(diags, ds...)
		diags = append(diags, m.unassign(nt, unassignedAt)...)
		m.NodeTags[n.Name] = nt
		m.nodeOrder = append(m.nodeOrder, nt)
	}
	sort.SliceStable(m.nodeOrder, func(i, j int) bool { return m.nodeOrder[i].Node.ID < m.nodeOrder[j].Node.ID })
	diags = append(diags, m.addInstances()...)
	m.sortTags()
	if c.Mode != "multinode" {
		m.pickPrimaries(state)
	}
	m.resolveNames()
	return append(diags, m.checkCarried(declared, unassignedAt)...)
}

// nodeTags gives node n its tags from its roles (each role's tags and its name)
// and its assign: entries, each with where it comes from. The roles' tags are
// added to declared.
func (m *Model) nodeTags(n *loader.Node, declared map[string]bool) (*NodeTags, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	nt := &NodeTags{Node: n, Sources: map[string][]string{}, Instances: map[string][]string{}}
	add := func(tag, source string) {
		if !slices.Contains(nt.Sources[tag], source) {
			nt.Sources[tag] = append(nt.Sources[tag], source)
		}
	}
	for _, ref := range n.Roles {
		r := m.Role(ref.Name)
		if r == nil || slices.Contains(nt.Roles, r.Name) {
			continue
		}
		nt.Roles = append(nt.Roles, r.Name)
		for _, t := range r.Tags {
			add(t, "role "+r.Name)
			declared[t] = true
		}
		add(r.Name, "role name")
	}
	for _, ref := range n.Assign {
		if !m.knownTag(ref.Name) {
			diags = append(diags, m.unknownTag(ref, n))
			continue
		}
		add(ref.Name, "assigned")
	}
	return nt, diags
}

// unassign takes the node's unassign: entries off its tags, but a role's name,
// which stays; an entry the node does not carry changes nothing (a warning each).
// unassignedAt keeps where each tag was first unassigned.
func (m *Model) unassign(nt *NodeTags, unassignedAt map[string]hcl.Range) hcl.Diagnostics {
	var diags hcl.Diagnostics
	c, n := m.Cluster, nt.Node
	for _, ref := range n.Unassign {
		srcs, ok := nt.Sources[ref.Name]
		switch {
		case !ok:
			diags = append(diags, warnAt(ref.Range, "cluster %s: node %s: tag %q is not on the node, so unassigning it changes nothing", c.Name, n.Name, ref.Name))
		case slices.Contains(srcs, "role name"):
			diags = append(diags, withDetail(warnAt(ref.Range, "cluster %s: node %s: %q is the name of one of its roles and stays a tag of the node", c.Name, n.Name, ref.Name),
				"A role's name is always one of its node's tags; unassign the role's other tags, or remove the role."))
		default:
			delete(nt.Sources, ref.Name)
			if _, seen := unassignedAt[ref.Name]; !seen {
				unassignedAt[ref.Name] = ref.Range
			}
		}
	}
	return diags
}

// addInstances adds the automatic instances: <tag>:1..<tag>:N round-robin over
// the carriers of <tag>, in node id order.
func (m *Model) addInstances() hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, in := range m.Cluster.Instances {
		carriers := m.carriers(in.Tag)
		if len(carriers) == 0 {
			diags = append(diags, warnAt(in.Range, "cluster %s: instances: no node carries tag %q", m.Cluster.Name, in.Tag))
			continue
		}
		for i, nt := range carriers {
			tag := fmt.Sprintf("%s:%d", in.Tag, i%in.Count+1)
			nt.Sources[tag] = append(nt.Sources[tag], "instance")
		}
	}
	return diags
}

// sortTags lists each node's tags, sorted, and the instance groups: for each
// instance tag of a node, the nodes that share it.
func (m *Model) sortTags() {
	for _, nt := range m.nodeTagList() {
		for t := range nt.Sources {
			nt.Tags = append(nt.Tags, t)
		}
		sort.Strings(nt.Tags)
	}
	groups := map[string][]string{}
	for _, nt := range m.nodeTagList() {
		for _, t := range nt.Tags {
			if _, _, ok := instanceTag(t); ok {
				groups[t] = append(groups[t], nt.Node.Name)
			}
		}
	}
	for _, nt := range m.nodeTagList() {
		for _, t := range nt.Tags {
			if g, ok := groups[t]; ok {
				nt.Instances[t] = g
			}
		}
	}
}

// pickPrimaries gives each tag with has_primary (ha only) its primary node: sticky
// through the applied state, else the lowest id among deployed carriers, else the
// lowest id.
func (m *Model) pickPrimaries(state AppliedState) {
	c := m.Cluster
	for _, tag := range m.primaryCandidates() {
		carriers := m.carriers(tag)
		var pick *NodeTags
		if state != nil {
			if name, ok := state.Primary(c.Name, tag); ok {
				for _, nt := range carriers {
					if nt.Node.Name == name {
						pick = nt
					}
				}
			}
			if pick == nil {
				for _, nt := range carriers {
					if state.Deployed(c.Name, nt.Node.Name) {
						pick = nt
						break
					}
				}
			}
		}
		if pick == nil {
			pick = carriers[0]
		}
		pick.Primary = append(pick.Primary, tag)
	}
}

// resolveNames sorts each node's primary tags and makes its Resolution: its tags
// (with resolution: roles, its role names), each primary one as primary-<tag>.
func (m *Model) resolveNames() {
	for _, nt := range m.nodeTagList() {
		sort.Strings(nt.Primary)
		base := nt.Tags
		if m.Cluster.Resolution == "roles" {
			base = append([]string(nil), nt.Roles...)
			sort.Strings(base)
		}
		for _, t := range base {
			if slices.Contains(nt.Primary, t) {
				t = "primary-" + t
			}
			nt.Resolution = append(nt.Resolution, t)
		}
		sort.Strings(nt.Resolution)
	}
}

// checkCarried is the pre-deployment check: a tag of the cluster's roles (or of
// its spec) that no node carries leaves that tag's tasks without a node. It warns
// at where the tag was unassigned, else at its declaration in the spec, else at
// the cluster's nodes.
func (m *Model) checkCarried(declared map[string]bool, unassignedAt map[string]hcl.Range) hcl.Diagnostics {
	var diags hcl.Diagnostics
	c := m.Cluster
	var missing []string
	for t := range declared {
		if len(m.carriers(t)) == 0 {
			missing = append(missing, t)
		}
	}
	sort.Strings(missing)
	for _, t := range missing {
		r, ok := unassignedAt[t]
		if !ok {
			r = c.NodesRange
			for _, ct := range c.Tags {
				if ct.Name == t {
					r = ct.Range
				}
			}
		}
		msg := fmt.Sprintf("no node carries tag %s: tasks selected by it run nowhere", t)
		m.Warnings = append(m.Warnings, msg)
		diags = append(diags, warnAt(r, "cluster %s: %s", c.Name, msg))
	}
	return diags
}

// knownTag reports whether name is a declared tag or an instance of one.
func (m *Model) knownTag(name string) bool {
	if m.Tags[name] != nil {
		return true
	}
	base, _, ok := instanceTag(name)
	return ok && m.Tags[base] != nil
}

func (m *Model) unknownTag(ref loader.Ref, n *loader.Node) *hcl.Diagnostic {
	names := make([]string, 0, len(m.Tags))
	for t := range m.Tags {
		names = append(names, t)
	}
	d := errorAt(ref.Range, "cluster %s: node %s: unknown tag %q", m.Cluster.Name, n.Name, ref.Name)
	d = suggest(d, ref.Name, names, "tags")
	if d.Detail == "" {
		d.Detail = "Declare the tag in the cluster's tags: (or the release's tags metadata); an instance tag is <tag>:<n> of a declared tag."
	}
	return d
}

// carriers returns the nodes carrying tag (before primary substitution), by id.
func (m *Model) carriers(tag string) []*NodeTags {
	var out []*NodeTags
	for _, nt := range m.nodeTagList() {
		if _, ok := nt.Sources[tag]; ok {
			out = append(out, nt)
		}
	}
	return out
}

// nodeTagList returns the nodes' tags ordered by node id (sorted once, when the
// tags are resolved).
func (m *Model) nodeTagList() []*NodeTags { return m.nodeOrder }

// primaryCandidates lists, sorted, the tags with has_primary that some node carries.
func (m *Model) primaryCandidates() []string {
	var out []string
	for name, t := range m.Tags {
		if t.HasPrimary && len(m.carriers(name)) > 0 {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
