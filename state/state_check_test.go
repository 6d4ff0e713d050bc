package state

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestCheckState: what state push accepts from outside, and what it refuses,
// each with its reason.
func TestCheckState(t *testing.T) {
	good := func() *State {
		st := Empty()
		st.Lineage, st.Serial, st.Revision, st.ToolVersion = "0123456789abcdef0123456789abcdef", 3, "0123456789abcdef0123456789abcdef01234567", "v1.2.3"
		st.Clusters["demo"] = &ClusterState{Nodes: map[string]NodeState{"node-1": {ID: 1, Roles: []string{"controller"}}}, Primary: map[string]string{"controller": "node-1", "database:1": "node-1"}}
		st.Artifacts["demo/nodes/node-1/default.yaml"] = strings.Repeat("ab", 32)
		st.Artifacts["manifest.json"] = strings.Repeat("cd", 32)
		st.ClusterInputs = map[string]string{"demo": "fp"}
		return st
	}
	if err := Check(good()); err != nil {
		t.Fatalf("a good state: %v", err)
	}
	roomy := good()
	roomy.Serial = 1 << 52
	if err := Check(roomy); err != nil {
		t.Errorf("serial 2^52: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*State)
		want   string
	}{
		{"serial 2^63-1", func(st *State) { st.Serial = math.MaxInt64 }, "leaves no room"},
		{"serial 2^63-2", func(st *State) { st.Serial = math.MaxInt64 - 1 }, "leaves no room"},
		{"serial 2^52+1", func(st *State) { st.Serial = 1<<52 + 1 }, "state push takes serials up to 4503599627370496 (2^52)"},
		{"serial 0", func(st *State) { st.Serial = 0 }, "is not positive"},
		{"a 30 MB revision", func(st *State) { st.Revision = strings.Repeat("r", 30<<20) }, "its revision is 31457280 bytes long, over 256"},
		{"a long lineage", func(st *State) { st.Lineage = strings.Repeat("l", 257) }, "its lineage is 257 bytes long"},
		{"no lineage", func(st *State) { st.Lineage = "" }, "it has no lineage"},
		{"a control character", func(st *State) { st.ToolVersion = "v1\x1b[2J" }, "its tool_version has a control character"},
		{"not UTF-8", func(st *State) { st.Revision = "\xff" }, "its revision is not UTF-8"},
		{"a cluster name", func(st *State) { st.Clusters["../x"] = &ClusterState{} }, `its cluster name "../x"`},
		{"a null cluster", func(st *State) { st.Clusters["x"] = nil }, "its cluster x is null"},
		{"a node name", func(st *State) { st.Clusters["demo"].Nodes["Node 1"] = NodeState{} }, `its node name "Node 1"`},
		{"too many roles", func(st *State) {
			st.Clusters["demo"].Nodes["node-1"] = NodeState{Roles: make([]string, 1001)}
		}, "has 1001 roles, over 1000"},
		{"an empty role", func(st *State) { st.Clusters["demo"].Nodes["node-1"] = NodeState{Roles: []string{""}} }, "is empty"},
		{"a primary that is no node", func(st *State) { st.Clusters["demo"].Primary["x"] = "../n" }, `the primary x of cluster demo is "../n"`},
		{"an artifact out of the set", func(st *State) { st.Artifacts["../etc/passwd"] = strings.Repeat("ab", 32) }, `its artifact "../etc/passwd"`},
		{"an absolute artifact", func(st *State) { st.Artifacts["/etc/passwd"] = strings.Repeat("ab", 32) }, `its artifact "/etc/passwd"`},
		{"the state as an artifact", func(st *State) { st.Artifacts[".state.json"] = strings.Repeat("ab", 32) }, `its artifact ".state.json"`},
		{"a long artifact path", func(st *State) { st.Artifacts[strings.Repeat("a", 1025)] = strings.Repeat("ab", 32) }, "of at most 1024 bytes"},
		{"a digest", func(st *State) { st.Artifacts["manifest.json"] = "x" }, "is not a sha256"},
		{"a cluster_inputs name", func(st *State) { st.ClusterInputs["A B"] = "x" }, `its cluster_inputs name "A B"`},
		{"a status", func(st *State) { st.Clusters["demo"].Status = "broken" }, `cluster demo has status "broken"`},
		{"a cluster's revision", func(st *State) { st.Clusters["demo"].Revision = strings.Repeat("r", 300) }, "the revision of cluster demo is 300 bytes long"},
		{"a cluster's serial", func(st *State) { st.Clusters["demo"].Serial = 4 }, "cluster demo changed at serial 4"},
		{"too many problems", func(st *State) { st.Clusters["demo"].Problems = make([]string, 30) }, "cluster demo has 30 problems"},
		{"a long problem", func(st *State) { st.Clusters["demo"].Problems = []string{strings.Repeat("p", 5000)} }, "a problem of cluster demo is 5000 bytes long"},
		{"a pending plan", func(st *State) { st.Clusters["demo"].Pending = &Pending{Revision: "r", Digest: "d\x00", Base: "b"} }, "the pending plan's digest of cluster demo has a control character"},
		{"a control character in a role", func(st *State) { st.Clusters["demo"].Nodes["node-1"] = NodeState{Roles: []string{"a\x1b"}} }, "a role of node node-1 (cluster demo) has a control character"},
		{"a cluster's file", func(st *State) { st.Clusters["demo"].File = "clusters/\x00.yaml" }, "the file of cluster demo has a control character"},
		{"too many primary tags", func(st *State) {
			for i := range 999 {
				st.Clusters["demo"].Primary[fmt.Sprint("t", i)] = "node-1"
			}
		}, "cluster demo has 1001 primary tags, over 1000"},
		{"an empty primary tag", func(st *State) { st.Clusters["demo"].Primary[""] = "node-1" }, "a primary tag of cluster demo is empty"},
		{"too many clusters", func(st *State) {
			for i := range MaxClusters {
				st.Clusters[fmt.Sprint("c", i)] = &ClusterState{}
			}
		}, "it has 10001 clusters, over 10000"},
		{"too many cluster_inputs", func(st *State) {
			for i := range MaxClusters {
				st.ClusterInputs[fmt.Sprint("c", i)] = "fp"
			}
		}, "it has 10001 cluster_inputs, over 10000"},
		{"a cluster_inputs fingerprint", func(st *State) { st.ClusterInputs["demo"] = "fp\x00" }, "the cluster_inputs of demo has a control character"},
	} {
		st := good()
		tc.change(st)
		err := Check(st)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nothing was changed") {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestParseStateURLCredentials: credentials in the state URL are refused, and
// the message repeats none of the URL (the password was printed in the State:
// line, the credentials silently unused).
func TestParseStateURLCredentials(t *testing.T) {
	for _, u := range []string{
		"etcd://alice:hunter2@127.0.0.1:2379/fuelsync",
		"etcd://alice@127.0.0.1:2379/fuelsync",
		"etcd://alice:hun/ter2@127.0.0.1:2379/fuelsync",
		"etcd://alice:hunter2@h1:2379,h2:2379/fuelsync",
		"etcd://127.0.0.1:2379/fs@x",
	} {
		_, err := ParseURL(u)
		if err == nil || !strings.Contains(err.Error(), "--etcd-auth-file") {
			t.Errorf("ParseURL(%q) = %v, want credentials refused", u, err)
			continue
		}
		for _, secret := range []string{"hunter2", "hun/ter2", "alice", "ter2"} {
			if strings.Contains(err.Error(), secret) {
				t.Errorf("ParseURL(%q): the message repeats %q: %v", u, secret, err)
			}
		}
	}
}
