package render

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
)

// sharedTasks bind tasks across every node (entries without a node selector),
// with `self` entries before and after them, cross-depended-by entries bound
// before (late, on the master, which comes after the cluster's nodes) and after
// them to the same targets, an entry naming the task's own id,
// a regular expression, policy any and a local edge to a shared target.
const sharedTasks = `- {id: deploy_start, type: stage}
- {id: deploy_end, type: stage, requires: [deploy_start]}
- {id: a, type: shell, role: '*', requires: [deploy_start], required_for: [deploy_end],
   cross-depended-by: [{name: check, role: [controller]}, {name: late, role: [master]}]}
- {id: late, type: shell, role: [master], cross-depends: [{name: a}]}
- {id: b, type: shell, role: [compute, cinder], requires: [a]}
- {id: c, type: shell, role: [controller, master], requires: [deploy_start]}
- id: check
  type: shell
  role: '*'
  requires: [a]
  cross-depends:
    - {name: a}
    - {name: /^(b|c)$/}
    - {name: check, policy: any}
    - {name: c, role: [controller], policy: any}
- id: self-after
  type: shell
  role: '*'
  cross-depends: [{name: /^(a|b)$/}, {name: b, role: self}]
- id: self-before
  type: shell
  role: [compute, cinder]
  cross-depends: [{name: b, role: self}, {name: /^(a|b)$/}]
- id: few
  type: shell
  role: [cinder]
  cross-depends: [{name: a, role: [controller]}]
`

// sharedCluster has classes of 1 (primary-controller), 2 (controller), 7
// (compute), 4 (compute and cinder) and 2 (cinder) nodes, with ids out of name
// order.
func sharedCluster() string {
	var b strings.Builder
	b.WriteString("cluster: prod\nrelease: base-1.0\nnodes:\n")
	roles := []string{"controller", "controller", "controller"}
	for range 7 {
		roles = append(roles, "compute")
	}
	for range 4 {
		roles = append(roles, "compute, cinder")
	}
	roles = append(roles, "cinder", "cinder")
	for i, r := range roles {
		fmt.Fprintf(&b, "  node-%d: {id: %d, roles: [%s]}\n", i+1, (i*7)%len(roles)+1, r)
	}
	return b.String()
}

// renderShared renders the shared-edges repository with sharedMinEdges set to min.
func renderShared(t *testing.T, min int) *Rendered {
	t.Helper()
	r, diags := renderSharedTasks(t, min, sharedTasks)
	noErrors(t, diags)
	return r
}

// renderSharedTasks renders tasks as the default graph of sharedCluster with
// sharedMinEdges set to min.
func renderSharedTasks(t *testing.T, min int, tasks string) (*Rendered, hcl.Diagnostics) {
	t.Helper()
	old := sharedMinEdges
	sharedMinEdges = min
	defer func() { sharedMinEdges = old }()
	return renderFiles(t, graphFiles(semRelease, map[string]string{"default": tasks}, sharedCluster()), nil)
}

// graphEdgeLines describes every task of every node of g, in order: its edges (target,
// origin, entry), how many NumRequires counts, and its node file's requirements.
func graphEdgeLines(t *testing.T, r *Rendered, g *Graph) []string {
	var out []string
	for _, ng := range g.Nodes {
		files, ok := r.NodeFileTasks(g.Type, ng.Node)
		if !ok {
			t.Fatalf("no node file tasks of %s", ng.Node)
		}
		for i, pt := range ng.Tasks {
			line := fmt.Sprintf("%s %s (%d):", ng.Node, pt.ID(), pt.NumRequires())
			for e := range pt.Requires() {
				line += fmt.Sprintf(" %s@%s %s %s", e.Task(), e.Node(), e.Describe(), e.Range)
			}
			out = append(out, line, fmt.Sprintf("%s %s file: %v", ng.Node, pt.ID(), files[i].Requires))
		}
	}
	return out
}

