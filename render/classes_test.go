package render

// Tests of node classes: the nodes of a cluster with the same resolution tags get
// the same tasks and local edges, so validation resolves one node per class and a
// problem of a class's graph is reported once, on its first node.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// classCluster has three classes of cinder nodes: node-4 (compute, cinder),
// node-5..node-7 (cinder), node-8 (cinder, compute written the other way round, the
// same class as node-4), and controllers.
const classCluster = `cluster: prod
release: base-1.0
nodes:
  node-1: {id: 1, roles: [controller]}
  node-2: {id: 2, roles: [controller]}
  node-4: {id: 4, roles: [compute, cinder]}
  node-5: {id: 5, roles: [cinder]}
  node-6: {id: 6, roles: [cinder]}
  node-7: {id: 7, roles: [cinder]}
  node-8: {id: 8, roles: [cinder, compute]}
`

// fullDiagText is diagText with each diagnostic's detail.
func fullDiagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		b.WriteString(diagText(hcl.Diagnostics{d}))
		if d.Detail != "" {
			fmt.Fprintf(&b, "    %s\n", d.Detail)
		}
	}
	return b.String()
}

// validateAndRender runs Validate and Render on the same loaded repository and
// fails the test unless their diagnostics are the same; it returns them.
func validateAndRender(t *testing.T, repo *loader.Repo) hcl.Diagnostics {
	t.Helper()
	_, rd := Render(repo, Options{})
	vd := Validate(repo, Options{})
	if diff := cmp.Diff(fullDiagText(rd), fullDiagText(vd)); diff != "" {
		t.Errorf("Validate's diagnostics differ from Render's (-render +validate):\n%s", diff)
	}
	return rd
}

// TestCycleReportedOncePerClass: a cycle among the tasks of one node is the same
// cycle on every node of its class; it is reported once per class, on the class's
// first node (by id), by render and validate alike.
func TestCycleReportedOncePerClass(t *testing.T) {
	tasks := `- {id: a, type: shell, role: [cinder], requires: [b]}
- {id: b, type: shell, role: [cinder], requires: [a]}
`
	files := graphFiles(semRelease, map[string]string{"default": tasks}, classCluster)
	repo, ld := loader.Load(mapFS(files), loader.Options{})
	noErrors(t, ld)
	diags := validateAndRender(t, repo)
	var got []string
	for _, d := range cycleErrors(diags) {
		got = append(got, d.Summary)
	}
	want := []string{
		"graph default: dependency cycle: b@node-4 -> a@node-4 -> b@node-4",
		"graph default: dependency cycle: b@node-5 -> a@node-5 -> b@node-5",
	}
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cycle errors (-want +got):\n%s", diff)
	}
}

// TestCrossNodeCycleNamesItsNodes: a cycle through cross-dependencies between nodes
// of two classes names the nodes it passes, in validate as in render.
func TestCrossNodeCycleNamesItsNodes(t *testing.T) {
	tasks := `- id: x
  type: shell
  role: [compute]
  cross-depends: [{name: y, role: [controller]}]
- id: y
  type: shell
  role: [controller]
  cross-depends: [{name: x, role: [compute], policy: any}]
`
	files := graphFiles(semRelease, map[string]string{"default": tasks}, classCluster)
	repo, ld := loader.Load(mapFS(files), loader.Options{})
	noErrors(t, ld)
	diags := validateAndRender(t, repo)
	cycles := cycleErrors(diags)
	if len(cycles) != 1 || !strings.Contains(cycles[0].Summary, "x@node-4 -> y@node-2 -> x@node-4") {
		t.Errorf("cycle errors:\n%s\nwant one, x@node-4 -> y@node-2 -> x@node-4", diagText(cycles))
	}
}

