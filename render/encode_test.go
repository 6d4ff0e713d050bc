package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// checkEncoder compares the node encoder with yaml.v3 on the generic document for
// every node graph of rs. It returns how many documents the encoder wrote itself
// (the others took the fallback).
func checkEncoder(t *testing.T, rs []*Rendered) (direct, total int) {
	t.Helper()
	e := newNodeEncoder(&defBlocks{})
	for _, r := range rs {
		for _, g := range r.Graphs {
			for _, ng := range g.Nodes {
				want, err := encodeYAML(nodeDocument(r.Model, g, ng))
				if err != nil {
					t.Fatal(err)
				}
				total++
				e.buf.Reset()
				if err := e.write(r.Model, g, ng); err == nil {
					direct++
					if diff := cmp.Diff(string(want), e.buf.String()); diff != "" {
						t.Errorf("%s/%s/%s: the encoder differs from yaml.v3 (-yaml.v3 +encoder):\n%s", r.Model.Cluster.Name, g.Type, ng.Node, diff)
					}
				} else if err != errSlowPath {
					t.Fatalf("%s/%s/%s: %v", r.Model.Cluster.Name, g.Type, ng.Node, err)
				}
				got, err := e.node(r.Model, g, ng)
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != string(want) {
					t.Errorf("%s/%s/%s: node() differs from yaml.v3", r.Model.Cluster.Name, g.Type, ng.Node)
				}
			}
		}
	}
	return direct, total
}

// TestEncoderMitaka: the real release and plugins, every graph type, byte for byte.
func TestEncoderMitaka(t *testing.T) {
	r, _ := renderMitakaCeph(t)
	direct, total := checkEncoder(t, []*Rendered{r})
	if direct != total {
		t.Errorf("%d of %d documents took the fallback", total-direct, total)
	}
}

func TestEncoderGenerated(t *testing.T) {
	repo, ld := loader.Load(repogen.Generate(repogen.Spec{Plugins: 4, Tasks: 300, Nodes: 30, Clusters: 2, Seed: 9}), loader.Options{})
	if ld.HasErrors() {
		t.Fatalf("the generated repository does not load:\n%s", diagText(ld))
	}
	rs, diags := Render(repo, Options{})
	noErrors(t, diags)
	direct, total := checkEncoder(t, rs)
	if direct != total {
		t.Errorf("%d of %d documents took the fallback", total-direct, total)
	}
}

// TestEncoderAwkwardValues: scalars yaml.v3 quotes (words it reads as booleans or
// null, numbers, leading indicators, colons), parameters with block scalars, blank
// lines, long lines, unicode, nested lists and empty maps, yaql conditions and
// dynamic requirements, a skipped task, instance tags.
func TestEncoderAwkwardValues(t *testing.T) {
	r, diags := renderFiles(t, awkwardFiles(), nil)
	noErrors(t, diags)
	direct, total := checkEncoder(t, []*Rendered{r})
	if direct == 0 {
		t.Errorf("every one of %d documents took the fallback", total)
	}
}

const longLine = "a line longer than eighty characters, which yaml.v2 would have folded but yaml.v3 keeps on one line"

// TestEncoderFallback: a value the encoder does not write itself (a multi-line
// node or task name cannot occur, so the scalar check is driven directly) sends the
// document to yaml.v3.
func TestEncoderFallback(t *testing.T) {
	e := newNodeEncoder(&defBlocks{})
	for s, want := range map[string]string{
		"plain":     "plain",
		"off":       `"off"`,
		"1.5":       `"1.5"`,
		"a: b":      `'a: b'`,
		"#x":        `'#x'`,
		"null":      `"null"`,
		"two\nline": "",
	} {
		got, ok := e.scalar(s)
		if got != want || ok != (want != "") {
			t.Errorf("scalar(%q) = %q, %v; want %q", s, got, ok, want)
		}
	}
}

// TestDOTQuoting: names reach DOT ids and labels escaped (the loader's name rules
// keep quotes and backslashes out today; DOT does not rely on it).
func TestDOTQuoting(t *testing.T) {
	a := &PlacedTask{Def: &TaskDef{Task: &loader.Task{ID: `a"b`}, typ: "skipped"}}
	b := &PlacedTask{Def: &TaskDef{Task: &loader.Task{ID: "c"}, typ: "shell"}, requires: []Edge{{raw: a}}}
	g := &Graph{Type: "default", Nodes: []*NodeGraph{{Node: `n\1`, Tasks: []*PlacedTask{a, b}}}}
	a.node, b.node = g.Nodes[0], g.Nodes[0]
	want := `digraph "x\"y/default" {
  rankdir=LR;
  node [shape=box, fontsize=10];
  subgraph cluster_0 {
    label="n\\1";
    "a\"b@n\\1" [label="a\"b", style=dashed];
    "c@n\\1" [label="c"];
  }
  "a\"b@n\\1" -> "c@n\\1";
}
`
	if diff := cmp.Diff(want, string(DOT(`x"y`, g))); diff != "" {
		t.Errorf("DOT (-want +got):\n%s", diff)
	}
}

