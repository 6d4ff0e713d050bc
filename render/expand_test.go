package render

import (
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// checkExpand renders rs in both layouts and checks that the expanded view
// computed from the stored set (format 2) is, for every node and graph, the node
// file of the expanded layout (format 1) byte for byte: the stored format loses
// nothing. It returns the stored set.
func checkExpand(t *testing.T, rs []*Rendered) fstest.MapFS {
	t.Helper()
	stored, err := Files(rs, "rev", "test")
	if err != nil {
		t.Fatal(err)
	}
	expanded, err := FilesExpanded(rs, "rev", "test")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"stored": FormatCatalogue, "expanded": FormatExpanded} {
		files := stored
		if name == "expanded" {
			files = expanded
		}
		var m struct {
			FormatVersion string `json:"format_version"`
		}
		if err := json.Unmarshal(files["manifest.json"], &m); err != nil {
			t.Fatal(err)
		}
		if m.FormatVersion != want {
			t.Errorf("%s layout: manifest format_version %q, want %q", name, m.FormatVersion, want)
		}
	}
	fsys := fstest.MapFS{}
	for name, data := range stored {
		fsys[name] = &fstest.MapFile{Data: data}
	}
	got, err := ExpandSet(fsys)
	if err != nil {
		t.Fatal(err)
	}
	nodes := 0
	for name, want := range expanded {
		if !strings.Contains(name, "/nodes/") {
			if _, ok := stored[name]; !ok && name != "manifest.json" {
				t.Errorf("%s is in the expanded layout only", name)
			}
			continue
		}
		nodes++
		if _, ok := got[name]; !ok {
			t.Errorf("%s: not expanded", name)
			continue
		}
		if string(got[name]) != string(want) {
			t.Errorf("%s: the expanded view differs from the expanded layout (-layout +view):\n%s", name, cmp.Diff(string(want), string(got[name])))
		}
	}
	if len(got) != nodes {
		t.Errorf("%d node files expanded, the expanded layout has %d", len(got), nodes)
	}
	for _, r := range rs {
		for _, g := range r.Graphs {
			if _, ok := stored[CataloguePath(r.Model.Cluster.Name, g.Type)]; !ok {
				t.Errorf("no task catalogue for %s/%s", r.Model.Cluster.Name, g.Type)
			}
		}
	}
	return fsys
}

func loadRender(t *testing.T, repo *loader.Repo, ld hcl.Diagnostics) []*Rendered {
	t.Helper()
	if ld.HasErrors() {
		t.Fatalf("the repository does not load:\n%s", diagText(ld))
	}
	rs, diags := Render(repo, Options{})
	noErrors(t, diags)
	return rs
}

// TestExpandExamples: every example, the upstream Fuel 9.x data included.
func TestExpandExamples(t *testing.T) {
	for _, name := range []string{"quickstart", "fuel-mitaka", "tripleo-capabilities"} {
		t.Run(name, func(t *testing.T) {
			repo, ld := loader.Load(os.DirFS("../examples/"+name), loader.Options{})
			rs := loadRender(t, repo, ld)
			checkExpand(t, rs)
		})
	}
}

// TestExpandGenerated: a generated fleet with cross-node dependencies and every
// task required for two stages of sync.
func TestExpandGenerated(t *testing.T) {
	spec := repogen.Spec{Plugins: 6, Tasks: 600, Nodes: 300, Clusters: 2, Seed: 5, CrossDepends: 60, StageFanIn: true}
	repo, ld := loader.Load(repogen.Generate(spec), loader.Options{})
	rs := loadRender(t, repo, ld)
	fsys := checkExpand(t, rs)
	// The stages' fan-in is in the catalogue, not in sync's file.
	implied := 0
	for _, r := range rs {
		for _, g := range r.Graphs {
			sync := g.Node(SyncNode)
			if sync == nil {
				continue
			}
			for _, pt := range sync.Tasks {
				rule := newStageRule(sync, pt)
				for _, ed := range pt.AllRequires() {
					if rule.implied(ed) {
						implied++
					}
				}
			}
		}
	}
	if implied < 1000 {
		t.Errorf("only %d requirements of the stages are implied by the catalogue; the test wants fan-in", implied)
	}
	scanned := 0
	for name, f := range fsys {
		if strings.HasSuffix(name, "/nodes/sync/default.yaml") && len(f.Data) > 64<<10 {
			t.Errorf("%s is %d bytes: the stages' fan-in is written out", name, len(f.Data))
		}
		// The sync node's view reads the other nodes' task ids by a line scan
		// where it can: the same ids as the parser's.
		if !strings.Contains(name, "/nodes/") {
			continue
		}
		nf, err := ParseNodeFile(f.Data)
		if err != nil {
			t.Fatal(err)
		}
		if fast, ok := ScanNodeFile(f.Data); ok {
			scanned++
			if diff := cmp.Diff(scanView(nf), scanView(fast)); diff != "" {
				t.Errorf("%s: scanned (-parsed +scanned):\n%s", name, diff)
			}
		}
	}
	if scanned == 0 {
		t.Error("no node file was read by the line scan")
	}
}

