package selector

import (
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/loader"
)

// val decodes a selector (or fault tolerance) written in YAML.
func val(t testing.TB, src string) *loader.Value {
	t.Helper()
	v, diags := loader.DecodeYAML("t.yaml", []byte(src))
	if diags.HasErrors() {
		t.Fatalf("DecodeYAML(%q): %s", src, diags.Error())
	}
	return v
}

// cluster is the nodes of most cases: ids deliberately not in input order.
var cluster = []Node{
	{Name: "node-3", ID: 3, Tags: []string{"compute", "cinder"}},
	{Name: "node-1", ID: 1, Tags: []string{"primary-controller", "primary-mongo"}},
	{Name: "node-10", ID: 10, Tags: []string{"glance-db", "mysql:1"}},
	{Name: "node-2", ID: 2, Tags: []string{"controller", "controller"}},
	{Name: "node-5", ID: 5, Tags: []string{"compute"}},
	{Name: "node-4", ID: 4, Tags: []string{"*", "ceph-osd"}},
	{Name: "node-7", ID: 7}, // no tags
}

func TestResolve(t *testing.T) {
	ix := NewIndex(cluster)
	everyNode := []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-7", "node-10"}
	tagged := []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-10"}
	tests := []struct {
		name  string
		sel   string // YAML; "" for an absent selector
		want  []string
		notOK bool
	}{
		// '*' the string vs the list item.
		{name: "string star is every node", sel: `"*"`, want: everyNode},
		{name: "list star is the tag named *", sel: `["*"]`, want: []string{"node-4"}},
		{name: "star string never selects master", sel: `'*'`, want: everyNode},

		// Strings and lists.
		{name: "string is a one-item list", sel: `compute`, want: []string{"node-3", "node-5"}},
		{name: "exact tag", sel: `[controller]`, want: []string{"node-2"}},
		{name: "exact is not a prefix", sel: `[control]`},
		{name: "exact is not primary", sel: `[mongo]`},
		{name: "instance tag", sel: `["mysql:1"]`, want: []string{"node-10"}},
		{name: "unknown tag", sel: `[swift]`},
		{name: "empty list", sel: `[]`},
		{name: "several items, sorted by id", sel: `[compute, controller, glance-db]`, want: []string{"node-2", "node-3", "node-5", "node-10"}},

		// master.
		{name: "master string", sel: `master`, want: []string{Master}},
		{name: "master with a regex", sel: `['master', '/.*/']`, want: append([]string{Master}, tagged...)},
		{name: "master first", sel: `[glance-db, master]`, want: []string{Master, "node-10"}},
		{name: "master twice", sel: `[master, master]`, want: []string{Master}},

		// Regexes: anchored at the start only.
		{name: "regex anchored at start", sel: `["/c.+/"]`, want: []string{"node-2", "node-3", "node-4", "node-5"}},
		{name: "regex not anchored at end", sel: `["/glance/"]`, want: []string{"node-10"}},
		{name: "regex /controller/ not primary", sel: `["/controller/"]`, want: []string{"node-2"}},
		{name: "regex optional primary", sel: `["/(primary-)?controller/"]`, want: []string{"node-1", "node-2"}},
		{name: "regex alternation is grouped", sel: `["/mongo|ceph/"]`, want: []string{"node-4"}},
		{name: "regex end anchor", sel: `["/compute$/"]`, want: []string{"node-3", "node-5"}},
		{name: "regex of the full name", sel: `["/.*mongo/"]`, want: []string{"node-1"}},
		{name: "empty regex matches every tag", sel: `["//"]`, want: tagged},
		{name: "a lone slash is an exact tag", sel: `["/"]`},
		{name: "invalid regex matches nothing", sel: `["/(/", compute]`, want: []string{"node-3", "node-5"}},
		{name: "PCRE lookahead matches nothing", sel: `["/(?!compute)c.*/"]`},
		{name: "pattern valid only inside the group", sel: `["/x)|(c/"]`},
		{name: "slash only at one end is exact", sel: `["/compute", "compute/"]`},

		// Duplicates.
		{name: "duplicates removed", sel: `[compute, compute, "/comp/", "/c.+/", cinder]`, want: []string{"node-2", "node-3", "node-4", "node-5"}},
		{name: "same item twice", sel: `[compute, compute]`, want: []string{"node-3", "node-5"}},

		// Several items with master.
		{name: "several items with master", sel: `[compute, master, glance-db]`, want: []string{Master, "node-3", "node-5", "node-10"}},

		// Malformed selectors.
		{name: "absent", notOK: true},
		{name: "null", sel: `null`, notOK: true},
		{name: "tilde", sel: `~`, notOK: true},
		{name: "mapping", sel: `{role: compute}`, notOK: true},
		{name: "integer", sel: `3`, notOK: true},
		{name: "boolean", sel: `true`, notOK: true},
		{name: "list with a non-string item", sel: `[compute, 3, null, [cinder]]`, want: []string{"node-3", "node-5"}, notOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sel *loader.Value
			if tt.sel != "" {
				sel = val(t, tt.sel)
			}
			got, ok := ix.Resolve(sel)
			if ok == tt.notOK {
				t.Errorf("ok = %v, want %v", ok, !tt.notOK)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Resolve(%s) (-want +got):\n%s", tt.sel, diff)
			}
		})
	}
}

