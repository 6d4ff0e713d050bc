package render

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// The derived edges (ordering kept through absent tasks) are
// checked against a reference model written the plain way: for every task A of a
// node, a depth-first walk of requires/required_for from A through the tasks absent
// from the node and from sync, collecting the present tasks it reaches (refEdges).
// The renderer writes a transitive reduction of the derived edges, so what must hold
// is:
//
//   - every requires/required_for edge written on A is one the walk finds (nothing
//     invented);
//   - every task the walk finds comes before A in the written graph (some path of
//     written edges leads from it to A: no ordering lost), when the graph has no
//     cycle; when it has one, a cycle is reported;
//   - no edge is written twice and no task requires itself.

// refRelation is the definition-level relation, built from the definitions anew.
func refRelation(g *Graph) map[string][]string {
	match := func(name, id string) bool {
		if len(name) >= 2 && name[0] == '/' && name[len(name)-1] == '/' {
			re, err := regexp.Compile("^(?:" + name[1:len(name)-1] + ")")
			return err == nil && re.MatchString(id)
		}
		return name == id
	}
	preds := map[string][]string{}
	for _, id := range g.ids {
		d := g.defs[id].Task.Data
		for _, it := range items(d.Get("requires")) {
			for _, other := range g.ids {
				if other != id && match(it.String(), other) {
					preds[id] = append(preds[id], other)
				}
			}
		}
		for _, it := range items(d.Get("required_for")) {
			for _, other := range g.ids {
				if other != id && match(it.String(), other) {
					preds[other] = append(preds[other], id)
				}
			}
		}
	}
	return preds
}

type refKey struct{ task, node string }

// refEdges is what the plain walk finds for task a on node ng.
func refEdges(g *Graph, preds map[string][]string, ng *NodeGraph, a string) map[refKey]bool {
	sync := g.Node(SyncNode)
	out := map[refKey]bool{}
	seen := map[string]bool{a: true}
	var walk func(y string)
	walk = func(y string) {
		for _, p := range preds[y] {
			if seen[p] {
				continue
			}
			seen[p] = true
			switch {
			case ng.Task(p) != nil:
				out[refKey{p, ng.Node}] = true
			case ng != sync && sync != nil && sync.Task(p) != nil:
				out[refKey{p, SyncNode}] = true
			default:
				walk(p)
			}
		}
	}
	walk(a)
	return out
}

// checkDerivedEdges checks the properties on every node of every graph. When the
// graph of the reference edges (with the cross-node and stage edges as written) has
// a cycle, the render must report one and the ordering is not checked (no order can
// hold; the written graph keeps a cycle, as each edge left out is replaced by a path
// of written edges); when it has none, the render must report none.
func checkDerivedEdges(t *testing.T, r *Rendered, diags hcl.Diagnostics) (written, reference int) {
	t.Helper()
	for _, g := range r.Graphs {
		preds := refRelation(g)
		refs := map[*PlacedTask][]*PlacedTask{} // the reference graph
		errors := 0
		for _, ng := range g.Nodes {
			for _, pt := range ng.Tasks {
				ref := refEdges(g, preds, ng, pt.ID())
				reference += len(ref)
				for k := range ref {
					refs[pt] = append(refs[pt], g.Node(k.node).Task(k.task))
				}
				seen := map[refKey]bool{}
				for _, e := range pt.AllRequires() {
					k := refKey{e.Task(), e.Node()}
					if seen[k] {
						t.Errorf("%s: %s@%s requires %s@%s twice", g.Type, pt.ID(), ng.Node, e.Task(), e.Node())
					}
					seen[k] = true
					if e.raw == pt {
						t.Errorf("%s: %s@%s requires itself", g.Type, pt.ID(), ng.Node)
					}
					local := e.Origin == "requires" || (strings.HasPrefix(e.Origin, "required_for of ") && !(ng.Node == SyncNode && e.Node() != SyncNode))
					if !local {
						refs[pt] = append(refs[pt], e.raw)
						continue
					}
					written++
					if !ref[k] && errors < 20 {
						errors++
						t.Errorf("%s: %s@%s requires %s@%s (%s), which the reference walk does not find", g.Type, pt.ID(), ng.Node, e.Task(), e.Node(), e.Describe())
					}
				}
			}
		}
		cycleReported := slices.ContainsFunc(diags, func(d *hcl.Diagnostic) bool {
			return strings.Contains(d.Summary, "graph "+g.Type+": dependency cycle")
		})
		if hasCycle(refs) {
			if !cycleReported {
				t.Errorf("%s: the reference graph has a cycle, but no cycle is reported", g.Type)
			}
			continue
		}
		if cycleReported {
			t.Errorf("%s: a cycle is reported, but the reference graph has none", g.Type)
		}
		// ancestors(x) = the tasks some path of written edges leads from.
		memo := map[*PlacedTask]map[*PlacedTask]bool{}
		var ancestors func(pt *PlacedTask) map[*PlacedTask]bool
		ancestors = func(pt *PlacedTask) map[*PlacedTask]bool {
			if a, ok := memo[pt]; ok {
				return a
			}
			a := map[*PlacedTask]bool{}
			for _, e := range pt.AllRequires() {
				a[e.raw] = true
				for x := range ancestors(e.raw) {
					a[x] = true
				}
			}
			memo[pt] = a
			return a
		}
		for pt, ref := range refs {
			anc := ancestors(pt)
			for _, to := range ref {
				if !anc[to] && errors < 20 {
					errors++
					t.Errorf("%s: %s@%s must come after %s@%s, but no written edge orders them", g.Type, pt.ID(), pt.node.Node, to.ID(), to.node.Node)
				}
			}
		}
	}
	return written, reference
}

