package selector

// Ports of nailgun's resolver tests, nailgun/test/unit/test_role_resolver.py, in the
// two versions the reference store holds (the TagResolver-era file is the 5-node one
// with the master and get_all_roles cases; one version adds a node tagged
// "controller::mysql" for a `::` tag-prefix policy that the TagResolver does not
// have), and of test_lcm_transaction_serializer.py test_get_fault_tolerance.
//
// Upstream nodes have uid str(i) and roles that the mocked Node.all_roles/all_tags
// returns; here the node name is the upstream uid, the id is i+1 (ids are positive)
// and the roles are the tags.

import (
	"slices"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// upstreamTags are roles_of_nodes of TestPatternBasedRoleResolver (5 nodes).
var upstreamTags = [][]string{
	{"primary-controller"},
	{"cinder"},
	{"controller", "compute"},
	{"controller", "cinder"},
	{"compute"},
}

// upstreamTagsMySQL is the later roles_of_nodes with a sixth node.
var upstreamTagsMySQL = append(slices.Clone(upstreamTags), []string{"controller::mysql"})

func upstreamIndex(tags [][]string) *Index {
	nodes := make([]Node, len(tags))
	for i, t := range tags {
		nodes[i] = Node{Name: string(rune('0' + i)), ID: i + 1, Tags: t}
	}
	return NewIndex(nodes)
}

func uids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = string(rune('0' + i))
	}
	return out
}

// allTags is the resolver's get_all_roles(pattern): the cluster's tags that the
// pattern (nil, "*", a string or a list) matches. It reads the index's own regex
// cache, so it checks the per-tag matching that Resolve and Matches use.
func allTags(ix *Index, pattern any) []string {
	var items []string
	switch p := pattern.(type) {
	case nil:
		return slices.Clone(ix.tags)
	case string:
		if p == star {
			return slices.Clone(ix.tags)
		}
		items = []string{p}
	case []string:
		items = p
	}
	var out []string
	for _, item := range items {
		for id, t := range ix.tags {
			var ok bool
			if isRegex(item) {
				e := ix.regex(item)
				ok = e.tagMatch != nil && e.tagMatch[id]
			} else {
				ok = t == item
			}
			if ok && !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestUpstreamResolveByPattern ports test_resolve_by_pattern of both versions.
func TestUpstreamResolveByPattern(t *testing.T) {
	tests := []struct {
		name string
		tags [][]string
		sel  string
		want []string
	}{
		{"5 nodes: /.*controller/", upstreamTags, `["/.*controller/"]`, []string{"0", "2", "3"}},
		{"5 nodes: controller", upstreamTags, `["controller"]`, []string{"2", "3"}},
		{"5 nodes: /c.+/", upstreamTags, `["/c.+/"]`, []string{"1", "2", "3", "4"}},
		{"6 nodes: /.*controller/", upstreamTagsMySQL, `["/.*controller/"]`, []string{"0", "2", "3", "5"}},
		{"6 nodes: controller", upstreamTagsMySQL, `["controller"]`, []string{"2", "3"}},
		{"6 nodes: /c.+/", upstreamTagsMySQL, `["/c.+/"]`, []string{"1", "2", "3", "4", "5"}},
		// Upstream (a TagsMatchingPolicy for items containing "::", in a version
		// that predates the TagResolver) selects the nodes whose tags are prefixes of
		// the item: 2, 3 and 5. The TagResolver and fuelsync have exact equality.
		{"6 nodes: controller::mysql is exact", upstreamTagsMySQL, `["controller::mysql"]`, []string{"5"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := upstreamIndex(tt.tags)
			got, ok := ix.Resolve(val(t, tt.sel))
			if !ok {
				t.Fatal("ok = false")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve(%s) (-want +got):\n%s", tt.sel, diff)
			}
		})
	}
}

// TestUpstreamResolveAll ports test_resolve_all. (test_resolve_any, one node of the
// result with policy any, is not the resolver's here: render chooses that node by the
// tasks it runs, render.TestPolicyAny.)
func TestUpstreamResolveAll(t *testing.T) {
	for _, tags := range [][][]string{upstreamTags, upstreamTagsMySQL} {
		ix := upstreamIndex(tags)
		got, ok := ix.Resolve(val(t, `"*"`))
		if diff := cmp.Diff(uids(len(tags)), got); !ok || diff != "" {
			t.Errorf("Resolve(\"*\") ok=%v (-want +got):\n%s", ok, diff)
		}
	}
}

// TestUpstreamResolveMaster ports test_resolve_master.
func TestUpstreamResolveMaster(t *testing.T) {
	ix := upstreamIndex(upstreamTagsMySQL)
	for _, tt := range []struct {
		sel  string
		want []string
	}{
		{`master`, []string{Master}},
		{`[master, controller]`, []string{Master, "2", "3"}},
	} {
		got, ok := ix.Resolve(val(t, tt.sel))
		if diff := cmp.Diff(tt.want, got); !ok || diff != "" {
			t.Errorf("Resolve(%s) ok=%v (-want +got):\n%s", tt.sel, ok, diff)
		}
	}
}

// TestUpstreamGetAllRoles ports test_get_all_roles (the resolver's tag listing).
func TestUpstreamGetAllRoles(t *testing.T) {
	ix := upstreamIndex(upstreamTagsMySQL)
	every := []string{"cinder", "compute", "controller", "controller::mysql", "primary-controller"}
	tests := []struct {
		pattern any
		want    []string
	}{
		{nil, every},
		{"*", every},
		{"/.*controller/", []string{"controller", "controller::mysql", "primary-controller"}},
		{[]string{"compute", "cinder", "cinder2"}, []string{"cinder", "compute"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, allTags(ix, tt.pattern)); diff != "" {
			t.Errorf("get_all_roles(%v) (-want +got):\n%s", tt.pattern, diff)
		}
	}
	// The 5-node version of the file, TagResolver era.
	ix = upstreamIndex(upstreamTags)
	if diff := cmp.Diff([]string{"controller", "primary-controller"}, allTags(ix, "/.*controller/")); diff != "" {
		t.Errorf("get_all_roles(/.*controller/) (-want +got):\n%s", diff)
	}
}

// TestUpstreamNameMatchPolicy ports TestNameMatchPolicy (test_exact_match,
// test_pattern_match): an exact item does not match a longer tag, a pattern matches
// at the start.
func TestUpstreamNameMatchPolicy(t *testing.T) {
	ix := NewIndex([]Node{
		{Name: "a", ID: 1, Tags: []string{"controller"}},
		{Name: "b", ID: 2, Tags: []string{"controller1"}},
	})
	for _, tt := range []struct {
		sel  string
		want []string
	}{
		{`[controller]`, []string{"a"}},
		{`["/controller/"]`, []string{"a", "b"}},
	} {
		got, _ := ix.Resolve(val(t, tt.sel))
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Resolve(%s) (-want +got):\n%s", tt.sel, diff)
		}
	}
}

// TestUpstreamGetFaultTolerance ports test_get_fault_tolerance: every row with a
// group of 10 nodes.
func TestUpstreamGetFaultTolerance(t *testing.T) {
	tests := []struct {
		src  string
		want int
	}{
		{`null`, 11},
		{`'10'`, 10},
		{`10`, 10},
		{`'10%'`, 1},
		{`'a%'`, 11},
		{`' -10%'`, 9},
		{`'-1 '`, 9},
	}
	for _, tt := range tests {
		if got := FaultTolerance(val(t, tt.src), 10); got != tt.want {
			t.Errorf("FaultTolerance(%s, 10) = %d, want %d", tt.src, got, tt.want)
		}
	}
}