func TestResolveNames(t *testing.T) {
	ix := NewIndex(cluster)
	tests := []struct {
		items []string
		star  bool
		want  []string
	}{
		{star: true, want: []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-7", "node-10"}},
		{items: []string{"swift"}, star: true, want: []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-7", "node-10"}},
		{items: []string{"*"}, want: []string{"node-4"}},
		{items: []string{"master", "/c.+/"}, want: []string{Master, "node-2", "node-3", "node-4", "node-5"}},
		{items: []string{"compute", "cinder"}, want: []string{"node-3", "node-5"}},
		{items: nil},
	}
	for _, tt := range tests {
		got := ix.ResolveNames(tt.items, tt.star)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ResolveNames(%q, %v) (-want +got):\n%s", tt.items, tt.star, diff)
		}
	}
}

func TestResolveResultIsACopy(t *testing.T) {
	ix := NewIndex(cluster)
	for _, sel := range []string{`"*"`, `[compute]`, `["/c.+/"]`} {
		got, _ := ix.Resolve(val(t, sel))
		got[0] = "changed"
		again, _ := ix.Resolve(val(t, sel))
		if again[0] == "changed" {
			t.Errorf("Resolve(%s) returns shared storage", sel)
		}
	}
}

func TestEmptyIndex(t *testing.T) {
	ix := NewIndex(nil)
	for _, sel := range []string{`"*"`, `[compute]`, `["/.*/"]`} {
		if got, ok := ix.Resolve(val(t, sel)); len(got) != 0 || !ok {
			t.Errorf("Resolve(%s) = %v, %v; want nothing, true", sel, got, ok)
		}
	}
	if got, _ := ix.Resolve(val(t, `[master]`)); !cmp.Equal(got, []string{Master}) {
		t.Errorf("Resolve([master]) = %v", got)
	}
}

func TestMatches(t *testing.T) {
	ix := NewIndex(cluster)
	tests := []struct {
		sel  string
		node string
		want []Match
	}{
		{`"*"`, "node-3", []Match{{"*", "*"}}},
		{`"*"`, "node-7", []Match{{"*", "*"}}},
		{`"*"`, Master, nil},
		{`["*"]`, "node-3", nil},
		{`["*"]`, "node-4", []Match{{"*", "*"}}},
		{`compute`, "node-3", []Match{{"compute", "compute"}}},
		{`compute`, "node-2", nil},
		// The first of the node's tags (sorted) that the regex matches.
		{`["/c.+/"]`, "node-3", []Match{{"/c.+/", "cinder"}}},
		{`["/c.+/"]`, "node-1", nil},
		{`["/c.+/", compute, cinder, swift]`, "node-3", []Match{{"/c.+/", "cinder"}, {"compute", "compute"}, {"cinder", "cinder"}}},
		{`["/(primary-)?controller/"]`, "node-1", []Match{{"/(primary-)?controller/", "primary-controller"}}},
		{`["/glance/"]`, "node-10", []Match{{"/glance/", "glance-db"}}},
		{`[master, "/.*/"]`, Master, []Match{{"master", "master"}}},
		{`[master, "/.*/"]`, "node-5", []Match{{"/.*/", "compute"}}},
		{`master`, "node-5", nil},
		{`[compute, compute]`, "node-5", []Match{{"compute", "compute"}}},
		{`["/(/", compute]`, "node-5", []Match{{"compute", "compute"}}},
		{`[compute]`, "node-99", nil},
		{`null`, "node-5", nil},
		{`{a: b}`, "node-5", nil},
		{`[3, compute]`, "node-5", []Match{{"compute", "compute"}}},
	}
	for _, tt := range tests {
		got := ix.Matches(val(t, tt.sel), tt.node)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Matches(%s, %s) (-want +got):\n%s", tt.sel, tt.node, diff)
		}
	}
	if got := ix.Matches(nil, "node-5"); got != nil {
		t.Errorf("Matches(absent) = %v", got)
	}
}