// TestStoredInlineDefinition: a node file of format 2 may carry a task's definition
// inline (an older fuelsync wrote one when two plugins defined one id for disjoint
// nodes, which is now an error of the model): the catalogue's entry of the id stands
// for the other nodes, and the node's expanded view has its own definition.
func TestStoredInlineDefinition(t *testing.T) {
	files := graphFiles(semRelease, map[string]string{"default": overrideTasks},
		strings.Replace(semCluster, "nodes:\n", "plugins: [p1]\nnodes:\n", 1))
	addPlugin(files, "p1", map[string]string{"deployment_tasks.yaml": "- {id: l2, type: shell, role: '*', parameters: {cmd: p1.sh}}\n"})
	r, diags := renderFiles(t, files, nil)
	noErrors(t, diags)
	fsys := checkExpand(t, []*Rendered{r})
	if cat := string(fsys["prod/tasks/default.yaml"].Data); !strings.Contains(cat, "  l2:\n    parameters:\n      cmd: p1.sh\n") {
		t.Fatalf("the catalogue's l2 is not p1's:\n%s", cat)
	}
	name := "prod/nodes/node-4/default.yaml"
	data := string(fsys[name].Data)
	if strings.Contains(data, "p1.sh") {
		t.Fatalf("%s has a definition inline:\n%s", name, data)
	}
	edited := strings.Replace(data, "  - id: l2\n", "  - id: l2\n    parameters:\n      puppet_manifest: p2.pp\n    type: puppet\n", 1)
	if edited == data {
		t.Fatalf("%s has no task l2:\n%s", name, data)
	}
	fsys[name] = &fstest.MapFile{Data: []byte(edited)}
	nf, err := ParseNodeFile([]byte(edited))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range nf.Tasks {
		if task.Inline != (task.ID == "l2") {
			t.Errorf("ParseNodeFile: %s inline = %v", task.ID, task.Inline)
		}
	}
	expanded, err := ExpandNode(fsys, "prod", "node-4", "default")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(expanded), "  - id: l2\n    parameters:\n      puppet_manifest: p2.pp\n    type: puppet\n") {
		t.Errorf("node-4's expanded l2 is not its inline definition:\n%s", expanded)
	}
	expanded, err = ExpandNode(fsys, "prod", "node-5", "default")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(expanded), "cmd: p1.sh") {
		t.Errorf("node-5's expanded l2 is not the catalogue's:\n%s", expanded)
	}
}

