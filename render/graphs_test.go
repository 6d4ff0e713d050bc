package render

// Tests of the per-node task graphs: node tags, selectors, groups,
// conditions, edges, order, cycles, artifacts. Each test builds a small repository:
// the release plugin "base" (release base-1.0) whose release data and graphs the test
// writes, sometimes plugins extending it (addPlugin), and clusters/prod.yaml.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/internal/golden"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/loader"
)

// graphFiles is a repository with the release plugin base (baseMeta, whose release
// data is release and whose graphs are graphs: type → task list YAML, each in
// plugins/base/graphs/<type>.yaml) and, unless cluster is "", clusters/prod.yaml.
func graphFiles(release string, graphs map[string]string, cluster string) map[string]string {
	meta := baseMeta
	if len(graphs) > 0 {
		meta += "    graphs:\n"
	}
	var types []string
	for typ := range graphs {
		types = append(types, typ)
	}
	sort.Strings(types)
	files := map[string]string{
		"plugins/base/release.yaml": release,
	}
	for _, typ := range types {
		meta += "      - {type: " + typ + ", tasks_path: graphs/" + typ + ".yaml}\n"
		files["plugins/base/graphs/"+typ+".yaml"] = graphs[typ]
	}
	files["plugins/base/metadata.yaml"] = meta
	if cluster != "" {
		files["clusters/prod.yaml"] = cluster
	}
	return files
}

// renderFiles loads files (failing the test on a load error) and renders the one
// cluster, failing the test when it is not rendered. It returns the loader's and the
// renderer's diagnostics.
func renderFiles(t *testing.T, files map[string]string, state AppliedState) (*Rendered, hcl.Diagnostics) {
	t.Helper()
	repo, ld := loader.Load(mapFS(files), loader.Options{})
	if ld.HasErrors() {
		t.Fatalf("the repository does not load:\n%s", diagText(ld))
	}
	rs, diags := Render(repo, Options{State: state})
	diags = append(ld, diags...)
	if len(rs) != 1 {
		t.Fatalf("%d clusters rendered, want 1:\n%s", len(rs), diagText(diags))
	}
	return rs[0], diags
}

func noErrors(t *testing.T, diags hcl.Diagnostics) {
	t.Helper()
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", diagText(diags))
	}
}

func contains(list []string, s string) bool { return slices.Contains(list, s) }

// taskLines describes a node's tasks in their order: "id type", then " <- " and the
// task's dependencies as task@node, sorted.
func taskLines(ng *NodeGraph) []string {
	if ng == nil {
		return nil
	}
	var out []string
	for _, pt := range ng.Tasks {
		s := pt.ID() + " " + pt.Type()
		if pt.NumRequires() > 0 {
			var req []string
			for _, e := range pt.AllRequires() {
				req = append(req, e.Task()+"@"+e.Node())
			}
			sort.Strings(req)
			s += " <- " + strings.Join(req, " ")
		}
		out = append(out, s)
	}
	return out
}

// taskSets is taskLines for every node of the graph (master and sync included when
// they have tasks).
func taskSets(g *Graph) map[string][]string {
	out := map[string][]string{}
	for _, ng := range g.Nodes {
		out[ng.Node] = taskLines(ng)
	}
	return out
}

// nodesOf lists the nodes (by graph order) a task id is placed on.
func nodesOf(g *Graph, id string) []string {
	var out []string
	for _, ng := range g.Nodes {
		if ng.Task(id) != nil {
			out = append(out, ng.Node)
		}
	}
	return out
}

