package render

import (
	"slices"
	"strings"

	"github.com/fuelsync/fuelsync/loader"
)

// TagInfo is one tag as `tags list` shows it (the role-decomposition design's tag
// listing).
type TagInfo struct {
	Name       string `json:"name"`
	Owner      string `json:"owner"` // release, plugin <name> or cluster
	HasPrimary bool   `json:"has_primary"`
	// Roles are the roles that list the tag: a role's tag cannot be deleted.
	// A tag no role lists is user-defined.
	Roles []string `json:"roles"`
	// Nodes carry the tag (before primary substitution), by id; Primary is the one
	// carrying primary-<tag> instead ("" when none).
	Nodes   []string `json:"nodes,omitempty"`
	Primary string   `json:"primary,omitempty"`
}

// UserDefined reports whether no role lists the tag.
func (t *TagInfo) UserDefined() bool { return len(t.Roles) == 0 }

// TagList lists the merged tags metadata of a cluster, sorted by name, with the
// roles that list each tag and the nodes that carry it.
func (m *Model) TagList() []*TagInfo {
	var out []*TagInfo
	names := make([]string, 0, len(m.Tags))
	for name := range m.Tags {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		t := m.Tags[name]
		info := &TagInfo{Name: name, Owner: t.Owner, HasPrimary: t.HasPrimary, Roles: []string{}}
		for _, r := range m.Roles {
			if slices.Contains(r.Tags, name) {
				info.Roles = append(info.Roles, r.Name)
			}
		}
		for _, nt := range m.nodeTagList() {
			if slices.Contains(nt.Tags, name) {
				info.Nodes = append(info.Nodes, nt.Node.Name)
				if slices.Contains(nt.Primary, name) {
					info.Primary = nt.Node.Name
				}
			}
		}
		out = append(out, info)
	}
	return out
}

// ReleaseTagList lists a release's own tags metadata, with the release roles that
// list each tag.
func ReleaseTagList(r *loader.Release) []*TagInfo {
	var out []*TagInfo
	for _, t := range r.Tags {
		info := &TagInfo{Name: t.Name, Owner: "release", HasPrimary: t.HasPrimary, Roles: []string{}}
		for _, role := range r.Roles {
			tags := role.Tags
			if !role.HasTags {
				tags = []string{role.Name}
			}
			if slices.Contains(tags, t.Name) {
				info.Roles = append(info.Roles, role.Name)
			}
		}
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b *TagInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// NodeTagSource is one of a node's effective tags and where it comes from.
type NodeTagSource struct {
	Tag string `json:"tag"`
	// Sources: "role <r>" (a role's tag), "role name" (the implicit role tag),
	// "assigned", "instance", "primary" (primary-<tag> replacing <tag>).
	Sources []string `json:"sources"`
}

// NodeTagSources lists the tags task selectors match on a node (primary tags as
// primary-<tag>), sorted, each with where it comes from; nil for an unknown node.
func (m *Model) NodeTagSources(node string) []NodeTagSource {
	nt := m.NodeTags[node]
	if nt == nil {
		return nil
	}
	var out []NodeTagSource
	for _, tag := range nt.Resolution {
		src := nt.Sources[tag]
		if base, ok := strings.CutPrefix(tag, "primary-"); ok && slices.Contains(nt.Primary, base) {
			src = append([]string{"primary"}, nt.Sources[base]...)
		}
		out = append(out, NodeTagSource{Tag: tag, Sources: slices.Clone(src)})
	}
	return out
}