// TestParseNodeFileErrors: what is not a node file of format 2 is an error, and a
// node file of format 1 is ErrExpanded.
func TestParseNodeFileErrors(t *testing.T) {
	head := "cluster: c\nformat_version: 2\ngraph: default\ninstances: {}\nnode: n-1\nroles: []\ntags: []\n"
	for name, data := range map[string]string{
		"format 3":           strings.Replace(head, "format_version: 2", "format_version: 3", 1) + "tasks: []\n",
		"no tasks":           head,
		"empty id":           head + "tasks:\n  - id: \"\"\n",
		"empty task":         head + "tasks:\n  - id: a\n    requires: [\"@n-2\"]\n",
		"empty node":         head + "tasks:\n  - id: a\n    requires: [b@]\n",
		"unknown key":        head + "tasks:\n  - id: a\n    colour: red\n",
		"definition no type": head + "tasks:\n  - id: a\n    parameters: {x: 1}\n",
		"flow entry":         head + "tasks:\n  - {id: a, type: shell}\n",
		"node with @":        strings.Replace(head, "node: n-1", "node: n@1", 1) + "tasks: []\n",
	} {
		if _, err := ParseNodeFile([]byte(data)); err == nil || errors.Is(err, ErrExpanded) {
			t.Errorf("%s: err = %v, want a parse error", name, err)
		}
	}
	if _, err := ParseNodeFile([]byte("cluster: c\ngraph: default\nnode: n-1\ntasks: []\n")); !errors.Is(err, ErrExpanded) {
		t.Errorf("format 1: err = %v, want ErrExpanded", err)
	}
	nf, err := ParseNodeFile([]byte(head + "tasks:\n  - id: a\n  - id: b\n    requires: [a, x@y@n-2, 'a@b@n-1']\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Requirement{{"a", "n-1"}, {"x@y", "n-2"}, {"a@b", "n-1"}}
	if diff := cmp.Diff(want, nf.Tasks[1].Requires); diff != "" {
		t.Errorf("requirements (-want +got):\n%s", diff)
	}
}

// TestKeyBlocksLineBreaks: the blocks of a node file's and a catalogue's keys
// are cut at the line breaks YAML counts (a lone CR, CRLF, NEL, LS, PS, as well
// as LF), so a file holding one neither panics nor cuts a key's block at another
// line; yaml.v3 writes LS raw in a parameter's value, as the last case shows.
func TestKeyBlocksLineBreaks(t *testing.T) {
	head := "cluster: c\nformat_version: 2\ngraph: default\ninstances: {}\nnode: n-1\nroles: [r]\ntags: [r]\n"
	for name, br := range map[string]string{"LF": "\n", "CR": "\r", "CRLF": "\r\n", "NEL": "\u0085", "LS": "\u2028", "PS": "\u2029"} {
		nf, err := ParseNodeFile([]byte(head + "tasks:\n  - id: a\n    type: shell" + br + "    parameters: {x: 1}\n"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		def := nf.Tasks[0].def
		if got, want := string(def.typ), "    type: shell"+br; got != want {
			t.Errorf("%s: type block %q, want %q", name, got, want)
		}
		if got, want := string(def.params), "    parameters: {x: 1}\n"; got != want {
			t.Errorf("%s: parameters block %q, want %q", name, got, want)
		}
	}
	cat, err := parseCatalogue([]byte("cluster: c\nformat_version: 2\ngraph: default\ntasks:\n  a:\n    parameters:\n      x: |-\n        a\u2028        b\n        c\n    type: shell\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(cat.entries["a"].typ), "    type: shell\n"; got != want {
		t.Errorf("catalogue: type block %q, want %q", got, want)
	}
}

// FuzzParseNodeFile: whatever a node file holds, parsing it and expanding it
// against a small catalogue never panics; what parses has requirements with a
// task and a node, and a node name without '@'.
func FuzzParseNodeFile(f *testing.F) {
	head := "cluster: c\nformat_version: 2\ngraph: default\ninstances: {}\nnode: n-1\nroles: [r]\ntags: [r]\n"
	f.Add(head + "tasks:\n  - id: a\n  - id: b\n    requires: [a, c@n-2]\n")
	f.Add(head + "tasks:\n  - condition:\n      yaql_exp: x\n    id: a\n    parameters: {}\n    stages: [s]\n    type: shell\n")
	f.Add(head + "tasks: []\n")
	f.Add("cluster: c\ngraph: default\nnode: n-1\ntasks: []\n")
	f.Add(head + "tasks:\n  - id: 'a@b'\n    requires: ['a@b@n-1', \"x\"]\n")
	cat, err := parseCatalogue([]byte("cluster: c\nformat_version: 2\ngraph: default\ntasks:\n  a:\n    parameters:\n      x: 1\n    stages: [s]\n    type: shell\n  b:\n    type: puppet\n"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data string) {
		// The line scan of task ids agrees with the parser where it answers.
		if fast, ok := ScanNodeFile([]byte(data)); ok {
			nf, err := ParseNodeFile([]byte(data))
			if err != nil {
				t.Fatalf("scanned, but the parser refuses it: %v", err)
			}
			if diff := cmp.Diff(scanView(nf), scanView(fast)); diff != "" {
				t.Errorf("scanned (-parsed +scanned):\n%s", diff)
			}
		}
		nf, err := ParseNodeFile([]byte(data))
		if err != nil {
			return
		}
		if strings.Contains(nf.Node, "@") {
			t.Errorf("node %q", nf.Node)
		}
		for _, task := range nf.Tasks {
			for _, r := range task.Requires {
				if r.Task == "" || r.Node == "" || strings.Contains(r.Node, "@") {
					t.Errorf("task %s: requirement %+v", task.ID, r)
				}
			}
		}
		implied := map[string][]edge{"a": {{Requirement{"b", "n-2"}, 1}}}
		ranks := func(string) (map[string]int, error) { return map[string]int{"n-1": 0, "n-2": 1}, nil }
		_, _ = expandNodeFile(nf, cat, implied, ranks)
		_, _ = parseCatalogue([]byte(data))
	})
}

// TestParsedCatalogueCache: a catalogue is parsed once per content (the same
// bytes give the same parse), other bytes give their own, and the cache is bounded.
func TestParsedCatalogueCache(t *testing.T) {
	doc := func(i int) []byte {
		return []byte("cluster: c\nformat_version: 2\ngraph: default\ntasks:\n  a:\n    parameters:\n      n: " + strconv.Itoa(i) + "\n    type: shell\n")
	}
	first, err := parsedCatalogue(doc(0))
	if err != nil {
		t.Fatal(err)
	}
	again, _ := parsedCatalogue(doc(0))
	other, _ := parsedCatalogue(doc(1))
	if first != again || first == other {
		t.Errorf("same bytes parsed twice (%v) or other bytes share a parse (%v)", first != again, first == other)
	}
	if got := string(other.entries["a"].params); got != "    parameters:\n      n: 1\n" {
		t.Errorf("parameters block %q", got)
	}
	for i := 2; i < 3*maxParsedCatalogues; i++ {
		if _, err := parsedCatalogue(doc(i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(parsedCatalogues.m); n > maxParsedCatalogues {
		t.Errorf("%d catalogues kept, at most %d", n, maxParsedCatalogues)
	}
}

// scanView is what ScanNodeFile reads of a node file: its names, and each task's
// id and requirements.
func scanView(nf *NodeFile) []string {
	out := []string{nf.Cluster, nf.Graph, nf.Node}
	for _, t := range nf.Tasks {
		line := t.ID + ":"
		for _, r := range t.Requires {
			line += " " + r.Task + "@" + r.Node
		}
		out = append(out, line)
	}
	return out
}