// checkStoredEncoder compares the writers of the stored layout (node files and
// task catalogues) with yaml.v3 on their generic documents, for every node graph
// and graph of rs, and checks that the expanded view computed from them is the
// expanded layout. It returns how many documents the writers wrote themselves.
func checkStoredEncoder(t *testing.T, rs []*Rendered) (direct, total int) {
	t.Helper()
	e := newNodeEncoder(&defBlocks{})
	check := func(what string, want []byte, write func() error, full func() ([]byte, error)) {
		t.Helper()
		total++
		e.buf.Reset()
		if err := write(); err == nil {
			direct++
			if diff := cmp.Diff(string(want), e.buf.String()); diff != "" {
				t.Errorf("%s: the writer differs from yaml.v3 (-yaml.v3 +writer):\n%s", what, diff)
			}
		} else if err != errSlowPath {
			t.Fatalf("%s: %v", what, err)
		}
		got, err := full()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: the fallback differs from yaml.v3", what)
		}
	}
	for _, r := range rs {
		name := r.Model.Cluster.Name
		for _, g := range r.Graphs {
			c := catalogueOf(g)
			want, err := encodeYAML(catalogueDocument(name, g, c.tasks))
			if err != nil {
				t.Fatal(err)
			}
			check(CataloguePath(name, g.Type), want, func() error { return e.writeCatalogue(name, g, c.tasks) },
				func() ([]byte, error) { return e.catalogue(r.Model, g) })
			for _, ng := range g.Nodes {
				want, err := encodeYAML(nodeFileDocument(r.Model, g, ng))
				if err != nil {
					t.Fatal(err)
				}
				check(NodeAddress(name, ng.Node, g.Type).String(), want, func() error { return e.writeNodeFile(r.Model, g, ng) },
					func() ([]byte, error) { return e.nodeFile(r.Model, g, ng) })
			}
		}
	}
	checkExpand(t, rs)
	return direct, total
}

// TestStoredEncoder: the writers of the stored layout write what yaml.v3 writes,
// on the real release, a generated fleet and awkward values.
func TestStoredEncoder(t *testing.T) {
	t.Run("mitaka", func(t *testing.T) {
		r, _ := renderMitakaCeph(t)
		if direct, total := checkStoredEncoder(t, []*Rendered{r}); direct != total {
			t.Errorf("%d of %d documents took the fallback", total-direct, total)
		}
	})
	t.Run("generated", func(t *testing.T) {
		repo, ld := loader.Load(repogen.Generate(repogen.Spec{Plugins: 4, Tasks: 300, Nodes: 30, Clusters: 2, Seed: 9, CrossDepends: 60, StageFanIn: true}), loader.Options{})
		rs := loadRender(t, repo, ld)
		if direct, total := checkStoredEncoder(t, rs); direct != total {
			t.Errorf("%d of %d documents took the fallback", total-direct, total)
		}
	})
	t.Run("awkward", func(t *testing.T) {
		r, diags := renderFiles(t, awkwardFiles(), nil)
		noErrors(t, diags)
		if direct, total := checkStoredEncoder(t, []*Rendered{r}); direct == 0 {
			t.Errorf("every one of %d documents took the fallback", total)
		}
	})
}

