package render

import (
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/repogen"
)

// TestEncodeClusterDoc: cluster.yaml encoded node by node is the bytes yaml.v3
// gives for the whole document, on real and generated clusters and on names and
// values yaml.v3 quotes, orders by their numbers, writes as block scalars or as
// complex keys (which take the whole-document path).
func TestEncodeClusterDoc(t *testing.T) {
	var rs []*Rendered
	rs = append(rs, renderSpec(t, repogen.Mitaka(60))...)
	rs = append(rs, renderSpec(t, repogen.Heavy(40))...)
	mitaka, _ := Render(loadMitaka(t, ""), Options{})
	rs = append(rs, mitaka...)
	docs := map[string]map[string]any{}
	for _, r := range rs {
		docs["cluster "+r.Model.Cluster.Name] = clusterDoc(r)
	}
	node := func(id int) map[string]any {
		return map[string]any{"id": id, "roles": []any{"compute"}, "tags": []any{}, "volumes": []any{map[string]any{"id": "os", "allocate_size": "min"}}}
	}
	docs["awkward names"] = map[string]any{
		"cluster": "c", "mode": "ha", "warnings": []any{"two\nlines", "nodes:"},
		"nodes": map[string]any{
			"node-10": node(10), "node-9": node(9), "node-1": node(1), "true": node(2), "a: b": node(3),
			"tab\there": node(4), "10": node(5), "-dash": node(6),
		},
	}
	withNote := node(7)
	withNote["note"] = "first\nsecond\n"
	docs["a block scalar"] = map[string]any{"cluster": "c", "nodes": map[string]any{"a": withNote, "b": node(8)}}
	// Entries the node-by-node path does not write: a key yaml.v3 orders before
	// id, an id that is not an int, no id.
	before, stringID := node(1), node(2)
	before["annotations"], stringID["id"] = "x", "2"
	docs["other entries"] = map[string]any{"cluster": "c", "nodes": map[string]any{"a": before, "b": stringID, "c": map[string]any{"x": 1}}}
	docs["a long name"] = map[string]any{"cluster": "c", "nodes": map[string]any{strings.Repeat("n", 200): node(1), "m": node(2)}}
	docs["no nodes"] = map[string]any{"cluster": "c", "nodes": map[string]any{}}
	docs["nodes last"] = map[string]any{"cluster": "c", "nodes": map[string]any{"b": node(2), "a": node(1)}}
	for name, doc := range docs {
		want, err := encodeYAML(doc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeClusterDoc(doc)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if string(got) != string(want) {
			t.Errorf("%s: encoded node by node:\n%s\nyaml.v3:\n%s", name, got, want)
		}
	}
}
