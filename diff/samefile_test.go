package diff

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/internal/repogen"
)

// TestSplitCatalogue: a task catalogue in the shape render writes is split
// into its entries, each of which decodes alone to what the whole catalogue
// decodes to; any other shape is left to yaml.v3.
func TestSplitCatalogue(t *testing.T) {
	side := renderAll(t, repogen.Generate(repogen.Heavy(12)))
	split := 0
	for name := range side.Digests {
		if kind, _, _, _ := artifactPath(name); kind != "tasks" {
			continue
		}
		data, err := side.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		entries, ok := splitCatalogue(data)
		if !ok {
			t.Errorf("%s: not split", name)
			continue
		}
		split++
		whole, err := decodeCatalogue(name, data)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != len(whole.Tasks) {
			t.Errorf("%s: %d entries split, %d decoded", name, len(entries), len(whole.Tasks))
		}
		for id, raw := range entries {
			alone, err := decodeCatalogue(name, append([]byte("tasks:\n"), raw...))
			if err != nil {
				t.Fatalf("%s: entry %s: %v\n%s", name, id, err, raw)
			}
			if d := cmp.Diff(whole.Tasks[id], alone.Tasks[id], cmp.Comparer(func(a, b yaml.Node) bool { return sameNode(&a, &b) })); d != "" || len(alone.Tasks) != 1 {
				t.Errorf("%s: entry %s decoded alone differs (-whole +alone):\n%s", name, id, d)
			}
		}
	}
	if split == 0 {
		t.Fatal("no task catalogue")
	}
	const head = "cluster: c\nformat_version: 2\ngraph: default\ntasks:\n"
	for _, tc := range []struct {
		name, data string
		want       []string // the ids split; nil: not split
	}{
		{"plain", head + "  a:\n    type: puppet\n  b.1/x-y:\n    parameters:\n      cmd: |\n        x\n\n        y\n    type: shell\n", []string{"a", "b.1/x-y"}},
		{"no entries", head, []string{}},
		{"quoted id", head + "  \"yes\":\n    type: puppet\n", nil},
		{"bool id", head + "  yes:\n    type: puppet\n", nil},
		{"digit first", head + "  1a:\n    type: puppet\n", nil},
		{"explicit key", head + "  ? a\n  : type: puppet\n", nil},
		{"flow entry", head + "  a: {type: puppet}\n", nil},
		{"duplicate id", head + "  a:\n    type: puppet\n  a:\n    type: shell\n", nil},
		{"three spaces", head + "  a:\n   type: puppet\n", nil},
		{"a list", head + "  - a\n", nil},
		{"comment", head + "  # a:\n  a:\n    type: puppet\n", nil},
		{"no newline at the end", head + "  a:\n    type: puppet", nil},
		{"indented header", "cluster: c\n  x: y\ntasks:\n  a:\n    type: puppet\n", nil},
		{"no header", "tasks:\n  a:\n    type: puppet\n", nil},
		{"body before an id", head + "    type: puppet\n", nil},
	} {
		entries, ok := splitCatalogue([]byte(tc.data))
		if tc.want == nil {
			if ok {
				t.Errorf("%s: split into %d entries; want it left to yaml.v3", tc.name, len(entries))
			}
			continue
		}
		var got []string
		for id, raw := range entries {
			got = append(got, id)
			if !strings.HasPrefix(string(raw), "  "+id+":\n") {
				t.Errorf("%s: entry %s is %q", tc.name, id, raw)
			}
		}
		slices.Sort(got)
		if d := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); !ok || d != "" {
			t.Errorf("%s: ids split (-want +got):\n%s", tc.name, d)
		}
	}
}

// FuzzSplitCatalogue: whatever the bytes, splitCatalogue does not panic, and
// when it splits a catalogue that yaml.v3 decodes, it finds the tasks yaml.v3
// finds, each entry decoding alone to the task the whole decodes to.
func FuzzSplitCatalogue(f *testing.F) {
	const head = "cluster: c\nformat_version: 2\ngraph: default\ntasks:\n"
	for _, s := range []string{
		head + "  a:\n    type: puppet\n  b.1/x-y:\n    parameters:\n      cmd: |\n        x\n\n        y\n    type: shell\n",
		head, head + "  yes:\n    type: puppet\n", head + "  a:\n   type: puppet\n",
		head + "  a:\n    type: puppet\n  b:\n    requires: [a]\n    type: shell\n",
		head + "  a:\n    parameters:\n      x: \"tasks:\\n  b:\"\n    type: shell\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, ok := splitCatalogue(data)
		if !ok {
			return
		}
		whole, err := decodeCatalogue("c", data)
		if err != nil {
			return
		}
		if len(entries) != len(whole.Tasks) {
			t.Fatalf("%d entries split, %d tasks decoded", len(entries), len(whole.Tasks))
		}
		for id, raw := range entries {
			alone, err := decodeCatalogue("c", append([]byte("tasks:\n"), raw...))
			if err != nil {
				t.Fatalf("entry %s: %v", id, err)
			}
			if d := cmp.Diff(whole.Tasks[id], alone.Tasks[id], cmp.Comparer(func(a, b yaml.Node) bool { return sameNode(&a, &b) })); d != "" || len(alone.Tasks) != 1 {
				t.Fatalf("entry %s decoded alone differs (-whole +alone):\n%s", id, d)
			}
		}
	})
}