// hasCycle reports whether the graph (task → the tasks it requires) has a cycle.
func hasCycle(edges map[*PlacedTask][]*PlacedTask) bool {
	state := map[*PlacedTask]int{} // 1 on the path, 2 done
	var visit func(x *PlacedTask) bool
	visit = func(x *PlacedTask) bool {
		switch state[x] {
		case 1:
			return true
		case 2:
			return false
		}
		state[x] = 1
		for _, y := range edges[x] {
			if visit(y) {
				return true
			}
		}
		state[x] = 2
		return false
	}
	for x := range edges {
		if visit(x) {
			return true
		}
	}
	return false
}

func TestDerivedEdgesMitaka(t *testing.T) {
	r, diags := renderMitakaCeph(t)
	written, reference := checkDerivedEdges(t, r, diags)
	t.Logf("mitaka: %d requires/required_for edges written for %d the plain walk finds", written, reference)
	if written >= reference {
		t.Errorf("the reduction removed nothing: %d written, %d found", written, reference)
	}
}

func TestDerivedEdgesGenerated(t *testing.T) {
	repo, ld := loader.Load(repogen.Generate(repogen.Spec{Plugins: 6, Tasks: 600, Nodes: 40, Clusters: 2, Seed: 3}), loader.Options{})
	if ld.HasErrors() {
		t.Fatalf("the generated repository does not load:\n%s", diagText(ld))
	}
	rs, diags := Render(repo, Options{})
	if diags.HasErrors() || len(rs) != 2 {
		t.Fatalf("%d clusters rendered; errors:\n%s", len(rs), diagText(diags))
	}
	for _, r := range rs {
		written, reference := checkDerivedEdges(t, r, diags)
		t.Logf("%s: %d requires/required_for edges written for %d the plain walk finds", r.Model.Cluster.Name, written, reference)
	}
}

// TestDerivedEdgesRandom: random graphs on semCluster, with regex names, required_for,
// stages, tasks present on few nodes and cycles in the relation (a task that is
// absent breaks a cycle, one present on a node is an error the other checks must
// survive).
func TestDerivedEdgesRandom(t *testing.T) {
	selectors := []string{"role: [compute]", "role: [controller]", "role: ['*']", "role: '*'", "role: [cinder]", "tags: [primary-controller]", "role: ['/c.+/']", "role: [compute, cinder]"}
	for seed := range 60 {
		rnd := rand.New(rand.NewPCG(uint64(seed), 7))
		ntasks := 5 + rnd.IntN(30)
		var b strings.Builder
		b.WriteString("- {id: s-start, type: stage}\n- {id: s-end, type: stage, requires: [s-start]}\n")
		cyclic := seed%3 == 0
		for i := range ntasks {
			fmt.Fprintf(&b, "- {id: t%02d, type: shell, %s", i, selectors[rnd.IntN(len(selectors))])
			var req []string
			for range rnd.IntN(3) {
				j := rnd.IntN(ntasks)
				if !cyclic && j >= i {
					continue
				}
				req = append(req, fmt.Sprintf("t%02d", j))
			}
			if rnd.IntN(5) == 0 {
				req = append(req, "s-start")
			}
			if rnd.IntN(6) == 0 && i > 0 {
				req = append(req, fmt.Sprintf("/t%d/", rnd.IntN((i+9)/10)))
			}
			if len(req) > 0 {
				fmt.Fprintf(&b, ", requires: [%s]", strings.Join(req, ", "))
			}
			if rnd.IntN(4) == 0 {
				if j := rnd.IntN(ntasks); cyclic || j > i {
					fmt.Fprintf(&b, ", required_for: [t%02d, s-end]", j)
				}
			}
			b.WriteString("}\n")
		}
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			files := graphFiles(semRelease, map[string]string{"default": b.String()}, semCluster)
			repo, ld := loader.Load(mapFS(files), loader.Options{})
			if ld.HasErrors() {
				t.Fatalf("does not load:\n%s\n%s", diagText(ld), b.String())
			}
			rs, diags := Render(repo, Options{})
			if len(rs) != 1 {
				t.Fatalf("not rendered")
			}
			checkDerivedEdges(t, rs[0], diags)
			if t.Failed() {
				t.Logf("tasks:\n%s", b.String())
			}
		})
	}
}
