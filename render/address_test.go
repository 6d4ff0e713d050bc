package render

import (
	"strings"
	"testing"
)

// TestAddressRoundTrip: a well-formed address parses into its pieces, and
// String writes the same name back.
func TestAddressRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Address
	}{
		{"demo/nodes/node-1/default.yaml", Address{"demo", "node-1", "default", YAML}},
		{"demo/nodes/sync/default.yaml", Address{"demo", SyncNode, "default", YAML}},
		{"c/nodes/master/provision.yaml", Address{"c", "master", "provision", YAML}},
		{"a.b/nodes/n_1/g.x.yaml", Address{"a.b", "n_1", "g.x", YAML}}, // the format follows the last dot
		{"0/nodes/9/deletion.yaml", Address{"0", "9", "deletion", YAML}},
		{strings.Repeat("c", 128) + "/nodes/n/g.yaml", Address{strings.Repeat("c", 128), "n", "g", YAML}},
	} {
		got, err := ParseAddress(tc.name)
		if err != nil {
			t.Errorf("ParseAddress(%q): %v", tc.name, err)
			continue
		}
		if got != tc.want {
			t.Errorf("ParseAddress(%q) = %+v, want %+v", tc.name, got, tc.want)
		}
		if s := got.String(); s != tc.name {
			t.Errorf("ParseAddress(%q).String() = %q", tc.name, s)
		}
	}
	if got := NodeAddress("demo", "node-1", "default").String(); got != "demo/nodes/node-1/default.yaml" {
		t.Errorf("NodeAddress(demo, node-1, default) = %q", got)
	}
	if got := NodeDir("demo", "node-1"); got != "demo/nodes/node-1" {
		t.Errorf("NodeDir(demo, node-1) = %q", got)
	}
	if got := NodesDir("demo"); got != "demo/nodes" {
		t.Errorf("NodesDir(demo) = %q", got)
	}
}

// TestParseAddressRefuses: every name that is not exactly
// <cluster>/nodes/<node>/<graph>.yaml with valid names is refused.
func TestParseAddressRefuses(t *testing.T) {
	for _, name := range []string{
		"",
		"demo",
		"demo/cluster.yaml",
		"demo/tasks/default.yaml",                    // a task catalogue
		"demo/graphs/default.dot",                    // a DOT file
		"demo/nodes/node-1",                          // a node's directory
		"demo/nodes/node-1/",                         // no file
		"demo/nodes/node-1/default",                  // no format
		"demo/nodes/node-1/default.",                 // an empty format
		"demo/nodes/node-1/default.json",             // a format it does not know
		"demo/nodes/node-1/default.YAML",             // formats are lowercase
		"demo/nodes/node-1/.yaml",                    // no graph
		"demo/nodes/node-1/.default.yaml",            // a hidden graph
		"demo/nodes/node-1/sub/default.yaml",         // one level too deep
		"demo/node/node-1/default.yaml",              // not nodes
		"demo/Nodes/node-1/default.yaml",             // not nodes
		"demo/tasks/node-1/default.yaml",             // not nodes
		"/demo/nodes/node-1/default.yaml",            // absolute
		"./nodes/node-1/default.yaml",                // a dot cluster
		"../nodes/node-1/default.yaml",               // a dot-dot cluster
		"demo/nodes/../default.yaml",                 // a dot-dot node
		"demo/nodes/./default.yaml",                  // a dot node
		"/nodes/node-1/default.yaml",                 // an empty cluster
		"demo/nodes//default.yaml",                   // an empty node
		"Demo/nodes/node-1/default.yaml",             // uppercase cluster
		"demo/nodes/Node-1/default.yaml",             // uppercase node
		"demo/nodes/node-1/Default.yaml",             // uppercase graph
		"-demo/nodes/node-1/default.yaml",            // a name starting with a dash
		"demo/nodes/node 1/default.yaml",             // a space
		"demo/nodes/node-1/def\\ault.yaml",           // a backslash
		"demo/nodes/node-1/default.yaml\n",           // a newline
		"demo/nodes/nöde/default.yaml",               // not ASCII
		strings.Repeat("c", 129) + "/nodes/n/g.yaml", // a name too long
		"demo/nodes/n/" + strings.Repeat("g", 129) + ".yaml",
	} {
		if a, err := ParseAddress(name); err == nil {
			t.Errorf("ParseAddress(%q) = %+v, want an error", name, a)
		}
	}
}

// TestParseNodeDir: a node's directory, <cluster>/nodes/<node> with valid
// names, and nothing else.
func TestParseNodeDir(t *testing.T) {
	if c, n, ok := ParseNodeDir("demo/nodes/node-1"); !ok || c != "demo" || n != "node-1" {
		t.Errorf("ParseNodeDir(demo/nodes/node-1) = %q, %q, %v", c, n, ok)
	}
	for _, dir := range []string{"", "demo", "demo/nodes", "demo/nodes/", "demo/nodes/node-1/default.yaml", "demo/tasks/node-1",
		"demo/nodes/..", "../nodes/node-1", "Demo/nodes/node-1", "demo/nodes/Node-1", "/demo/nodes/node-1", "demo/nodes/node-1/"} {
		if c, n, ok := ParseNodeDir(dir); ok {
			t.Errorf("ParseNodeDir(%q) = %q, %q, true, want false", dir, c, n)
		}
	}
}

// FuzzParseAddress: ParseAddress never panics, and what it accepts is a
// valid address that String writes back byte for byte.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"demo/nodes/node-1/default.yaml", "a.b/nodes/n/g.x.yaml", "demo/nodes/node-1/default", "demo/nodes/../x.yaml", "demo/tasks/default.yaml", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAddress(s)
		if err != nil {
			return
		}
		if got := a.String(); got != s {
			t.Fatalf("ParseAddress(%q).String() = %q", s, got)
		}
		if c, n, ok := ParseNodeDir(NodeDir(a.Cluster, a.Node)); !ok || c != a.Cluster || n != a.Node {
			t.Fatalf("the node directory of %q does not parse: %q %q %v", s, c, n, ok)
		}
		for _, part := range []string{a.Cluster, a.Node, a.Graph} {
			if part == "" || part == "." || part == ".." || strings.ContainsAny(part, "/\\\x00") {
				t.Fatalf("ParseAddress(%q) accepted the name %q", s, part)
			}
		}
	})
}
