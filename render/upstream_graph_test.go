package render

// Ports of nailgun's per-node graph and primary-tag tests (openstack-archive/fuel-web)
// to fuelsync's renderer. The scenarios are rebuilt as small repositories (helpers in
// graphs_test.go): node uids become node names (node-1 … node-4), nailgun's master
// node is "master" and its sync node (None) is "sync". Upstream writes an edge on
// either end (requires / required_for); fuelsync writes every edge on the dependent
// task, so each upstream required_for {name: X, node_id: N} of task T on
// node M is asserted as "X@N requires T@M".

import (
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lcmRelease is the release of TestTransactionSerializer: four roles (one tag each,
// none with a primary, as RoleResolver in the upstream test has no primaries) and an
// attribute public_ssl.hostname = localhost, the value the upstream context gives
// every node.
const lcmRelease = `roles_metadata:
  controller: {name: Controller, description: Control plane}
  compute: {name: Compute, description: Instances}
  cinder: {name: Cinder, description: Block storage}
  custom: {name: Custom, description: A role of its own}
tags_metadata:
  controller: {has_primary: false}
  compute: {has_primary: false}
  cinder: {has_primary: false}
  custom: {has_primary: false}
attributes_metadata:
  editable:
    public_ssl:
      hostname: {value: localhost, type: text}
`

// lcmTasks are TestTransactionSerializer.tasks (fuel-web master), in YAML. The
// legacy condition of task3 reads settings:public_ssl.hostname upstream, where
// settings is the node's serialized data; fuelsync's settings model is the editable
// attributes, so the same test is written settings:public_ssl.hostname.value.
const lcmTasks = `- id: task1
  roles: [controller]
  type: puppet
  version: 2.0.0
  condition: {yaql_exp: '$.public_ssl.hostname = localhost'}
  parameters: {}
  requires: [task3]
  required_for: [task2]
  cross_depends: [{name: task2, role: compute}]
  cross_depended_by: [{name: task3, role: cinder}]
- id: task2
  roles: [compute, controller]
  type: puppet
  version: 2.0.0
  condition: {yaql_exp: '$.public_ssl.hostname != localhost'}
  parameters: {}
  cross_depends: [{name: task3, role: cinder}]
- id: task3
  roles: [cinder, controller]
  type: puppet
  version: 2.0.0
  condition: 'settings:public_ssl.hostname.value != "localhost"'
  parameters: {}
  cross_depends: [{name: task3, role: /.*/}]
  cross_depended_by: [{name: task2, role: self}]
`

const lcmTask4 = `- id: task4
  roles: [controller]
  type: puppet
  version: 2.0.0
  parameters: {}
  cross_depended_by: [{name: task3}]
`

const lcmCluster = `cluster: prod
release: base-1.0
nodes:
  node-1: {id: 1, roles: [controller]}
  node-2: {id: 2, roles: [compute]}
  node-3: {id: 3, roles: [cinder]}
  node-4: {id: 4, roles: [custom]}
`

// TestTransactionSerializer_test_serialize_integration ports
// nailgun/nailgun/test/unit/test_lcm_transaction_serializer.py
// test_serialize_integration: four tasks on four nodes.
//
// Where upstream evaluates yaql, fuelsync keeps the expression verbatim
// for the deployer: task1 (yaql true upstream) is puppet in both; task2 (yaql false upstream,
// so skipped there) stays puppet in fuelsync, with its condition in the artifact for
// the deployer. task3's legacy condition is false in both, so it is skipped.
//
// The upstream expectation contains two dependency cycles across nodes (nailgun
// does not check, astute would refuse the graph): task3@node-1 and task3@node-3
// cross-depend on each other (role /.*/), and task1@node-1 → task3@node-3 →
// task2@node-2 → task1@node-1. fuelsync reports one cycle as an error
// (a set of tasks depending on each other) and still renders every edge.
func TestTransactionSerializer_test_serialize_integration(t *testing.T) {
	files := graphFiles(lcmRelease, map[string]string{"default": lcmTasks + lcmTask4}, lcmCluster)
	r, diags := renderFiles(t, files, nil)
	g := r.Graph("default")

	// Upstream's controller (node 1):
	//   task1 requires (1,task3) (2,task2); required_for (1,task2) (3,task3)
	//   task2 requires (3,task3)
	//   task3 requires (3,task3); required_for (1,task2)
	//   task4 required_for (1,task3) (3,task3)
	// compute (node 2): task2 requires (3,task3)
	// cinder (node 3): task3 requires (1,task3)
	want := map[string][]string{
		"node-1": {
			"task1 puppet <- task2@node-2 task3@node-1",
			"task2 puppet <- task1@node-1 task3@node-1 task3@node-3",
			"task3 skipped <- task3@node-3 task4@node-1",
			"task4 puppet",
		},
		"node-2": {"task2 puppet <- task3@node-3"},
		"node-3": {"task3 skipped <- task1@node-1 task3@node-1 task4@node-1"},
		"node-4": nil,
	}
	// compare_sorted, as upstream: with cycles there is no topological order.
	got := taskSets(g)
	for _, lines := range got {
		sort.Strings(lines)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("placement and dependencies (-want +got):\n%s", diff)
	}

	// The conditions as the artifact shows them: yaql kept, legacy evaluated (a
	// skipped task has no parameters and no condition).
	doc := nodeArtifact(t, r, "node-1", "default")
	for _, tc := range []struct {
		id, cond string
		params   bool
	}{
		{"task1", "$.public_ssl.hostname = localhost", true},
		{"task2", "$.public_ssl.hostname != localhost", true},
		{"task3", "", false},
		{"task4", "", true},
	} {
		task := artifactTask(t, doc, tc.id)
		gotCond := ""
		if c, ok := task["condition"].(map[string]any); ok {
			gotCond, _ = c["yaql_exp"].(string)
		}
		if gotCond != tc.cond {
			t.Errorf("node-1 %s: condition %q, want %q", tc.id, gotCond, tc.cond)
		}
		if _, ok := task["parameters"]; ok != tc.params {
			t.Errorf("node-1 %s: parameters present = %v, want %v", tc.id, ok, tc.params)
		}
	}

	// One cycle error, at the id of the first task of the printed cycle.
	cycles := cycleErrors(diags)
	if len(cycles) != 1 {
		t.Fatalf("want one cycle error, got:\n%s", diagText(diags))
	}
	const wantCycle = "task3@node-3 -> task2@node-2 -> task1@node-1 -> task3@node-3"
	if got := checkCycle(t, g, cycles[0]); got != wantCycle {
		t.Errorf("cycle %q, want %q", got, wantCycle)
	}
	line, col := locate(t, files["plugins/base/graphs/default.yaml"], "- id: task3", "task3")
	if s := cycles[0].Subject; s.Start.Line != line || s.Start.Column != col {
		t.Errorf("cycle error at %d:%d, want %d:%d", s.Start.Line, s.Start.Column, line, col)
	}
}

// TestTransactionSerializer_test_tasks_expand_groups ports test_tasks_expand_groups:
// a group on the custom role lists task4 (here: on every node, /.*/, cross-depending
// on task2 of the same node) and task2. Upstream appends task4 to the list that
// already holds the controller-only task4 of the newer test; fuelsync rejects two
// definitions of one id in one file, so this port uses the three first tasks and
// the new task4 only (the upstream expectation for node 4 is the same either way).
// The upstream group has no id; fuelsync needs one (custom-group).
func TestTransactionSerializer_test_tasks_expand_groups(t *testing.T) {
	tasks := lcmTasks + `- id: task4
  roles: ['/.*/']
  type: puppet
  version: 2.0.0
  parameters: {}
  cross_depends: [{name: task2, role: self}]
- id: custom-group
  type: group
  roles: custom
  tasks: [task4, task2]
`
	files := graphFiles(lcmRelease, map[string]string{"default": tasks}, lcmCluster)
	r, _ := renderFiles(t, files, nil)
	g := r.Graph("default")
	// Upstream, node 4: task2 requires (3,task3); task4 requires (4,task2).
	want := []string{
		"task2 puppet <- task3@node-3",
		"task4 puppet <- task2@node-4",
	}
	if diff := cmp.Diff(want, taskLines(g.Node("node-4"))); diff != "" {
		t.Errorf("node-4 (-want +got):\n%s", diff)
	}
	// Node 4 has task2 through the group only; the group itself is not a task.
	if vias := g.Node("node-4").Task("task2").Via(); len(vias) != 1 || vias[0] != (Via{Selector: "group", Item: "custom-group"}) {
		t.Errorf("task2 on node-4 is there because of %+v, want the group custom-group", vias)
	}
	for _, ng := range g.Nodes {
		if ng.Task("custom-group") != nil {
			t.Errorf("the group is placed on %s", ng.Node)
		}
	}
	// The group's fault tolerance: none written → nodes + 1 (nailgun's
	// calculate_fault_tolerance(None, 1)).
	wantFT := []FaultToleranceGroup{{Name: "custom-group", Nodes: []string{"node-4"}, FaultTolerance: 2}}
	if diff := cmp.Diff(wantFT, g.FaultTolerance); diff != "" {
		t.Errorf("fault tolerance groups (-want +got):\n%s", diff)
	}
}

// --- test_primary_tags_assignment.py ---

// primaryRelease has the two roles the upstream test runs with, controller and mongo,
// both with a primary.
const primaryRelease = `roles_metadata:
  controller: {name: Controller, description: Control plane}
  mongo: {name: Mongo, description: Telemetry database}
  compute: {name: Compute, description: Instances}
tags_metadata:
  controller: {has_primary: true}
  mongo: {has_primary: true}
  compute: {has_primary: false}
`

// primaryTasks: one task for the primary carrier of each tag and one for the others.
const primaryTasks = `- {id: primary-controller-task, type: shell, tags: [primary-controller]}
- {id: controller-task, type: shell, tags: [controller]}
- {id: primary-mongo-task, type: shell, tags: [primary-mongo]}
- {id: mongo-task, type: shell, tags: [mongo]}
`

// TestPrimaryRolesAssignment ports nailgun/nailgun/test/unit/test_primary_tags_assignment.py
// (BasePrimaryRolesAssignmentTestCase, run for controller and for mongo). A node that
// is "ready" upstream is a node the applied state lists as deployed; nailgun's
// pending_deletion has no counterpart (a node removed from the spec is simply gone).
func TestPrimaryRolesAssignment(t *testing.T) {
	for _, role := range []string{"controller", "mongo"} {
		primary := "primary-" + role
		cluster := func(mode string, nodes ...string) string {
			s := "cluster: prod\nrelease: base-1.0\nmode: " + mode + "\nnodes:\n"
			for _, n := range nodes {
				s += "  " + n + ": {roles: [" + role + "]}\n"
			}
			return s
		}
		// resolution returns each node's resolution tags.
		resolution := func(t *testing.T, c string, st AppliedState) map[string][]string {
			t.Helper()
			r, diags := renderFiles(t, graphFiles(primaryRelease, map[string]string{"default": primaryTasks}, c), st)
			noErrors(t, diags)
			out := map[string][]string{}
			for name, nt := range r.Model.NodeTags {
				out[name] = nt.Resolution
				// the tasks follow the tags
				g := r.Graph("default")
				if (g.Node(name).Task(primary+"-task") != nil) != contains(nt.Resolution, primary) ||
					(g.Node(name).Task(role+"-task") != nil) != contains(nt.Resolution, role) {
					t.Errorf("%s: tags %v but tasks %v", name, nt.Resolution, taskLines(g.Node(name)))
				}
			}
			return out
		}
		t.Run(role+"/test_primary_controllers_assigned_for_pendings_roles", func(t *testing.T) {
			// Two new nodes: the lowest id is primary.
			got := resolution(t, cluster("ha", "node-1", "node-2"), nil)
			want := map[string][]string{"node-1": {primary}, "node-2": {role}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
		t.Run(role+"/test_primary_controller_assigned_for_ready_node", func(t *testing.T) {
			// node-2 is deployed, node-1 is new: the deployed carrier wins over the
			// lower id.
			st := &testState{deployed: []string{"node-2"}}
			got := resolution(t, cluster("ha", "node-1", "node-2"), st)
			want := map[string][]string{"node-1": {role}, "node-2": {primary}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
		t.Run(role+"/test_primary_assignment_multinode", func(t *testing.T) {
			st := &testState{deployed: []string{"node-2"}}
			got := resolution(t, cluster("multinode", "node-1", "node-2"), st)
			want := map[string][]string{"node-1": {role}, "node-2": {role}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
		t.Run(role+"/test_primary_assign_after_node_is_removed_from_cluster", func(t *testing.T) {
			// assert_node_reassigned: the deployed node-2 became primary; then it
			// leaves the cluster (here: the spec no longer lists it), and the primary
			// goes to node-1 although the state still names node-2.
			st := &testState{deployed: []string{"node-2"}}
			got := resolution(t, cluster("ha", "node-1", "node-2"), st)
			if diff := cmp.Diff(map[string][]string{"node-1": {role}, "node-2": {primary}}, got); diff != "" {
				t.Fatalf("before removal (-want +got):\n%s", diff)
			}
			st.primary = map[string]string{role: "node-2"}
			got = resolution(t, cluster("ha", "node-1"), st)
			if diff := cmp.Diff(map[string][]string{"node-1": {primary}}, got); diff != "" {
				t.Errorf("after removal (-want +got):\n%s", diff)
			}
		})
		t.Run(role+"/sticky", func(t *testing.T) {
			// Primary tags stick: the applied state's primary stays primary while it carries
			// the tag, even against a deployed node with a lower id.
			st := &testState{deployed: []string{"node-1", "node-3"}, primary: map[string]string{role: "node-3"}}
			got := resolution(t, cluster("ha", "node-1", "node-2", "node-3"), st)
			want := map[string][]string{"node-1": {role}, "node-2": {role}, "node-3": {primary}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
		t.Run(role+"/sticky primary lost its role", func(t *testing.T) {
			// The state names node-3, which no longer has the role: the deployed
			// carrier with the lowest id (node-2) takes over.
			st := &testState{deployed: []string{"node-2", "node-3"}, primary: map[string]string{role: "node-3"}}
			c := cluster("ha", "node-1", "node-2") + "  node-3: {roles: [compute]}\n"
			got := resolution(t, c, st)
			want := map[string][]string{"node-1": {role}, "node-2": {primary}, "node-3": {"compute"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrimaryTagsPerTag: set_primary_tags picks a primary per tag (each with its own
// sticky state); a role's tags with has_primary are replaced by primary-<tag> on the
// primary node only for the tags it is primary for.
func TestPrimaryTagsPerTag(t *testing.T) {
	rel := `roles_metadata:
  controller: {name: Controller, description: Control plane, tags: [controller, database, keystone]}
tags_metadata:
  controller: {has_primary: true}
  database: {has_primary: true}
  keystone: {has_primary: false}
`
	c := `cluster: prod
release: base-1.0
nodes:
  node-1: {roles: [controller]}
  node-2: {roles: [controller]}
  node-3: {roles: [controller]}
`
	st := &testState{deployed: []string{"node-1", "node-2", "node-3"}, primary: map[string]string{"database": "node-3"}}
	r, diags := renderFiles(t, graphFiles(rel, map[string]string{"default": "[]\n"}, c), st)
	noErrors(t, diags)
	got := map[string][]string{}
	for name, nt := range r.Model.NodeTags {
		got[name] = nt.Resolution
	}
	want := map[string][]string{
		"node-1": {"database", "keystone", "primary-controller"},
		"node-2": {"controller", "database", "keystone"},
		"node-3": {"controller", "keystone", "primary-database"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resolution tags (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"database"}, r.Model.NodeTags["node-3"].Primary); diff != "" {
		t.Errorf("node-3 primary (-want +got):\n%s", diff)
	}
}