// TestValidateResolvesOneNodePerClass: in class mode a graph holds the first node of
// each class (and the pseudo nodes), with the tasks and edges every node of the
// class has in the full graph.
func TestValidateResolvesOneNodePerClass(t *testing.T) {
	tasks := `- {id: base, type: shell, role: '*'}
- {id: vol, type: shell, role: [cinder], requires: [base]}
- {id: nova, type: shell, role: [compute], requires: [base]}
- id: attach
  type: shell
  role: [compute]
  requires: [nova]
  cross-depends: [{name: vol, role: [cinder]}]
`
	files := graphFiles(semRelease, map[string]string{"default": tasks}, classCluster)
	repo, ld := loader.Load(mapFS(files), loader.Options{})
	noErrors(t, ld)
	rs, diags := Render(repo, Options{})
	noErrors(t, diags)
	m := rs[0].Model
	full := rs[0].Graph("default")
	g, d := m.renderGraph("default", true)
	noErrors(t, d)
	var names []string
	for _, ng := range g.Nodes {
		names = append(names, ng.Node)
	}
	// node-1 is primary-controller, node-2 controller; node-8 is node-4's class,
	// node-6 and node-7 node-5's.
	if diff := cmp.Diff([]string{"node-1", "node-2", "node-4", "node-5"}, names); diff != "" {
		t.Fatalf("class mode nodes (-want +got):\n%s", diff)
	}
	for _, ng := range g.Nodes {
		// Edges to other nodes land on their class's first node: compare the local
		// part only.
		local := func(lines []string) []string {
			var out []string
			for _, l := range lines {
				out = append(out, strings.Fields(l)[0])
			}
			return out
		}
		if diff := cmp.Diff(local(taskLines(full.Node(ng.Node))), local(taskLines(ng))); diff != "" {
			t.Errorf("%s: tasks (-full +class):\n%s", ng.Node, diff)
		}
	}
	if got := taskLines(g.Node("node-4")); !slices.Contains(got, "attach shell <- nova@node-4 vol@node-4 vol@node-5") {
		t.Errorf("node-4 in class mode: %q, want attach to require vol on node-4 and node-5 (the cinder classes)", got)
	}
}

// TestValidateMatchesRender: on every bad-input case of the renderer, the examples
// and a generated repository, Validate reports exactly what Render reports.
func TestValidateMatchesRender(t *testing.T) {
	t.Run("cases", func(t *testing.T) {
		for _, tc := range renderCases() {
			t.Run(tc.name, func(t *testing.T) {
				repo, ld := loader.Load(mapFS(applyEdits(t, baseFiles(), tc.edits)), loader.Options{})
				if ld.HasErrors() {
					t.Skip("does not load")
				}
				validateAndRender(t, repo)
			})
		}
	})
	t.Run("graphs", func(t *testing.T) {
		for i, tasks := range []string{
			"- {id: a, type: shell, role: [primary-controller], requires: [b]}\n- {id: b, type: shell, role: [primary-controller], requires: [a]}\n",
			"- {id: a, type: shell, role: [controller], required_for: [b]}\n- {id: b, type: shell, role: [controller], required_for: [a]}\n",
			"- {id: hiera, type: puppet}\n- {id: g, type: group, role: [compute], tasks: [hiera, hieraa]}\n",
			"- {id: s, type: stage}\n- {id: a, type: shell, role: '*', required_for: [s], requires: [missing]}\n- {id: b, type: shell, role: [cinder], condition: 'settings:common.debug.value == true'}\n",
			"- {id: a, type: shell, role: [cinder], cross-depends: [{name: a, role: [cinder]}]}\n",
		} {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				files := graphFiles(semRelease, map[string]string{"default": tasks}, classCluster)
				repo, ld := loader.Load(mapFS(files), loader.Options{})
				noErrors(t, ld)
				validateAndRender(t, repo)
			})
		}
	})
	t.Run("examples", func(t *testing.T) {
		dirs, _ := filepath.Glob("../examples/*")
		for _, dir := range dirs {
			if st, err := os.Stat(filepath.Join(dir, "clusters")); err != nil || !st.IsDir() {
				continue
			}
			t.Run(filepath.Base(dir), func(t *testing.T) {
				repo, ld := loader.Load(os.DirFS(dir), loader.Options{})
				noErrors(t, ld)
				validateAndRender(t, repo)
			})
		}
	})
	t.Run("generated", func(t *testing.T) {
		repo, ld := loader.Load(repogen.Generate(repogen.Spec{Plugins: 5, Tasks: 300, Nodes: 120, Clusters: 3, Seed: 2}), loader.Options{})
		noErrors(t, ld)
		validateAndRender(t, repo)
	})
}