// artifacts returns the artifact files of r.
func artifacts(t *testing.T, rs ...*Rendered) map[string][]byte {
	t.Helper()
	files, err := Files(rs, "rev", "test")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// expandedArtifacts is artifacts in the expanded layout (format 1).
func expandedArtifacts(t *testing.T, rs ...*Rendered) map[string][]byte {
	t.Helper()
	files, err := FilesExpanded(rs, "rev", "test")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// nodeArtifact decodes the expanded view of <cluster>/nodes/<node>/<graph>.yaml.
func nodeArtifact(t *testing.T, r *Rendered, node, graph string) map[string]any {
	t.Helper()
	return yamlArtifact(t, expandedArtifacts(t, r), r.Model.Cluster.Name+"/nodes/"+node+"/"+graph+".yaml")
}

func yamlArtifact(t *testing.T, files map[string][]byte, name string) map[string]any {
	t.Helper()
	data, ok := files[name]
	if !ok {
		var names []string
		for n := range files {
			names = append(names, n)
		}
		sort.Strings(names)
		t.Fatalf("no artifact %s; have %v", name, names)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return doc
}

// artifactTask returns the task id of a node artifact.
func artifactTask(t *testing.T, doc map[string]any, id string) map[string]any {
	t.Helper()
	tasks, _ := doc["tasks"].([]any)
	for _, x := range tasks {
		if m, ok := x.(map[string]any); ok && m["id"] == id {
			return m
		}
	}
	t.Fatalf("node %v has no task %s", doc["node"], id)
	return nil
}

// cycleErrors returns the dependency cycle errors.
func cycleErrors(diags hcl.Diagnostics) []*hcl.Diagnostic {
	var out []*hcl.Diagnostic
	for _, d := range diags {
		if d.Severity == hcl.DiagError && strings.Contains(d.Summary, "dependency cycle: ") {
			out = append(out, d)
		}
	}
	return out
}

// checkCycle checks that a cycle error prints a real cycle in execution order
// (a@n -> b@m -> … -> a@n, each task requiring the one before it) and points at the
// id of its first task. It returns the printed cycle.
func checkCycle(t *testing.T, g *Graph, d *hcl.Diagnostic) string {
	t.Helper()
	_, cycle, _ := strings.Cut(d.Summary, "dependency cycle: ")
	parts := strings.Split(cycle, " -> ")
	if len(parts) < 3 || parts[0] != parts[len(parts)-1] {
		t.Fatalf("%q is not a cycle a -> … -> a", cycle)
	}
	split := func(s string) (string, string) {
		id, node, ok := strings.Cut(s, "@")
		if !ok {
			t.Fatalf("%q in %q is not task@node", s, cycle)
		}
		return id, node
	}
	for i := 1; i < len(parts); i++ {
		pid, pnode := split(parts[i-1])
		id, node := split(parts[i])
		pt := g.Node(node).Task(id)
		if pt == nil {
			t.Fatalf("%s is not placed", parts[i])
		}
		found := false
		for _, e := range pt.AllRequires() {
			found = found || (e.Task() == pid && e.Node() == pnode)
		}
		if !found {
			t.Errorf("cycle %q: %s does not require %s", cycle, parts[i], parts[i-1])
		}
	}
	id, node := split(parts[0])
	want := g.Node(node).Task(id).Def.Task.Range
	if d.Subject == nil || d.Subject.Filename != want.Filename || d.Subject.Start != want.Start {
		t.Errorf("cycle error at %v, want at %s (the id of %s)", d.Subject, at(want), parts[0])
	}
	return cycle
}

// testState is an AppliedState: primaries by tag and deployed nodes, for cluster prod.
type testState struct {
	primary  map[string]string
	deployed []string
}

func (s *testState) Primary(cluster, tag string) (string, bool) {
	if cluster != "prod" {
		return "", false
	}
	n, ok := s.primary[tag]
	return n, ok
}

func (s *testState) Deployed(cluster, node string) bool {
	return cluster == "prod" && slices.Contains(s.deployed, node)
}

// nonEmpty drops the nodes without tasks from taskSets.
func nonEmpty(sets map[string][]string) map[string][]string {
	for n, l := range sets {
		if len(l) == 0 {
			delete(sets, n)
		}
	}
	return sets
}

// --- design examples (the role-decomposition spec) ---

// TestDesignRoleAndAssignedTag: node-1 has the role controller and the assigned tag
// mysql. A task selected by tags [controller, mysql], one by role [controller] and
// one by role ['/.*/'] all run on node-1. The controller tag has no primary here (the
// spec's example has a single controller and no primary-controller substitution).
func TestDesignRoleAndAssignedTag(t *testing.T) {
	rel := `roles_metadata:
  controller: {name: Controller, description: Control plane}
  compute: {name: Compute, description: Instances}
tags_metadata:
  controller: {has_primary: false}
  compute: {has_primary: false}
`
	tasks := `- {id: mysql, type: puppet, tags: [controller, mysql]}
- {id: haproxy, type: puppet, role: [controller]}
- {id: globals, type: puppet, role: ['/.*/']}
`
	c := `cluster: prod
release: base-1.0
tags:
  mysql: {has_primary: false}
nodes:
  node-1:
    roles: [controller]
    tags: {assign: [mysql]}
  node-2: {roles: [compute]}
`
	r, diags := renderFiles(t, graphFiles(rel, map[string]string{"default": tasks}, c), nil)
	noErrors(t, diags)
	g := r.Graph("default")
	want := map[string][]string{
		"node-1": {"globals puppet", "haproxy puppet", "mysql puppet"},
		"node-2": {"globals puppet"},
	}
	if diff := cmp.Diff(want, nonEmpty(taskSets(g))); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	// mysql is on node-1 once, selected by both of its tags.
	wantVia := []Via{{Selector: "tags", Item: "controller", Tag: "controller"}, {Selector: "tags", Item: "mysql", Tag: "mysql"}}
	if diff := cmp.Diff(wantVia, g.Node("node-1").Task("mysql").Via()); diff != "" {
		t.Errorf("why mysql is on node-1 (-want +got):\n%s", diff)
	}
	doc := nodeArtifact(t, r, "node-1", "default")
	if diff := cmp.Diff([]any{"controller", "mysql"}, doc["tags"]); diff != "" {
		t.Errorf("node-1 artifact tags (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"assigned"}, r.Model.NodeTags["node-1"].Sources["mysql"]); diff != "" {
		t.Errorf("source of mysql (-want +got):\n%s", diff)
	}
}

// TestDesignUnassignRoleTags: a controller (role tags as in the Fuel fixture, each
// with a primary) whose tags are all unassigned except rabbitmq runs the rabbitmq
// task and none of the keystone, neutron or database tasks. Unassigning the role's
// own name is a warning, and the tag stays.
func TestDesignUnassignRoleTags(t *testing.T) {
	rel := `roles_metadata:
  controller:
    name: Controller
    description: Control plane
    tags: [controller, rabbitmq, database, keystone, neutron]
tags_metadata:
  controller: {has_primary: true}
  rabbitmq: {has_primary: true}
  database: {has_primary: true}
  keystone: {has_primary: true}
  neutron: {has_primary: true}
`
	// Tagged as fuel-library tags them: the primary and the plain form.
	tasks := `- {id: cluster, type: puppet, tags: [primary-controller, controller]}
- {id: rabbitmq, type: puppet, tags: [primary-rabbitmq, rabbitmq]}
- {id: database, type: puppet, tags: [primary-database, database]}
- {id: keystone, type: puppet, tags: [primary-keystone, keystone]}
- {id: neutron, type: puppet, tags: [primary-neutron, neutron]}
`
	c := `cluster: prod
release: base-1.0
nodes:
  node-1:
    roles: [controller]
    tags: {unassign: [controller, database, keystone, neutron]}
  node-2:
    roles: [controller]
    tags: {unassign: [database, keystone, neutron]}
`
	files := graphFiles(rel, map[string]string{"default": tasks}, c)
	r, diags := renderFiles(t, files, nil)
	g := r.Graph("default")
	want := map[string][]string{
		"node-1": {"cluster puppet", "rabbitmq puppet"},
		"node-2": {"cluster puppet", "rabbitmq puppet"},
	}
	if diff := cmp.Diff(want, nonEmpty(taskSets(g))); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"primary-controller", "primary-rabbitmq"}, r.Model.NodeTags["node-1"].Resolution); diff != "" {
		t.Errorf("node-1 tags (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"controller", "rabbitmq"}, r.Model.NodeTags["node-2"].Resolution); diff != "" {
		t.Errorf("node-2 tags (-want +got):\n%s", diff)
	}
	// The warnings: the role name stays; each tag no node carries any more is
	// reported where it was first unassigned.
	const cl = "clusters/prod.yaml"
	unassign := "    tags: {unassign: [controller, database, keystone, neutron]}"
	expectDiags(t, files, diags,
		diagAt{file: cl, lineOf: unassign, token: "controller", warning: true,
			summary: `cluster prod: node node-1: "controller" is the name of one of its roles and stays a tag of the node`},
		diagAt{file: cl, lineOf: unassign, token: "database", warning: true,
			summary: "cluster prod: no node carries tag database: tasks selected by it run nowhere"},
		diagAt{file: cl, lineOf: unassign, token: "keystone", warning: true,
			summary: "cluster prod: no node carries tag keystone: tasks selected by it run nowhere"},
		diagAt{file: cl, lineOf: unassign, token: "neutron", warning: true,
			summary: "cluster prod: no node carries tag neutron: tasks selected by it run nowhere"},
	)
	cdoc := yamlArtifact(t, artifacts(t, r), "prod/cluster.yaml")
	wantWarnings := []any{
		"no node carries tag database: tasks selected by it run nowhere",
		"no node carries tag keystone: tasks selected by it run nowhere",
		"no node carries tag neutron: tasks selected by it run nowhere",
	}
	if diff := cmp.Diff(wantWarnings, cdoc["warnings"]); diff != "" {
		t.Errorf("cluster.yaml warnings (-want +got):\n%s", diff)
	}
}

// TestUncarriedTagWarnedAt: a tag of the cluster's roles or spec that no node
// carries is warned about where it was first unassigned, else at its declaration
// in the cluster's tags:.
func TestUncarriedTagWarnedAt(t *testing.T) {
	rel := `roles_metadata:
  controller: {name: Controller, description: Control plane, tags: [controller, database]}
tags_metadata:
  controller: {has_primary: false}
  database: {has_primary: false}
`
	tasks := `- {id: globals, type: puppet, role: ['/.*/']}
`
	for _, tc := range []struct {
		name, cluster string
		lineOf, token string
		tag           string
	}{
		{name: "declared in the spec", tag: "mysql", lineOf: "  mysql: {has_primary: false}", token: "mysql", cluster: `cluster: prod
release: base-1.0
tags:
  mysql: {has_primary: false}
nodes:
  node-1: {roles: [controller]}
`},
		{name: "unassigned, though declared in the spec", tag: "database", lineOf: "    tags: {unassign: [database]}", token: "database", cluster: `cluster: prod
release: base-1.0
tags:
  database: {has_primary: false}
nodes:
  node-1:
    roles: [controller]
    tags: {unassign: [database]}
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := graphFiles(rel, map[string]string{"default": tasks}, tc.cluster)
			_, diags := renderFiles(t, files, nil)
			expectDiags(t, files, diags, diagAt{file: "clusters/prod.yaml", lineOf: tc.lineOf, token: tc.token, warning: true,
				summary: "cluster prod: no node carries tag " + tc.tag + ": tasks selected by it run nowhere"})
		})
	}
}

// TestImplicitRoleTagAndResolution: a role's name is a tag of its nodes even when
// the role's tags do not list it, and becomes primary-<role> when that tag has a
// primary; resolution: roles matches role names only, ignoring a
// task's tags.
func TestImplicitRoleTagAndResolution(t *testing.T) {
	rel := `roles_metadata:
  controller: {name: Controller, description: Control plane, tags: [controller, database]}
  rabbit: {name: Rabbit, description: Messaging, tags: [messaging]}
  cinder: {name: Cinder, description: Block storage}
tags_metadata:
  controller: {has_primary: true}
  database: {has_primary: true}
  rabbit: {has_primary: true}
  messaging: {has_primary: false}
  cinder: {has_primary: false}
`
	tasks := `- {id: primary-rabbit, type: shell, role: [primary-rabbit]}
- {id: rabbit, type: shell, role: [rabbit]}
- {id: messaging, type: shell, tags: [messaging]}
- {id: tags-or-role, type: shell, tags: [messaging], role: [cinder]}
- {id: database, type: shell, role: [database]}
- {id: primary-controller, type: shell, role: [primary-controller]}
`
	for _, tc := range []struct {
		resolution string
		tags       map[string][]string
		tasks      map[string][]string
	}{
		{
			resolution: "tags",
			tags: map[string][]string{
				"node-1": {"messaging", "primary-rabbit"},
				"node-2": {"cinder", "messaging", "rabbit"},
				"node-3": {"primary-controller", "primary-database"},
				"node-4": {"controller", "database"},
			},
			tasks: map[string][]string{
				"node-1": {"messaging shell", "primary-rabbit shell", "tags-or-role shell"},
				"node-2": {"messaging shell", "rabbit shell", "tags-or-role shell"},
				"node-3": {"primary-controller shell"},
				"node-4": {"database shell"},
			},
		},
		{
			resolution: "roles",
			tags: map[string][]string{
				"node-1": {"primary-rabbit"},
				"node-2": {"cinder", "rabbit"},
				"node-3": {"primary-controller"},
				"node-4": {"controller"},
			},
			tasks: map[string][]string{
				"node-1": {"primary-rabbit shell"},
				"node-2": {"rabbit shell", "tags-or-role shell"},
				"node-3": {"primary-controller shell"},
			},
		},
	} {
		t.Run(tc.resolution, func(t *testing.T) {
			c := "cluster: prod\nrelease: base-1.0\nresolution: " + tc.resolution + `
nodes:
  node-1: {roles: [rabbit]}
  node-2: {roles: [rabbit, cinder]}
  node-3: {roles: [controller]}
  node-4: {roles: [controller]}
`
			r, diags := renderFiles(t, graphFiles(rel, map[string]string{"default": tasks}, c), nil)
			noErrors(t, diags)
			got := map[string][]string{}
			for name, nt := range r.Model.NodeTags {
				got[name] = nt.Resolution
			}
			if diff := cmp.Diff(tc.tags, got); diff != "" {
				t.Errorf("resolution tags (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.tasks, nonEmpty(taskSets(r.Graph("default")))); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDesignInstanceTags: instance tags <tag>:<n> assigned by hand. Nodes sharing
// one form an instance group listed in each member's artifact; a task selected by
// an instance tag runs on its members only; a regex reaches every instance; the
// plain tag reaches none.
func TestDesignInstanceTags(t *testing.T) {
	rel := `roles_metadata:
  controller: {name: Controller, description: Control plane}
tags_metadata:
  controller: {has_primary: false}
`
	tasks := `- {id: mysql-2, type: shell, tags: ['mysql:2']}
- {id: mysql-any, type: shell, tags: ['/mysql:.*/']}
- {id: mysql-plain, type: shell, tags: [mysql]}
- {id: corosync-1, type: shell, tags: ['corosync:1']}
`
	c := `cluster: prod
release: base-1.0
tags:
  corosync: {has_primary: false}
  mysql: {has_primary: false}
nodes:
  node-1:
    roles: [controller]
    tags: {assign: ['corosync:1', 'mysql:2']}
  node-2:
    roles: [controller]
    tags: {assign: ['corosync:2', 'mysql:1']}
  node-3:
    roles: [controller]
    tags: {assign: ['corosync:2', 'mysql:2']}
`
	r, diags := renderFiles(t, graphFiles(rel, map[string]string{"default": tasks}, c), nil)
	noErrors(t, diags)
	g := r.Graph("default")
	want := map[string][]string{
		"node-1": {"corosync-1 shell", "mysql-2 shell", "mysql-any shell"},
		"node-2": {"mysql-any shell"},
		"node-3": {"mysql-2 shell", "mysql-any shell"},
	}
	if diff := cmp.Diff(want, nonEmpty(taskSets(g))); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	for node, inst := range map[string]map[string]any{
		"node-1": {"corosync:1": []any{"node-1"}, "mysql:2": []any{"node-1", "node-3"}},
		"node-2": {"corosync:2": []any{"node-2", "node-3"}, "mysql:1": []any{"node-2"}},
		"node-3": {"corosync:2": []any{"node-2", "node-3"}, "mysql:2": []any{"node-1", "node-3"}},
	} {
		doc := nodeArtifact(t, r, node, "default")
		if diff := cmp.Diff(any(inst), doc["instances"]); diff != "" {
			t.Errorf("%s artifact instances (-want +got):\n%s", node, diff)
		}
	}
	cdoc := yamlArtifact(t, artifacts(t, r), "prod/cluster.yaml")
	n1 := cdoc["nodes"].(map[string]any)["node-1"].(map[string]any)
	if diff := cmp.Diff([]any{"controller", "corosync:1", "mysql:2"}, n1["tags"]); diff != "" {
		t.Errorf("cluster.yaml node-1 tags (-want +got):\n%s", diff)
	}
}

// TestDesignAutoInstances: instances: {database: 2} deals database:1, database:2
// round-robin over the carriers of database, by node id.
func TestDesignAutoInstances(t *testing.T) {
	rel := `roles_metadata:
  controller: {name: Controller, description: Control plane, tags: [controller, database]}
  compute: {name: Compute, description: Instances}
tags_metadata:
  controller: {has_primary: true}
  database: {has_primary: true}
  compute: {has_primary: false}
`
	tasks := `- {id: db-1, type: shell, tags: ['database:1']}
- {id: db-2, type: shell, tags: ['database:2']}
`
	c := `cluster: prod
release: base-1.0
instances:
  database: 2
nodes:
  node-3: {id: 3, roles: [controller]}
  node-1: {id: 1, roles: [controller]}
  node-2: {id: 2, roles: [controller]}
  node-4: {id: 4, roles: [compute]}
`
	r, diags := renderFiles(t, graphFiles(rel, map[string]string{"default": tasks}, c), nil)
	noErrors(t, diags)
	got := map[string][]string{}
	for name, nt := range r.Model.NodeTags {
		got[name] = nt.Resolution
	}
	want := map[string][]string{
		"node-1": {"database:1", "primary-controller", "primary-database"},
		"node-2": {"controller", "database", "database:2"},
		"node-3": {"controller", "database", "database:1"},
		"node-4": {"compute"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolution tags (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"instance"}, r.Model.NodeTags["node-2"].Sources["database:2"]); diff != "" {
		t.Errorf("source of database:2 (-want +got):\n%s", diff)
	}
	g := r.Graph("default")
	wantTasks := map[string][]string{
		"node-1": {"db-1 shell"},
		"node-2": {"db-2 shell"},
		"node-3": {"db-1 shell"},
	}
	if diff := cmp.Diff(wantTasks, nonEmpty(taskSets(g))); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	doc := nodeArtifact(t, r, "node-3", "default")
	if diff := cmp.Diff(any(map[string]any{"database:1": []any{"node-1", "node-3"}}), doc["instances"]); diff != "" {
		t.Errorf("node-3 instances (-want +got):\n%s", diff)
	}
}

// --- selectors and graph semantics ---

// semRelease: controller (tags controller and database, both with a primary),
// compute, cinder; an attribute for legacy conditions.
const semRelease = `roles_metadata:
  controller: {name: Controller, description: Control plane, tags: [controller, database]}
  compute: {name: Compute, description: Instances}
  cinder: {name: Cinder, description: Block storage}
tags_metadata:
  controller: {has_primary: true}
  database: {has_primary: true}
  compute: {has_primary: false}
  cinder: {has_primary: false}
attributes_metadata:
  editable:
    common:
      debug: {value: false, type: checkbox}
`

// semCluster: node-1 is primary-controller and primary-database.
const semCluster = `cluster: prod
release: base-1.0
nodes:
  node-1: {id: 1, roles: [controller]}
  node-2: {id: 2, roles: [controller]}
  node-3: {id: 3, roles: [controller]}
  node-4: {id: 4, roles: [compute]}
  node-5: {id: 5, roles: [compute, cinder]}
`

// TestGraphSemantics renders one default graph per case on semCluster and compares
// every node's tasks, in order, with their dependencies.
func TestGraphSemantics(t *testing.T) {
	for _, tc := range []struct {
		name, tasks string
		want        map[string][]string // nodes without tasks left out
	}{
		{
			// The string '*' is every node (not master, not sync); the list item
			// '*' matches a tag literally named '*', so nothing here.
			name: "star string and star list",
			tasks: `- {id: star-string, type: shell, role: '*'}
- {id: star-list, type: shell, role: ['*']}
- {id: star-roles, type: shell, roles: '*'}
`,
			want: map[string][]string{
				"node-1": {"star-roles shell", "star-string shell"},
				"node-2": {"star-roles shell", "star-string shell"},
				"node-3": {"star-roles shell", "star-string shell"},
				"node-4": {"star-roles shell", "star-string shell"},
				"node-5": {"star-roles shell", "star-string shell"},
			},
		},
		{
			name: "master",
			tasks: `- {id: on-master, type: shell, role: master}
- {id: master-and-all, type: shell, role: [master, '/.*/']}
`,
			want: map[string][]string{
				"master": {"master-and-all shell", "on-master shell"},
				"node-1": {"master-and-all shell"},
				"node-2": {"master-and-all shell"},
				"node-3": {"master-and-all shell"},
				"node-4": {"master-and-all shell"},
				"node-5": {"master-and-all shell"},
			},
		},
		{
			// Python's re.match: anchored at the start only. /c.+/ matches
			// controller, compute and cinder but not node-1's primary-controller;
			// /.*controller/ matches both; /contr/ is a prefix match.
			name: "regex anchored at the start",
			tasks: `- {id: c-any, type: shell, role: ['/c.+/']}
- {id: any-controller, type: shell, role: ['/.*controller/']}
- {id: prefix, type: shell, role: ['/contr/']}
`,
			want: map[string][]string{
				"node-1": {"any-controller shell"},
				"node-2": {"any-controller shell", "c-any shell", "prefix shell"},
				"node-3": {"any-controller shell", "c-any shell", "prefix shell"},
				"node-4": {"c-any shell"},
				"node-5": {"c-any shell"},
			},
		},
		{
			// tags, else roles/role, else groups: the first present wins.
			name: "selector precedence",
			tasks: `- {id: by-tags, type: shell, tags: [cinder], role: [controller]}
- {id: by-role, type: shell, role: [cinder], groups: [controller]}
- {id: by-groups, type: shell, groups: [compute]}
- {id: by-nothing, type: shell}
`,
			want: map[string][]string{
				"node-4": {"by-groups shell"},
				"node-5": {"by-groups shell", "by-role shell", "by-tags shell"},
			},
		},
		{
			// policy any keeps the matching node with the lowest id: role
			// [controller] does not match node-1 (primary-controller), so node-2;
			// the regex includes node-1. (The order is one topological order of the
			// whole cluster, ties by task id then node: x-tags-any is ready once
			// y@node-1 is done, before y@node-2.)
			name: "policy any",
			tasks: `- {id: y, type: shell, role: ['/(primary-)?controller/']}
- id: x-role-any
  type: shell
  role: [cinder]
  cross-depends: [{name: y, role: [controller], policy: any}]
- id: x-tags-any
  type: shell
  role: [cinder]
  cross-depends: [{name: y, tags: ['/(primary-)?controller/'], policy: any}]
- id: x-all
  type: shell
  role: [cinder]
  cross-depends: [{name: y, role: [controller], policy: all}]
`,
			want: map[string][]string{
				"node-1": {"y shell"},
				"node-2": {"y shell"},
				"node-3": {"y shell"},
				"node-5": {"x-tags-any shell <- y@node-1", "x-role-any shell <- y@node-2", "x-all shell <- y@node-2 y@node-3"},
			},
		},
		{
			// Stage tasks run on the sync node; a node task requiring a stage and
			// required_for another binds to the sync node's copy.
			name: "stages on sync",
			tasks: `- {id: deploy_start, type: stage}
- {id: deploy_end, type: stage, requires: [deploy_start]}
- {id: work, type: shell, role: [cinder], requires: [deploy_start], required_for: [deploy_end]}
`,
			want: map[string][]string{
				"node-5": {"work shell <- deploy_start@sync"},
				"sync":   {"deploy_start stage", "deploy_end stage <- deploy_start@sync work@node-5"},
			},
		},
		{
			// A group places its tasks: on its nodes; the group is no task. A task
			// selected by its own selector and by a group is there once. A stage in
			// a group's tasks is ignored (a warning).
			name: "groups",
			tasks: `- {id: deploy_start, type: stage}
- {id: hiera, type: puppet, role: ['/.*/']}
- {id: globals, type: puppet, role: [compute]}
- {id: netconfig, type: puppet}
- {id: compute, type: group, role: [compute], tasks: [hiera, globals, netconfig, deploy_start]}
`,
			want: map[string][]string{
				"node-1": {"hiera puppet"},
				"node-2": {"hiera puppet"},
				"node-3": {"hiera puppet"},
				"node-4": {"globals puppet", "hiera puppet", "netconfig puppet"},
				"node-5": {"globals puppet", "hiera puppet", "netconfig puppet"},
				"sync":   {"deploy_start stage"},
			},
		},
		{
			// requires and required_for (names and /regex/, anchored at the start)
			// bind tasks of the same node; every edge is written on the dependent.
			name: "requires and required_for",
			tasks: `- {id: a, type: shell, role: [compute], requires: [b]}
- {id: b, type: shell, role: [compute]}
- {id: c, type: shell, role: [compute], required_for: [a]}
- {id: d, type: shell, role: [compute], requires: ['/[bc]/']}
- {id: e, type: shell, role: [controller], requires: [a]}
`,
			want: map[string][]string{
				"node-2": {"e shell"},
				"node-3": {"e shell"},
				"node-4": {"b shell", "c shell", "a shell <- b@node-4 c@node-4", "d shell <- b@node-4 c@node-4"},
				"node-5": {"b shell", "c shell", "a shell <- b@node-5 c@node-5", "d shell <- b@node-5 c@node-5"},
			},
		},
		{
			// cross-depends: self (the same node), role: null (the sync node), tags,
			// no selector (every node); cross-depended-by: the edge is written on
			// the other task.
			name: "cross dependencies",
			tasks: `- {id: deploy_start, type: stage}
- {id: base, type: shell, role: '*'}
- id: s
  type: shell
  role: [compute]
  cross-depends: [{name: base, role: self}]
- id: n
  type: shell
  role: [cinder]
  cross-depends: [{name: deploy_start, role: null}]
- id: tg
  type: shell
  role: [cinder]
  cross-depends: [{name: base, tags: [primary-controller]}]
- id: by
  type: shell
  role: [cinder]
  cross-depended-by: [{name: base, role: [controller]}]
- id: every
  type: shell
  role: [cinder]
  cross-depends: [{name: s}]
`,
			want: map[string][]string{
				"node-1": {"base shell"},
				"node-2": {"base shell <- by@node-5"},
				"node-3": {"base shell <- by@node-5"},
				"node-4": {"base shell", "s shell <- base@node-4"},
				"node-5": {"base shell", "by shell", "n shell <- deploy_start@sync", "s shell <- base@node-5", "every shell <- s@node-4 s@node-5", "tg shell <- base@node-1"},
				"sync":   {"deploy_start stage"},
			},
		},
		{
			// b is not on the compute nodes: a keeps its order after c through it.
			name: "transitive ordering through an absent task",
			tasks: `- {id: a, type: shell, role: [compute], requires: [b]}
- {id: b, type: shell, role: [controller], requires: [c]}
- {id: c, type: shell, role: '*'}
`,
			want: map[string][]string{
				"node-1": {"c shell"},
				"node-2": {"c shell", "b shell <- c@node-2"},
				"node-3": {"c shell", "b shell <- c@node-3"},
				"node-4": {"c shell", "a shell <- c@node-4"},
				"node-5": {"c shell", "a shell <- c@node-5"},
			},
		},
		{
			// Ties break by task id, whatever the order in the file.
			name: "order ties by id",
			tasks: `- {id: zeta, type: shell, role: [cinder]}
- {id: alpha, type: shell, role: [cinder], requires: [zeta]}
- {id: mid, type: shell, role: [cinder]}
- {id: beta, type: shell, role: [cinder]}
`,
			want: map[string][]string{
				"node-5": {"beta shell", "mid shell", "zeta shell", "alpha shell <- zeta@node-5"},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, diags := renderFiles(t, graphFiles(semRelease, map[string]string{"default": tc.tasks}, semCluster), nil)
			noErrors(t, diags)
			if diff := cmp.Diff(tc.want, nonEmpty(taskSets(r.Graph("default")))); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPolicyAny: a cross dependency with policy any binds the node with the lowest
// id among the nodes it selects that run the task it names, so that the edge is kept
// whenever some node runs it. fuel-library's ntp-client cross-depends on ntp-server
// with policy any and no role (every node): here ntp-server runs only on the
// controllers node-11 and node-12, and the edge goes to node-11. (nailgun takes one
// node of the selection first, in practice uid "1" or "11", and drops the edge when
// that node lacks the task: here node-1, a compute node.) The class-wise check of
// validate binds the same nodes.
func TestPolicyAny(t *testing.T) {
	const cluster = `cluster: prod
release: base-1.0
nodes:
  node-1: {id: 1, roles: [compute]}
  node-2: {id: 2, roles: [cinder]}
  node-11: {id: 11, roles: [controller]}
  node-12: {id: 12, roles: [controller]}
`
	const tasks = `- {id: ntp-server, type: shell, role: ['/(primary-)?controller/']}
- {id: ntp-check, type: shell, role: [controller]}
- {id: nowhere, type: shell}
- id: ntp-client
  type: shell
  role: [compute, cinder]
  cross-depends: [{name: ntp-server, policy: any}]
- id: check-client
  type: shell
  role: [compute]
  cross-depends: [{name: ntp-check, role: '*', policy: any}, {name: nowhere, policy: any}]
- id: announce
  type: shell
  role: [cinder]
  cross-depended-by: [{name: ntp-server, tags: [compute, controller, primary-controller], policy: any}]
`
	files := graphFiles(semRelease, map[string]string{"default": tasks}, cluster)
	r, diags := renderFiles(t, files, nil)
	noErrors(t, diags)
	want := map[string][]string{
		"node-1":  {"check-client shell <- ntp-check@node-12", "ntp-client shell <- ntp-server@node-11"},
		"node-2":  {"announce shell", "ntp-client shell <- ntp-server@node-11"},
		"node-11": {"ntp-server shell <- announce@node-2"},
		"node-12": {"ntp-check shell", "ntp-server shell"},
	}
	if diff := cmp.Diff(want, nonEmpty(taskSets(r.Graph("default")))); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	repo, ld := loader.Load(mapFS(files), loader.Options{})
	noErrors(t, ld)
	noErrors(t, Validate(repo, Options{}))
}

// TestGraphEdgeOrigins: Edge.Origin says where each edge comes from (for explain).
func TestGraphEdgeOrigins(t *testing.T) {
	tasks := `- {id: deploy_start, type: stage}
- {id: a, type: shell, role: [compute], requires: [b]}
- {id: b, type: shell, role: [controller], requires: [c]}
- {id: c, type: shell, role: '*', requires: [deploy_start]}
- {id: d, type: shell, role: [compute], required_for: [a]}
- id: e
  type: shell
  role: [compute]
  cross-depends: [{name: c, role: self}]
  cross-depended-by: [{name: d, role: self}]
`
	r, diags := renderFiles(t, graphFiles(semRelease, map[string]string{"default": tasks}, semCluster), nil)
	noErrors(t, diags)
	ng := r.Graph("default").Node("node-4")
	got := map[string][]string{}
	for _, pt := range ng.Tasks {
		for _, e := range pt.AllRequires() {
			got[pt.ID()] = append(got[pt.ID()], e.Task()+"@"+e.Node()+" ("+e.Describe()+")")
		}
	}
	want := map[string][]string{
		"a": {"c@node-4 (requires via b)", "d@node-4 (required_for of d)"},
		"c": {"deploy_start@sync (requires)"},
		"d": {"e@node-4 (cross-depended-by of e)"},
		"e": {"c@node-4 (cross-depends)"},
	}
	for id := range got {
		sort.Strings(got[id])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("edges on node-4 (-want +got):\n%s", diff)
	}
}

// TestGroupsAndFaultTolerance: fault_tolerance N, -N, "N%" and none, computed per
// group over its nodes and written to cluster.yaml (groups of other graphs say
// which); a group on no node is not listed; a task placed by its selector and by a
// group is there once, with both reasons.
func TestGroupsAndFaultTolerance(t *testing.T) {
	def := `- {id: deploy_start, type: stage}
- {id: hiera, type: puppet, role: ['/.*/']}
- {id: netconfig, type: puppet}
- {id: g-int, type: group, role: '*', fault_tolerance: 1, tasks: [hiera]}
- {id: g-neg, type: group, role: '*', fault_tolerance: -2}
- {id: g-pct, type: group, role: '*', fault_tolerance: "40%"}
- {id: g-none, type: group, role: [compute], tasks: [netconfig, deploy_start]}
- {id: g-nowhere, type: group, role: [ironic], tasks: [hiera]}
`
	prov := `- {id: provision-group, type: group, role: [compute, cinder], fault_tolerance: "-50%"}
`
	files := graphFiles(semRelease, map[string]string{"default": def, "provision": prov}, semCluster)
	r, diags := renderFiles(t, files, nil)
	expectDiags(t, files, diags, diagAt{file: "plugins/base/graphs/default.yaml", lineOf: "g-none", token: "deploy_start", warning: true,
		summary: "group g-none lists the stage deploy_start, which is ignored: stages run on the sync node"})

	all := []any{"node-1", "node-2", "node-3", "node-4", "node-5"}
	computes := []any{"node-4", "node-5"}
	want := []any{
		map[string]any{"name": "g-int", "nodes": all, "fault_tolerance": 1},
		map[string]any{"name": "g-neg", "nodes": all, "fault_tolerance": 3},
		map[string]any{"name": "g-none", "nodes": computes, "fault_tolerance": 3},
		map[string]any{"name": "g-pct", "nodes": all, "fault_tolerance": 2},
		map[string]any{"name": "provision-group", "graph": "provision", "nodes": computes, "fault_tolerance": 1},
	}
	cdoc := yamlArtifact(t, artifacts(t, r), "prod/cluster.yaml")
	if diff := cmp.Diff(want, cdoc["fault_tolerance_groups"]); diff != "" {
		t.Errorf("fault_tolerance_groups (-want +got):\n%s", diff)
	}

	g := r.Graph("default")
	wantTasks := map[string][]string{
		"node-1": {"hiera puppet"},
		"node-2": {"hiera puppet"},
		"node-3": {"hiera puppet"},
		"node-4": {"hiera puppet", "netconfig puppet"},
		"node-5": {"hiera puppet", "netconfig puppet"},
		"sync":   {"deploy_start stage"},
	}
	if diff := cmp.Diff(wantTasks, nonEmpty(taskSets(g))); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	wantVia := []Via{{Selector: "role", Item: "/.*/", Tag: "compute"}, {Selector: "group", Item: "g-int"}}
	if diff := cmp.Diff(wantVia, g.Node("node-4").Task("hiera").Via()); diff != "" {
		t.Errorf("why hiera is on node-4 (-want +got):\n%s", diff)
	}
	if n := strings.Count(string(artifacts(t, r)["prod/nodes/node-4/default.yaml"]), "id: hiera"); n != 1 {
		t.Errorf("hiera is %d times in node-4's artifact, want once", n)
	}
}

// TestLegacyConditions: a legacy string condition is evaluated (non-strict) on the
// cluster's model: false → the task stays as type skipped without parameters, true
// → kept. A yaql condition and a yaql cross-depends are kept verbatim.
func TestLegacyConditions(t *testing.T) {
	tasks := `- id: when-debug
  type: puppet
  role: [cinder]
  condition: "settings:common.debug.value == true"
  parameters: {puppet_manifest: when-debug.pp}
- id: unless-debug
  type: puppet
  role: [cinder]
  condition: "settings:common.debug.value == false"
  parameters: {puppet_manifest: unless-debug.pp}
- id: missing-key
  type: puppet
  role: [cinder]
  condition: "settings:common.nope.value == null"
  parameters: {puppet_manifest: missing-key.pp}
- id: yaql
  type: puppet
  role: [cinder]
  condition: {yaql_exp: 'changed($.debug)'}
  parameters: {puppet_manifest: yaql.pp}
- id: dynamic
  type: shell
  role: [cinder]
  cross-depends: {yaql_exp: '$.roles.select(...)'}
  cross-depended-by: [{yaql_exp: '$.other'}]
  parameters: {cmd: dynamic.sh}
`
	for _, debug := range []bool{false, true} {
		t.Run(fmt.Sprintf("debug=%v", debug), func(t *testing.T) {
			c := strings.Replace(semCluster, "nodes:\n", fmt.Sprintf("settings:\n  common.debug.value: %v\nnodes:\n", debug), 1)
			r, diags := renderFiles(t, graphFiles(semRelease, map[string]string{"default": tasks}, c), nil)
			expectDiags(t, nil, diags)
			doc := nodeArtifact(t, r, "node-5", "default")
			on, off := "when-debug", "unless-debug"
			if !debug {
				on, off = off, on
			}
			want := map[string]map[string]any{
				on:            {"id": on, "type": "puppet", "parameters": map[string]any{"puppet_manifest": on + ".pp"}},
				off:           {"id": off, "type": "skipped"},
				"missing-key": {"id": "missing-key", "type": "puppet", "parameters": map[string]any{"puppet_manifest": "missing-key.pp"}},
				"yaql": {"id": "yaql", "type": "puppet", "parameters": map[string]any{"puppet_manifest": "yaql.pp"},
					"condition": map[string]any{"yaql_exp": "changed($.debug)"}},
				"dynamic": {"id": "dynamic", "type": "shell", "parameters": map[string]any{"cmd": "dynamic.sh"},
					"dynamic_requires": []any{
						map[string]any{"cross-depends": map[string]any{"yaql_exp": "$.roles.select(...)"}},
						map[string]any{"yaql_exp": "$.other"},
					}},
			}
			for id, w := range want {
				if diff := cmp.Diff(w, artifactTask(t, doc, id)); diff != "" {
					t.Errorf("task %s (-want +got):\n%s", id, diff)
				}
			}
			ng := r.Graph("default").Node("node-5")
			if c := ng.Task(off).Condition(); c == nil || *c {
				t.Errorf("%s: condition value %v, want false", off, c)
			}
			if c := ng.Task("yaql").Condition(); c != nil {
				t.Errorf("yaql: condition evaluated to %v, want not evaluated", *c)
			}
		})
	}
}

// overrideTasks is the release default graph the override tests start from.
const overrideTasks = `- {id: hiera, type: puppet, role: '*'}
- {id: keystone, type: puppet, role: [controller], requires: [hiera], parameters: {puppet_manifest: release.pp}}
- {id: sahara, type: puppet, role: [controller]}
- {id: horizon, type: puppet, role: [controller], parameters: {puppet_manifest: horizon-release.pp}}
`

// TestTaskOverrides: a plugin task replaces the release task of the same id
// wholesale (no field merge: the plugin's keystone has no requires); the cluster's
// tasks replace both.
func TestTaskOverrides(t *testing.T) {
	files := graphFiles(semRelease, map[string]string{"default": overrideTasks},
		strings.Replace(semCluster, "nodes:\n", `plugins: [p1]
tasks:
  - {id: sahara, type: skipped}
  - {id: horizon, type: shell, role: [cinder], parameters: {cmd: horizon-cluster.sh}}
nodes:
`, 1))
	addPlugin(files, "p1", map[string]string{"deployment_tasks.yaml": `- {id: keystone, type: shell, role: [compute], parameters: {cmd: keystone-plugin.sh}}
- {id: horizon, type: shell, role: [compute], parameters: {cmd: horizon-plugin.sh}}
`})
	r, diags := renderFiles(t, files, nil)
	noErrors(t, diags)
	g := r.Graph("default")
	want := map[string][]string{
		"node-1": {"hiera puppet"},
		"node-2": {"hiera puppet"},
		"node-3": {"hiera puppet"},
		"node-4": {"hiera puppet", "keystone shell"},
		"node-5": {"hiera puppet", "horizon shell", "keystone shell"},
	}
	if diff := cmp.Diff(want, nonEmpty(taskSets(g))); diff != "" {
		t.Errorf("tasks (-want +got):\n%s", diff)
	}
	layers := func(d *TaskDef) []string {
		out := []string{d.Layer}
		for _, o := range d.Overrode {
			out = append(out, o.Layer)
		}
		return out
	}
	n5 := g.Node("node-5")
	if diff := cmp.Diff([]string{"plugin p1", "release"}, layers(n5.Task("keystone").Def)); diff != "" {
		t.Errorf("keystone: winning layer then overridden ones (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"cluster", "plugin p1", "release"}, layers(n5.Task("horizon").Def)); diff != "" {
		t.Errorf("horizon: winning layer then overridden ones (-want +got):\n%s", diff)
	}
	doc := nodeArtifact(t, r, "node-5", "default")
	if diff := cmp.Diff(map[string]any{"id": "horizon", "type": "shell", "parameters": map[string]any{"cmd": "horizon-cluster.sh"}},
		artifactTask(t, doc, "horizon")); diff != "" {
		t.Errorf("horizon (-want +got):\n%s", diff)
	}
	// The plugin's definition runs from the plugin's directory (nailgun's default cwd);
	// the cluster's own does not get it.
	if diff := cmp.Diff(map[string]any{"id": "keystone", "type": "shell", "parameters": map[string]any{"cmd": "keystone-plugin.sh", "cwd": "/etc/fuel/plugins/p1-1.0/"}},
		artifactTask(t, doc, "keystone")); diff != "" {
		t.Errorf("keystone (-want +got):\n%s", diff)
	}
}

// TestPluginTaskOverlap: two enabled plugins defining one task id is an error
// wherever the definitions resolve (nailgun's get_plugins_deployment_graph refuses
// the cluster), reported once per id and graph at the later plugin's plugins: entry.
// A plugin overriding the release's task (the release being a release-as-a-plugin)
// is no overlap, nor is a plugin that is not enabled.
func TestPluginTaskOverlap(t *testing.T) {
	build := func(plugins, p2Role string) map[string]string {
		files := graphFiles(semRelease, map[string]string{"default": overrideTasks},
			strings.Replace(semCluster, "nodes:\n", "plugins: "+plugins+"\nnodes:\n", 1))
		addPlugin(files, "p1", map[string]string{"deployment_tasks.yaml": "- {id: l2, type: shell, role: ['/(primary-)?controller/']}\n- {id: keystone, type: shell, role: [controller]}\n"})
		addPlugin(files, "p2", map[string]string{"deployment_tasks.yaml": "- {id: l2, type: shell, role: " + p2Role + "}\n- {id: horizon, type: shell, role: [compute]}\n"})
		return files
	}
	overlap := func(files map[string]string) diagAt {
		return diagAt{file: "clusters/prod.yaml", lineOf: "plugins: [p1, p2]", token: "p2",
			summary: "Plugin p2-1.0.0 is overlapping with plugin p1-1.0.0 by introducing the same deployment task with id l2"}
	}
	for _, tc := range []struct {
		name, plugins, p2Role string
		overlap               bool
	}{
		{name: "different roles", plugins: "[p1, p2]", p2Role: "[compute]", overlap: true},
		{name: "a common node", plugins: "[p1, p2]", p2Role: "'*'", overlap: true},
		{name: "no selector", plugins: "[p1, p2]", p2Role: "null", overlap: true},
		{name: "each alone, overriding the release's tasks", plugins: "[p1]", p2Role: "[compute]"},
		{name: "the other alone", plugins: "[p2]", p2Role: "[compute]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := build(tc.plugins, tc.p2Role)
			repo, ld := loader.Load(mapFS(files), loader.Options{})
			noErrors(t, ld)
			rs, diags := Render(repo, Options{})
			if !tc.overlap {
				noErrors(t, diags)
				if len(rs) != 1 {
					t.Fatalf("%d clusters rendered, want 1", len(rs))
				}
				return
			}
			expectDiags(t, files, diags, overlap(files))
			if len(rs) != 0 {
				t.Errorf("the cluster was rendered despite the overlap")
			}
			if len(diags) != 1 {
				return
			}
			d := diags[0]
			want := "Graph default: task l2 is defined by plugin p1 at plugins/p1/deployment_tasks.yaml:1 and by plugin p2 at plugins/p2/deployment_tasks.yaml:1."
			if !strings.HasPrefix(d.Detail, want) {
				t.Errorf("detail = %q, want it to start with %q", d.Detail, want)
			}
		})
	}
}

// TestEveryGraphType: every graph type of the release is rendered, for every node
// (an empty task list included), with its DOT file.
func TestEveryGraphType(t *testing.T) {
	graphs := map[string]string{
		"default":   "- {id: deploy, type: shell, role: '*'}\n",
		"provision": "- {id: provision, type: shell, role: [compute]}\n",
		"upgrade":   "- {id: upgrade-db, type: shell, tags: [primary-database]}\n",
	}
	r, diags := renderFiles(t, graphFiles(semRelease, graphs, semCluster), nil)
	noErrors(t, diags)
	var types []string
	for _, g := range r.Graphs {
		types = append(types, g.Type)
	}
	if diff := cmp.Diff([]string{"default", "provision", "upgrade"}, types); diff != "" {
		t.Errorf("graph types (-want +got):\n%s", diff)
	}
	files := artifacts(t, r)
	var names []string
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{"manifest.json", "prod/cluster.yaml", "prod/graphs/default.dot", "prod/graphs/provision.dot", "prod/graphs/upgrade.dot",
		"prod/tasks/default.yaml", "prod/tasks/provision.yaml", "prod/tasks/upgrade.yaml"}
	for _, n := range []string{"node-1", "node-2", "node-3", "node-4", "node-5"} {
		for _, typ := range types {
			want = append(want, "prod/nodes/"+n+"/"+typ+".yaml")
		}
	}
	sort.Strings(want)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("artifact files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"node-1"}, nodesOf(r.Graph("upgrade"), "upgrade-db")); diff != "" {
		t.Errorf("upgrade-db nodes (-want +got):\n%s", diff)
	}
	doc := yamlArtifact(t, files, "prod/nodes/node-2/upgrade.yaml")
	if diff := cmp.Diff([]any{}, doc["tasks"]); diff != "" {
		t.Errorf("node-2 upgrade tasks (-want +got):\n%s", diff)
	}
	if doc["graph"] != "upgrade" || doc["node"] != "node-2" || doc["cluster"] != "prod" {
		t.Errorf("node-2 upgrade header: %v %v %v", doc["cluster"], doc["node"], doc["graph"])
	}
}

// TestUnknownDependency: a dependency on a name that exists nowhere in the graph is
// a warning at the name; a name that exists on other nodes only
// is not.
func TestUnknownDependency(t *testing.T) {
	const file = "plugins/base/graphs/default.yaml"
	t.Run("requires and required_for", func(t *testing.T) {
		tasks := `- {id: a, type: shell, role: [compute], requires: [nope, b]}
- {id: b, type: shell, role: [controller], required_for: [nada]}
`
		files := graphFiles(semRelease, map[string]string{"default": tasks}, semCluster)
		_, diags := renderFiles(t, files, nil)
		expectDiags(t, files, diags,
			diagAt{file: file, lineOf: "id: a,", token: "nope", warning: true, summary: `task a: requires "nope": no task of that name in graph default`},
			diagAt{file: file, lineOf: "id: b,", token: "nada", warning: true, summary: `task b: required_for "nada": no task of that name in graph default`},
		)
	})
	t.Run("cross-depends", func(t *testing.T) {
		tasks := `- id: a
  type: shell
  role: [compute]
  cross-depends: [{name: ghost, role: self}]
  cross-depended-by: [{name: phantom}]
`
		files := graphFiles(semRelease, map[string]string{"default": tasks}, semCluster)
		_, diags := renderFiles(t, files, nil)
		for _, name := range []string{"ghost", "phantom"} {
			line, col := locate(t, files[file], name, name)
			found := false
			for _, d := range diags {
				found = found || (d.Severity == hcl.DiagWarning && d.Subject != nil && d.Subject.Filename == file &&
					d.Subject.Start.Line == line && d.Subject.Start.Column == col &&
					strings.Contains(d.Summary, `"`+name+`"`) && strings.Contains(d.Summary, "no task of that name"))
			}
			if !found {
				t.Errorf("no warning about %q at %s:%d:%d; got:\n%s", name, file, line, col, diagText(diags))
			}
		}
	})
}

// --- bad input: each a diagnostic with file and line ---

// TestGraphBadInput: problems of the graphs the renderer finds, each an error at its
// position. A cycle is printed in execution order (each task requires the one
// before it), starting at the task it is reported at; which rotation is printed is
// the renderer's choice, checkCycle checks that it is a real cycle.
func TestGraphBadInput(t *testing.T) {
	const file = "plugins/base/graphs/default.yaml"
	for _, tc := range []struct {
		name, tasks string
		want        diagAt
		cycle       bool
	}{
		{
			name: "cycle within one node",
			tasks: `- {id: a, type: shell, role: [primary-controller], requires: [b]}
- {id: b, type: shell, role: [primary-controller], requires: [a]}
`,
			want:  diagAt{file: file, lineOf: "id: b,", token: "b", summary: "graph default: dependency cycle: b@node-1 -> a@node-1 -> b@node-1"},
			cycle: true,
		},
		{
			name: "cycle through required_for",
			tasks: `- {id: a, type: shell, role: [cinder], required_for: [b]}
- {id: b, type: shell, role: [cinder], required_for: [c]}
- {id: c, type: shell, role: [cinder], required_for: [a]}
`,
			want:  diagAt{file: file, lineOf: "id: b,", token: "b", summary: "graph default: dependency cycle: b@node-5 -> c@node-5 -> a@node-5 -> b@node-5"},
			cycle: true,
		},
		{
			name: "cycle across nodes",
			tasks: `- id: x
  type: shell
  role: [cinder]
  cross-depends: [{name: y, tags: [primary-controller]}]
- id: y
  type: shell
  role: [primary-controller]
  cross-depends: [{name: x, role: [cinder]}]
`,
			want:  diagAt{file: file, lineOf: "id: x", token: "x", summary: "graph default: dependency cycle: x@node-5 -> y@node-1 -> x@node-5"},
			cycle: true,
		},
		{
			name: "group lists an unknown task",
			tasks: `- {id: hiera, type: puppet}
- {id: g, type: group, role: [compute], tasks: [hiera, hieraa]}
`,
			want: diagAt{file: file, lineOf: "id: g,", token: "hieraa", summary: `group g lists task "hieraa", which is not in graph default`},
		},
		{
			name: "group lists a group",
			tasks: `- {id: hiera, type: puppet}
- {id: inner, type: group, role: [compute], tasks: [hiera]}
- {id: outer, type: group, role: [compute], tasks: [inner]}
`,
			want: diagAt{file: file, lineOf: "id: outer,", token: "inner", summary: "group outer lists inner, which is a group: a group's tasks cannot be groups"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := graphFiles(semRelease, map[string]string{"default": tc.tasks}, semCluster)
			r, diags := renderFiles(t, files, nil)
			expectDiags(t, files, diags, tc.want)
			if tc.cycle {
				// The printed cycle is a real one, and the graph is still complete.
				for _, d := range cycleErrors(diags) {
					checkCycle(t, r.Graph("default"), d)
				}
			}
		})
	}
}

// TestGraphTwoCycles: two unrelated cycles are two problems of the input, and every
// problem of a run is reported.
func TestGraphTwoCycles(t *testing.T) {
	tasks := `- {id: a, type: shell, role: [cinder], requires: [b]}
- {id: b, type: shell, role: [cinder], requires: [a]}
- {id: c, type: shell, role: [primary-controller], requires: [d]}
- {id: d, type: shell, role: [primary-controller], requires: [c]}
`
	r, diags := renderFiles(t, graphFiles(semRelease, map[string]string{"default": tasks}, semCluster), nil)
	cycles := cycleErrors(diags)
	if len(cycles) != 2 {
		t.Fatalf("%d cycle errors, want 2:\n%s", len(cycles), diagText(diags))
	}
	var got []string
	for _, d := range cycles {
		got = append(got, checkCycle(t, r.Graph("default"), d))
	}
	sort.Strings(got)
	if !strings.Contains(got[0], "@node-5") || !strings.Contains(got[1], "@node-1") {
		t.Errorf("cycles %q, want one on node-5 (a, b) and one on node-1 (c, d)", got)
	}
}

// TestTaskSelectorBadInput: invalid selectors are the loader's to report, with the
// position of the item.
func TestTaskSelectorBadInput(t *testing.T) {
	const file = "plugins/base/graphs/default.yaml"
	for _, tc := range []struct {
		name, tasks string
		want        diagAt
	}{
		{
			name:  "regex that does not compile",
			tasks: "- {id: a, type: shell, role: [compute, '/(contr/']}\n",
			want:  diagAt{file: file, lineOf: "id: a", token: "'/(contr/'", summary: "task a: role: regular expression /(contr/ does not compile: missing closing ): `(contr`"},
		},
		{
			name:  "regex in tags",
			tasks: "- {id: a, type: shell, tags: ['/a**/']}\n",
			want:  diagAt{file: file, lineOf: "id: a", token: "'/a**/'", summary: "task a: tags: regular expression /a**/ does not compile: invalid nested repetition operator: `**`"},
		},
		{
			name:  "mapping selector",
			tasks: "- {id: a, type: shell, role: {controller: true}}\n",
			want:  diagAt{file: file, lineOf: "id: a", token: "{controller", summary: "task a: role must be a string or a list of strings, not a mapping"},
		},
		{
			name:  "mapping selector item",
			tasks: "- {id: a, type: shell, groups: [compute, {name: controller}]}\n",
			want:  diagAt{file: file, lineOf: "id: a", token: "{name", summary: "task a: groups must be a string or a list of strings, not a mapping"},
		},
		{
			name:  "regex in a cross-dependency selector",
			tasks: "- {id: a, type: shell, role: '*', cross-depends: [{name: a, role: ['/[/']}]}\n",
			want:  diagAt{file: file, lineOf: "id: a", token: "'/[/'", summary: "task a: cross-depends: role: regular expression /[/ does not compile: missing closing ]: `[`"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := graphFiles(semRelease, map[string]string{"default": tc.tasks}, semCluster)
			_, diags := loader.Load(mapFS(files), loader.Options{})
			expectDiags(t, files, diags, tc.want)
		})
	}
}

// --- determinism ---

// richTasks exercises most of the renderer: stages, groups, cross-dependencies,
// regexes, conditions, instances.
const richTasks = `- {id: deploy_start, type: stage}
- {id: deploy_end, type: stage, requires: [deploy_start]}
- {id: hiera, type: puppet, role: '*', requires: [deploy_start], required_for: [deploy_end], parameters: {puppet_manifest: hiera.pp, timeout: 120}}
- {id: globals, type: puppet, groups: ['/.*/'], requires: [hiera], required_for: [deploy_end]}
- id: database
  type: puppet
  tags: [primary-database, database]
  requires: [globals]
  cross-depends: [{name: database, tags: [primary-database]}]
  required_for: [deploy_end]
- {id: mysql, type: shell, tags: ['/mysql:.*/'], requires: [globals], condition: "settings:common.debug.value == true"}
- id: compute-setup
  type: shell
  role: [compute]
  requires: [globals]
  cross-depends: [{name: database, role: ['/(primary-)?controller/'], policy: any}]
  condition: {yaql_exp: 'changed($.nova)'}
  required_for: [deploy_end]
- {id: netconfig, type: puppet}
- {id: compute, type: group, role: [compute], tasks: [netconfig], fault_tolerance: "50%"}
- {id: controller, type: group, role: [controller, primary-controller], tasks: [netconfig], fault_tolerance: 1}
`

// twinYAML and twinHCL are one cluster written in YAML and in HCL.
const twinYAML = `cluster: prod
release: base-1.0
mode: ha
plugins: [p1]
settings:
  common.debug.value: true
tags:
  mysql: {has_primary: true}
roles:
  compute: {tags: [compute, mysql]}
instances:
  database: 2
tasks:
  - {id: horizon, type: shell, role: [cinder], parameters: {cmd: horizon.sh}}
nodes:
  node-1: {id: 1, roles: [controller]}
  node-2:
    id: 2
    roles: [controller]
    tags: {assign: ['mysql:1'], unassign: [database]}
  node-3: {id: 3, roles: [controller]}
  node-4: {id: 4, roles: [compute]}
  node-5: {id: 5, roles: [compute, cinder]}
`

const twinHCL = `locals {
  controller = ["controller"]
}

cluster "prod" {
  release   = "base-1.0"
  mode      = "ha"
  plugins   = ["p1"]
  settings  = { "common.debug.value" = true }
  tags      = { mysql = { has_primary = true } }
  roles     = { compute = { tags = ["compute", "mysql"] } }
  instances = { database = 2 }
  tasks = [
    { id = "horizon", type = "shell", role = ["cinder"], parameters = { cmd = "horizon.sh" } },
  ]

  node "node-1" {
    id    = 1
    roles = local.controller
  }
  node "node-2" {
    id    = 2
    roles = local.controller
    tags {
      assign   = ["mysql:1"]
      unassign = ["database"]
    }
  }
  node "node-3" {
    id    = 3
    roles = local.controller
  }
  node "node-4" {
    id    = 4
    roles = ["compute"]
  }
  node "node-5" {
    id    = 5
    roles = ["compute", "cinder"]
  }
}
`

// twinFiles is the repository of the twin clusters with the cluster spec at name.
func twinFiles(name, src string) map[string]string {
	files := graphFiles(semRelease, map[string]string{"default": richTasks, "provision": "- {id: image, type: shell, role: '*'}\n"}, "")
	addPlugin(files, "p1", map[string]string{"deployment_tasks.yaml": "- {id: plugin-task, type: shell, role: ['/c.+/'], requires: [globals]}\n"})
	files[name] = src
	return files
}

// TestRenderDeterministic: rendering the same repository twice, from two loads,
// gives the same bytes.
func TestRenderDeterministic(t *testing.T) {
	files := twinFiles("clusters/prod.yaml", twinYAML)
	r1, diags := renderFiles(t, files, nil)
	noErrors(t, diags)
	first, firstExpanded := artifacts(t, r1), expandedArtifacts(t, r1)
	for i := 0; i < 5; i++ {
		r, _ := renderFiles(t, files, nil)
		if diff := cmp.Diff(first, artifacts(t, r)); diff != "" {
			t.Fatalf("render %d differs from the first (-first +again):\n%s", i+2, diff)
		}
		if diff := cmp.Diff(firstExpanded, expandedArtifacts(t, r)); diff != "" {
			t.Fatalf("expanded render %d differs from the first (-first +again):\n%s", i+2, diff)
		}
	}
	// The repository is not trivial: node-4's compute-setup cross-depends on
	// database@node-1 (policy any), and the artifact shows it.
	if !strings.Contains(string(first["prod/nodes/node-4/default.yaml"]), "database@node-1") {
		t.Errorf("node-4's artifact has no edge to node-1:\n%s", first["prod/nodes/node-4/default.yaml"])
	}
}

// TestYAMLAndHCLTwins: a YAML cluster and its HCL twin (two repositories, the same
// cluster name) give byte-identical artifacts.
func TestYAMLAndHCLTwins(t *testing.T) {
	ry, diags := renderFiles(t, twinFiles("clusters/prod.yaml", twinYAML), nil)
	noErrors(t, diags)
	rh, diags := renderFiles(t, twinFiles("clusters/prod.hcl", twinHCL), nil)
	noErrors(t, diags)
	y, h := artifacts(t, ry), artifacts(t, rh)
	if diff := cmp.Diff(stringsOf(y), stringsOf(h)); diff != "" {
		t.Errorf("artifacts (-yaml +hcl):\n%s", diff)
	}
	// manifest, cluster.yaml, 2 DOT files, 2 task catalogues, 5 nodes × 2 graphs,
	// sync's default graph
	if len(y) != 1+1+2+2+5*2+1 {
		t.Errorf("%d artifacts, want 17", len(y))
	}
}

func stringsOf(files map[string][]byte) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = string(v)
	}
	return out
}

// --- the real data ---

// renderMitakaCeph renders cluster mitaka-ceph of examples/fuel-mitaka (three
// controllers, two computes, two Ceph OSD nodes), failing the test on an error; it
// returns the render's warnings too.
func renderMitakaCeph(t *testing.T) (*Rendered, hcl.Diagnostics) {
	t.Helper()
	repo, ld := loader.Load(os.DirFS(mitakaExample), loader.Options{})
	if ld.HasErrors() {
		t.Fatalf("the example does not load:\n%s", diagText(ld))
	}
	rs, diags := Render(repo, Options{Clusters: []string{"mitaka-ceph"}})
	if diags.HasErrors() || len(rs) != 1 {
		t.Fatalf("%d clusters rendered; errors:\n%s", len(rs), diagText(diags))
	}
	return rs[0], diags
}

// TestMitakaGraphs renders the upstream Fuel 9.x release (examples/fuel-mitaka)
// for a 7-node cluster: no errors; the lowest-id controller runs the tasks selected
// by primary-controller only and the other controllers do not (and the reverse for
// controller-only tasks); the DOT files are valid Graphviz when dot is installed.
func TestMitakaGraphs(t *testing.T) {
	r, diags := renderMitakaCeph(t)
	for _, d := range diags {
		t.Logf("render warning: %s", diagText(hcl.Diagnostics{d}))
	}
	// The number of tasks per node and graph, pinned (the README quotes them).
	var counts strings.Builder
	for _, g := range r.Graphs {
		fmt.Fprintf(&counts, "%s:", g.Type)
		for _, ng := range g.Nodes {
			fmt.Fprintf(&counts, " %s=%d", ng.Node, len(ng.Tasks))
		}
		counts.WriteByte('\n')
	}
	golden.Check(t, filepath.Join("testdata", "graphs", "mitaka-ceph.counts"), []byte(counts.String()))

	nt := r.Model.NodeTags
	if !contains(nt["node-1"].Resolution, "primary-controller") || contains(nt["node-2"].Resolution, "primary-controller") ||
		contains(nt["node-3"].Resolution, "primary-controller") {
		t.Fatalf("primary-controller is not node-1's alone: %v / %v / %v", nt["node-1"].Resolution, nt["node-2"].Resolution, nt["node-3"].Resolution)
	}

	// Tasks selected by primary-controller alone run on node-1 and on no other
	// node; tasks selected by controller alone run on node-2 and node-3, not on
	// node-1.
	g := r.Graph("default")
	var onlyPrimary, onlyController []string
	for _, rg := range r.Model.Release.Graphs {
		if rg.Type != "default" {
			continue
		}
		for _, task := range rg.Tasks {
			if task.Type == "group" || task.Type == "stage" {
				continue
			}
			_, sel := r.Model.selectorOf(task)
			items, ok := sel.Strings()
			if !ok {
				if s, isStr := sel.Str(); isStr {
					items, ok = []string{s}, true
				}
			}
			switch {
			case !ok:
			case slices.Equal(items, []string{"primary-controller"}):
				onlyPrimary = append(onlyPrimary, task.ID)
			case slices.Equal(items, []string{"controller"}):
				onlyController = append(onlyController, task.ID)
			}
		}
	}
	t.Logf("%d tasks for primary-controller only: %v", len(onlyPrimary), onlyPrimary)
	t.Logf("%d tasks for controller only: %v", len(onlyController), onlyController)
	if len(onlyPrimary) < 5 {
		t.Errorf("only %d primary-controller-only tasks in the release", len(onlyPrimary))
	}
	for _, id := range onlyPrimary {
		if diff := cmp.Diff([]string{"node-1"}, nodesOf(g, id)); diff != "" {
			t.Errorf("primary-controller task %s: nodes (-want +got):\n%s", id, diff)
		}
	}
	for _, id := range onlyController {
		if got := nodesOf(g, id); len(got) > 0 && !slices.Equal(got, []string{"node-2", "node-3"}) {
			// A controller task may also be listed by a group (tasks:), which
			// places it on the group's nodes; say which.
			var via []Via
			if pt := g.Node("node-1").Task(id); pt != nil {
				via = pt.Via()
			}
			t.Errorf("controller task %s on %v (on node-1 because of %+v), want node-2 and node-3", id, got, via)
		}
	}
	// The controllers share every other task: node-1's tasks differ from node-2's
	// by the primary ones only. Report the difference for the record.
	var only1, only2 []string
	for _, pt := range g.Node("node-1").Tasks {
		if g.Node("node-2").Task(pt.ID()) == nil {
			only1 = append(only1, pt.ID())
		}
	}
	for _, pt := range g.Node("node-2").Tasks {
		if g.Node("node-1").Task(pt.ID()) == nil {
			only2 = append(only2, pt.ID())
		}
	}
	sort.Strings(only1)
	sort.Strings(only2)
	t.Logf("default graph: only on node-1: %v; only on node-2: %v", only1, only2)
	if len(only1) == 0 {
		t.Error("node-1 (primary-controller) has no task node-2 lacks")
	}

	files := artifacts(t, r)
	dot, ok := testenv.Have(t, "dot", "Graphviz: apt-get install graphviz")
	if !ok {
		t.Log("dot is not installed: the DOT files are not checked with Graphviz")
		return
	}
	for _, g := range r.Graphs {
		name := r.Model.Cluster.Name + "/graphs/" + g.Type + ".dot"
		if len(files[name]) == 0 {
			t.Fatalf("no %s", name)
		}
		path := filepath.Join(t.TempDir(), g.Type+".dot")
		if err := os.WriteFile(path, files[name], 0o644); err != nil {
			t.Fatal(err)
		}
		// dot -Tsvg lays the default graph out in several seconds; with -short,
		// -Tcanon only parses it.
		format := "-Tsvg"
		if testing.Short() {
			format = "-Tcanon"
		}
		out, err := exec.Command(dot, format, "-o", os.DevNull, path).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("dot %s %s: %v\n%s", format, name, err, out)
		}
	}
}

// --- artifacts ---

// TestDOT: one box per node (every node of the cluster, the pseudo nodes when they
// have tasks), an edge from each dependency to its dependent, cross-node edges
// included, skipped tasks dashed.
func TestDOT(t *testing.T) {
	tasks := `- {id: deploy_start, type: stage}
- {id: base, type: shell, role: [primary-controller], requires: [deploy_start]}
- {id: "off", type: shell, role: [cinder], condition: "settings:common.debug.value == true"}
- id: x
  type: shell
  role: [cinder]
  requires: ["off"]
  cross-depends: [{name: base, tags: [primary-controller]}]
`
	c := strings.Replace(semCluster, "  node-4: {id: 4, roles: [compute]}\n", "", 1)
	r, diags := renderFiles(t, graphFiles(semRelease, map[string]string{"default": tasks}, c), nil)
	noErrors(t, diags)
	const want = `digraph "prod/default" {
  rankdir=LR;
  node [shape=box, fontsize=10];
  subgraph cluster_0 {
    label="node-1";
    "base@node-1" [label="base"];
  }
  subgraph cluster_1 {
    label="node-2";
  }
  subgraph cluster_2 {
    label="node-3";
  }
  subgraph cluster_3 {
    label="node-5";
    "off@node-5" [label="off", style=dashed];
    "x@node-5" [label="x"];
  }
  subgraph cluster_4 {
    label="sync";
    "deploy_start@sync" [label="deploy_start"];
  }
  "deploy_start@sync" -> "base@node-1";
  "base@node-1" -> "x@node-5";
  "off@node-5" -> "x@node-5";
}
`
	files := artifacts(t, r)
	if diff := cmp.Diff(want, string(files["prod/graphs/default.dot"])); diff != "" {
		t.Errorf("default.dot (-want +got):\n%s", diff)
	}
	if dot, ok := testenv.Have(t, "dot", "Graphviz: apt-get install graphviz"); ok {
		path := filepath.Join(t.TempDir(), "default.dot")
		if err := os.WriteFile(path, files["prod/graphs/default.dot"], 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(dot, "-Tsvg", "-o", os.DevNull, path).CombinedOutput(); err != nil || len(out) > 0 {
			t.Errorf("dot -Tsvg: %v\n%s", err, out)
		}
	}
}

// TestArtifactsGolden pins the artifacts of the twin repository (cluster.yaml, a
// node's graph, the DOT file) and checks the manifest: every other file with its
// sha256, the revision and the tool version.
func TestArtifactsGolden(t *testing.T) {
	r, diags := renderFiles(t, twinFiles("clusters/prod.yaml", twinYAML), nil)
	noErrors(t, diags)
	files := artifacts(t, r)
	for name, file := range map[string]string{
		"prod/cluster.yaml":              "cluster.yaml",
		"prod/tasks/default.yaml":        "tasks.default.yaml",
		"prod/nodes/node-4/default.yaml": "node-4.default.yaml",
		"prod/nodes/sync/default.yaml":   "sync.default.yaml",
		"prod/graphs/default.dot":        "default.dot",
	} {
		golden.Check(t, filepath.Join("testdata", "graphs", "twin", file), files[name])
	}
	// The expanded layout's node files are the same as before the stored format
	// existed.
	expanded := expandedArtifacts(t, r)
	for name, file := range map[string]string{
		"prod/nodes/node-4/default.yaml": "node-4.default.expanded.yaml",
		"prod/nodes/sync/default.yaml":   "sync.default.expanded.yaml",
	} {
		golden.Check(t, filepath.Join("testdata", "graphs", "twin", file), expanded[name])
	}

	var manifest struct {
		FormatVersion string `json:"format_version"`
		Revision      string `json:"revision"`
		ToolVersion   string `json:"tool_version"`
		Files         []struct {
			Path   string `json:"path"`
			SHA256 string `json:"sha256"`
		} `json:"files"`
	}
	if err := json.Unmarshal(files["manifest.json"], &manifest); err != nil {
		t.Fatal(err)
	}
	if manifest.FormatVersion != "2" || manifest.Revision != "rev" || manifest.ToolVersion != "test" {
		t.Errorf("manifest format %q, revision %q, tool version %q", manifest.FormatVersion, manifest.Revision, manifest.ToolVersion)
	}
	listed := map[string]bool{}
	for _, f := range manifest.Files {
		sum := sha256.Sum256(files[f.Path])
		if _, ok := files[f.Path]; !ok || hex.EncodeToString(sum[:]) != f.SHA256 {
			t.Errorf("manifest entry %s: sha256 %s does not match", f.Path, f.SHA256)
		}
		listed[f.Path] = true
	}
	for name := range files {
		if name != "manifest.json" && !listed[name] {
			t.Errorf("%s is not in the manifest", name)
		}
	}
}

// A legacy condition that does not parse is a warning at its column; the task is kept.
func TestConditionSyntaxWarning(t *testing.T) {
	tasks := `- {id: deploy_start, type: stage}
- id: a
  type: shell
  role: '*'
  condition: "settings:common.debug.value == == true"
  requires: [deploy_start]
`
	files := graphFiles(semRelease, map[string]string{"default": tasks}, semCluster)
	r, diags := renderFiles(t, files, nil)
	noErrors(t, diags)
	if r.Graph("default").Node("node-1").Task("a") == nil {
		t.Errorf("task a is not on node-1")
	}
	var file string
	for name, src := range files {
		if strings.Contains(src, "== == true") {
			file = name
		}
	}
	line, col := locate(t, files[file], "== == true", "== true")
	got := diagText(diags)
	want := fmt.Sprintf("%s:%d:%d: warning: task a: condition: syntax error: unexpected '=='", file, line, col)
	if !strings.Contains(got, want) {
		t.Errorf("want a line starting %q; got:\n%s", want, got)
	}
}
