package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
)

// encodeState writes the same bytes as json.MarshalIndent, whatever the
// artifacts' names and the rest of the state hold.
func TestEncodeStateIsMarshalIndent(t *testing.T) {
	fleet := map[string]string{}
	for i := range 300 {
		fleet[fmt.Sprintf("c%d/nodes/node-%d/tasks.yaml", i%7, i)] = fmt.Sprintf("%064x", i)
	}
	cluster := &ClusterState{Nodes: map[string]NodeState{"node-1": {}}, Primary: map[string]string{"controller": "node-1"}, Revision: "abc", Serial: 3}
	for _, tc := range []struct {
		name string
		st   State
	}{
		{"nil artifacts", State{FormatVersion: "1", Serial: 1}},
		{"no artifacts", State{FormatVersion: "1", Artifacts: map[string]string{}}},
		{"one", State{FormatVersion: "1", Lineage: "l", Serial: 2, Artifacts: map[string]string{"manifest.json": "ab"}}},
		{"a fleet, clusters and inputs", State{FormatVersion: "1", Lineage: "l", Serial: 9, Revision: "r", ToolVersion: "v",
			Clusters: map[string]*ClusterState{"c0": cluster, "c1": {}}, Artifacts: fleet, Inputs: "in",
			ClusterInputs: map[string]string{"c0": "x", "c1": "y"}}},
		{"names encoding/json escapes", State{Artifacts: map[string]string{
			"a<b>&c": "1", "lt<": "1", "gt>": "1", "amp&": "1", "del\x7f": "1", "q\"": "1", "bs\\": "1", "quote\"back\\slash": "2", "tab\there": "3", "nl\nx": "4", "ctl\x01": "5", "é/ü": "6",
			"line\u2028sep": "7", "bad\xffutf8": "8", "plain": "<&>", "z": "\x7f",
		}}},
		{"the mark's key itself", State{Artifacts: map[string]string{"\x00": "", "a": "b"}}},
		{"the mark's text in a name", State{Artifacts: map[string]string{artifactsMark: "x", "a": "b"}}},
		{"the mark's text in the revision", State{Revision: artifactsMark, Artifacts: map[string]string{"a": "b"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.MarshalIndent(&tc.st, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got, err := encodeState(&tc.st)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encodeState:\n%s\nwant (json.MarshalIndent):\n%s", got, want)
			}
		})
	}
}