// TestSharedEdgesAsCopied: tasks that share their definition's cross-node edges
// (sharedEdges) have the edges, in the order and with the sources, that each
// would hold with every edge copied onto it, and every artifact (node files, DOT
// files, the expanded view) is byte for byte the same.
func TestSharedEdgesAsCopied(t *testing.T) {
	copied, shared := renderShared(t, 1<<30), renderShared(t, 1)
	g, gc := shared.Graph("default"), copied.Graph("default")
	sharing, unshared := 0, 0
	for _, ng := range g.Nodes {
		for _, pt := range ng.Tasks {
			if pt.sharing() != nil {
				sharing++
			} else if pt.Def.shared != nil && ng.Node != SyncNode {
				unshared++
			}
		}
	}
	// check, self-after and self-before, but on the nodes where an edge bound
	// after their shared ones goes to one of the same tasks (self-before on
	// compute and cinder nodes, self-after there too, check on controllers).
	if sharing < 16 || unshared == 0 {
		t.Fatalf("%d tasks share their edges and %d hold them for a later edge: the test shares too little", sharing, unshared)
	}
	if diff := cmp.Diff(graphEdgeLines(t, copied, gc), graphEdgeLines(t, shared, g)); diff != "" {
		t.Errorf("edges, copied (-) and shared (+):\n%s", diff)
	}
	var condensed [2]bytes.Buffer
	for i, r := range []*Rendered{copied, shared} {
		writeDOTLimits(&condensed[i], "prod", r.Graph("default"), dotLimits{full: 1, condensed: 1 << 30})
	}
	if !strings.Contains(condensed[1].String(), "condensed by node class") {
		t.Errorf("the DOT file is not condensed:\n%s", condensed[1].String())
	}
	if diff := cmp.Diff(condensed[0].String(), condensed[1].String()); diff != "" {
		t.Errorf("condensed DOT file, copied (-) and shared (+):\n%s", diff)
	}
	for name, files := range map[string][2]map[string][]byte{
		"format 2": {artifacts(t, copied), artifacts(t, shared)},
		"expanded": {expandedArtifacts(t, copied), expandedArtifacts(t, shared)},
	} {
		if len(files[0]) != len(files[1]) {
			t.Errorf("%s: %d files copied, %d shared", name, len(files[0]), len(files[1]))
		}
		for path, want := range files[0] {
			if got := files[1][path]; string(got) != string(want) {
				t.Errorf("%s: %s differs:\n%s", name, path, cmp.Diff(string(want), string(got)))
			}
		}
	}
}

// TestSharedEdgesOrder: the order releases a task that shares its edges when the
// last task of the list but itself is done (orderHub), which is when its edges
// would release it: with a task in its own list (policy any binds each node's
// task to the first node's), with one that waits for no other task of the list,
// and through a cycle, reported as with every edge copied.
func TestSharedEdgesOrder(t *testing.T) {
	for _, tc := range []struct{ name, tasks string }{
		{"own list", sharedTasks + `- {id: chain, type: shell, role: '*', cross-depends: [{name: chain, policy: any}, {name: b}]}
- {id: lone, type: shell, role: [primary-controller], cross-depends: [{name: lone}]}
`},
		{"cycle", `- {id: x, type: shell, role: '*', cross-depends: [{name: y}]}
- {id: y, type: shell, role: '*', cross-depends: [{name: x, role: [controller]}]}
- {id: z, type: shell, role: '*', cross-depends: [{name: y}]}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copied, dc := renderSharedTasks(t, 1<<30, tc.tasks)
			shared, ds := renderSharedTasks(t, 1, tc.tasks)
			if tc.name == "cycle" && len(cycleErrors(ds)) == 0 {
				t.Errorf("no cycle reported:\n%s", diagText(ds))
			}
			if diff := cmp.Diff(diagText(dc), diagText(ds)); diff != "" {
				t.Errorf("diagnostics, copied (-) and shared (+):\n%s", diff)
			}
			if diff := cmp.Diff(graphEdgeLines(t, copied, copied.Graph("default")), graphEdgeLines(t, shared, shared.Graph("default"))); diff != "" {
				t.Errorf("edges, copied (-) and shared (+):\n%s", diff)
			}
		})
	}
}