// TestMatchesAgreesWithResolve checks that Matches reports a match exactly for the
// nodes Resolve selects.
func TestMatchesAgreesWithResolve(t *testing.T) {
	ix := NewIndex(cluster)
	names := []string{Master, "node-1", "node-2", "node-3", "node-4", "node-5", "node-7", "node-10"}
	for _, sel := range []string{`"*"`, `["*"]`, `[master, "/c.+/"]`, `["/.*/", glance-db]`, `compute`, `[]`, `["/(/"]`} {
		v := val(t, sel)
		got, _ := ix.Resolve(v)
		var want []string
		for _, n := range names {
			if len(ix.Matches(v, n)) > 0 {
				want = append(want, n)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: Resolve vs Matches (-matches +resolve):\n%s", sel, diff)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	ix := NewIndex(cluster)
	sels := []*loader.Value{val(t, `["/c.+/"]`), val(t, `["/.*/", compute]`), val(t, `["/glance/", "/c.+/"]`)}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				for _, s := range sels {
					ix.Resolve(s)
					ix.Matches(s, "node-3")
				}
			}
		}()
	}
	wg.Wait()
	got, _ := ix.Resolve(sels[2])
	if diff := cmp.Diff([]string{"node-2", "node-3", "node-4", "node-5", "node-10"}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestFaultTolerance(t *testing.T) {
	tests := []struct {
		src   string // "" for absent
		total int
		want  int
	}{
		{"", 10, 11},
		{`~`, 3, 4},
		{`0`, 10, 0},
		{`2`, 3, 2},
		{`15`, 10, 15}, // not clamped
		{`-1`, 3, 2},
		{`-3`, 3, 0},
		{`-5`, 3, 0},
		{`-0`, 3, 0},
		{`'2'`, 3, 2},
		{`"+2"`, 3, 2},
		{`" 007 "`, 3, 7},
		{`"-2"`, 3, 1},
		{`"33%"`, 10, 3},
		{`"50%"`, 3, 1},
		{`"100%"`, 7, 7},
		{`"200%"`, 10, 20}, // not clamped
		{`"-15%"`, 10, 8},  // -150//100 = -2, rounded down as Python's //
		{`"-200%"`, 10, 0}, // max(0, 10-20)
		{`"10 %"`, 10, 1},  // int("10 ") reads
		{`"0%"`, 10, 0},
		{`"%"`, 10, 11},
		{`"10%%"`, 10, 11},
		{`""`, 10, 11},    // nailgun: IndexError
		{`"   "`, 10, 11}, // nailgun: IndexError
		{`"1.5"`, 10, 11},
		{`"1.5%"`, 10, 11},
		{`"0x10"`, 10, 11},
		{`"1_0"`, 10, 11},
		{`"- 1"`, 10, 11},
		{`"two"`, 10, 11},
		{`2.9`, 10, 2},  // int(2.9)
		{`-1.5`, 10, 9}, // int(-1.5) = -1
		{`.nan`, 10, 11},
		{`.inf`, 10, 11}, // nailgun: OverflowError
		{`true`, 10, 1},  // int(True)
		{`false`, 10, 0},
		{`[1]`, 10, 11},
		{`{a: 1}`, 10, 11},
		{`0x10`, 20, 16}, // a YAML integer
		{`"99999999999999999999999"`, 10, math.MaxInt},
		{`"-99999999999999999999999"`, 10, 0},
		{`"99999999999999999999999%"`, 10, math.MaxInt},
		{`1e300`, 10, math.MaxInt},
		{`-1e300`, 10, 0},
		{`3`, 0, 3},
		{`"50%"`, 0, 0},
		{`~`, 0, 1},
	}
	for _, tt := range tests {
		var v *loader.Value
		if tt.src != "" {
			v = val(t, tt.src)
		}
		if got := FaultTolerance(v, tt.total); got != tt.want {
			t.Errorf("FaultTolerance(%s, %d) = %d, want %d", tt.src, tt.total, got, tt.want)
		}
	}
}

// benchCluster is 2000 nodes over 50 distinct tags: every node has a role tag and
// one in three a second one.
func benchCluster() []Node {
	tags := make([]string, 50)
	for i := range tags {
		tags[i] = fmt.Sprintf("role-%02d", i)
	}
	tags[0], tags[1], tags[2] = "controller", "compute", "cinder"
	nodes := make([]Node, 2000)
	for i := range nodes {
		n := Node{Name: fmt.Sprintf("node-%d", i+1), ID: i + 1, Tags: []string{tags[i%len(tags)]}}
		if i%3 == 0 {
			n.Tags = append(n.Tags, tags[(i*7+3)%len(tags)])
		}
		if i == 0 {
			n.Tags = []string{"primary-controller"}
		}
		nodes[i] = n
	}
	return nodes
}

func BenchmarkResolve(b *testing.B) {
	ix := NewIndex(benchCluster())
	srcs := []string{
		`[controller]`,
		`[compute]`,
		`role-17`,
		`["/(primary-)?controller/"]`,
		`["/role-1/"]`,
		`[controller, cinder]`,
		`[master]`,
		`[master, "/.*/"]`,
		`["/c.+/", role-42]`,
		`[swift]`,
		`"*"`,
	}
	sels := make([]*loader.Value, len(srcs))
	for i, s := range srcs {
		sels[i] = val(b, s)
	}
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for i := 0; b.Loop(); i++ {
		nodes, _ := ix.Resolve(sels[i%len(sels)])
		n += len(nodes)
	}
	_ = n
}

// BenchmarkResolveExact is the common case alone: one exact tag.
func BenchmarkResolveExact(b *testing.B) {
	ix := NewIndex(benchCluster())
	sel := val(b, `[role-17]`)
	b.ReportAllocs()
	for b.Loop() {
		ix.Resolve(sel)
	}
}