// awkwardFiles is the repository of TestEncoderAwkwardValues: scalars yaml.v3
// quotes (words it reads as booleans or null, numbers, leading indicators,
// colons), parameters with block scalars, blank lines, long lines, unicode, nested
// lists and empty maps, yaql conditions and dynamic requirements, a skipped task,
// instance tags.
func awkwardFiles() map[string]string {
	tasks := `- {id: deploy_start, type: stage}
- id: "off"
  type: shell
  role: [controller]
  requires: [deploy_start]
  parameters:
    cmd: |
      first line

      after a blank line
        indented: yes
    long: "` + longLine + `"
    quoted: "yes"
    number_like: "1.50"
    empty: {}
    nested: [[1, 2], {a: ~, "b c": 'x: y'}, "- dash"]
    unicode: "héllo — ☃"
    tab: "a\tb"
    trailing: "space "
- id: "15"
  type: puppet
  role: ['*']
  requires: ["off"]
  condition: {yaql_exp: 'changed($.debug) and $.x = "#"'}
  cross-depends: {yaql_exp: '$.roles.select(...)'}
  parameters: {puppet_manifest: "/x.pp", timeout: 3600}
- id: "null"
  type: shell
  role: [compute]
  condition: "settings:common.debug.value == true"
  parameters: {cmd: "never"}
- id: "yes"
  type: shell
  role: [compute]
  requires: ["15"]
`
	cluster := strings.Replace(semCluster, "node-1: {id: 1, roles: [controller]}",
		"node-1: {id: 1, roles: [controller], tags: {assign: ['corosync:1', 'mysql:2']}}", 1) +
		"tags:\n  corosync: {has_primary: false}\n  mysql: {has_primary: false}\n"
	return graphFiles(semRelease, map[string]string{"default": tasks}, cluster)
}

// TestTargetFlow: an edge's scalars are plain in a flow list only when they are
// the strings themselves without flow indicators (the loader's name rules keep
// those out today; the node file writer does not rely on it), the same on the
// first call, which works them out, and on later ones, which reuse them.
func TestTargetFlow(t *testing.T) {
	g := &Graph{ids: []string{"a:b", "c", "yes"}}
	plain := &NodeGraph{Node: "node-1", g: g, rank: 0}
	odd := &NodeGraph{Node: "n#1", g: g, rank: 1}
	task := func(ng *NodeGraph, idx int32) Edge {
		return Edge{raw: &PlacedTask{Def: defWithID(g.ids[idx]), node: ng, idx: idx}}
	}
	e := newNodeEncoder(&defBlocks{})
	for round := range 2 {
		for _, tc := range []struct {
			ed   Edge
			flow bool
		}{
			{task(plain, 1), true},
			{task(plain, 0), false}, // ':' in the task id
			{task(odd, 1), false},   // '#' in the node name
			{task(plain, 2), false}, // quoted: 'yes'
			// Tasks of no graph (the ids worked out each time).
			{Edge{raw: &PlacedTask{Def: defWithID("x"), node: &NodeGraph{Node: "node-1"}}}, true},
			{Edge{raw: &PlacedTask{Def: defWithID("x,y"), node: &NodeGraph{Node: "node-1"}}}, false},
		} {
			_, _, flow, ok := e.targetFlow(tc.ed)
			if !ok || flow != tc.flow {
				t.Errorf("round %d: targetFlow(%s@%s) = %v, %v; want %v, true", round, tc.ed.Task(), tc.ed.Node(), flow, ok, tc.flow)
			}
		}
	}
}

// plainWord says yes only to what yaml.v3 writes as it is, as a value and as a
// key; the words YAML reads as booleans or null, numbers and indicators are
// left to yaml.v3.
func TestPlainWord(t *testing.T) {
	for s, want := range map[string]bool{
		"controller": true, "primary-controller": true, "fuel_pkgs": true, "a/b.pp": true, "Node-01": true,
		"NO": false, "Off": false, "y": false, "N": false, "yes": false, "True": false, "null": false, "NULL": false,
		"nulls": true, "yesterday": true, "": false, "1.5": false, "-a": false, ".inf": false, "a:b": false,
		"a b": false, "a#b": false, strings.Repeat("a", 64): true, strings.Repeat("a", 65): false, "é": false,
	} {
		if got := plainWord(s); got != want {
			t.Errorf("plainWord(%q) = %v, want %v", s, got, want)
		}
		checkPlainWord(t, s)
	}
}

// checkPlainWord fails when plainWord says s is written as it is and yaml.v3
// writes it otherwise, as a value or as a key.
func checkPlainWord(t *testing.T, s string) {
	t.Helper()
	if !plainWord(s) {
		return
	}
	if b, err := yaml.Marshal(s); err != nil || string(b) != s+"\n" {
		t.Errorf("yaml.v3 writes %q as %q (%v), not as it is", s, b, err)
	}
	if b, err := yaml.Marshal(map[string]int{s: 1}); err != nil || string(b) != s+": 1\n" {
		t.Errorf("yaml.v3 writes the key %q as %q (%v), not as it is", s, b, err)
	}
}

func FuzzPlainWord(f *testing.F) {
	for _, s := range []string{"controller", "on", "Yes", "a-1.b/c_d", "x1e5", "n0"} {
		f.Add(s)
	}
	f.Fuzz(checkPlainWord)
}
