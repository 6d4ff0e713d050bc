package render

// Ports of upstream nailgun tests (openstack-archive/fuel-web) to fuelsync's merged
// model. Each test names the upstream test it ports and the file it comes from; the
// scenarios are rebuilt as small synthetic repositories (a release plugin, sometimes
// plugins extending it, and one cluster) and checked with Check, so what is asserted
// is fuelsync's diagnostic, its position and its exact wording.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
)

// upstreamFiles is a repository with the base release plugin of helpers_test.go
// (metadata baseMeta) whose release data is release, and the cluster clusters/prod.yaml.
func upstreamFiles(release, cluster string) map[string]string {
	return map[string]string{
		"plugins/base/metadata.yaml":             baseMeta,
		"plugins/base/release.yaml":              release,
		"plugins/base/deployment_scripts/.keep":  "",
		"plugins/base/repositories/ubuntu/.keep": "",
		"clusters/prod.yaml":                     cluster,
	}
}

// addPlugin adds to files a package_version 4.0.0 plugin called name that extends the
// base release (the ext plugin's metadata, renamed), with the given data files.
func addPlugin(files map[string]string, name string, data map[string]string) {
	meta := strings.Replace(extMeta, "name: ext\n", "name: "+name+"\n", 1)
	dir := "plugins/" + name + "/"
	files[dir+"metadata.yaml"] = meta
	files[dir+"deployment_tasks.yaml"] = "[]\n"
	files[dir+"deployment_scripts/.keep"] = ""
	files[dir+"repositories/ubuntu/.keep"] = ""
	for f, src := range data {
		files[dir+f] = src
	}
}

// diagAt is a diagnostic the port expects: its exact summary, its severity and its
// position, given by content as in cases_test.go (the one line of file containing
// lineOf, the column where token starts on it).
type diagAt struct {
	file, lineOf, token string
	summary             string
	warning             bool
}

// expectDiags checks that diags are exactly the wanted ones (any order), each as
// "severity file:line:col: summary".
func expectDiags(t *testing.T, files map[string]string, diags hcl.Diagnostics, wants ...diagAt) {
	t.Helper()
	var got, want []string
	for _, d := range diags {
		sev := sev2name(d.Severity == hcl.DiagWarning)
		if d.Subject == nil {
			got = append(got, fmt.Sprintf("%s (no position): %s", sev, d.Summary))
			continue
		}
		got = append(got, fmt.Sprintf("%s %s:%d:%d: %s", sev, d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary))
	}
	for _, w := range wants {
		line, col := locate(t, files[w.file], w.lineOf, w.token)
		want = append(want, fmt.Sprintf("%s %s:%d:%d: %s", sev2name(w.warning), w.file, line, col, w.summary))
	}
	slices.Sort(got)
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

func sev2name(warning bool) string {
	if warning {
		return "warning"
	}
	return "error"
}

// --- nailgun/nailgun/test/unit/test_assignment_validator.py ---------------------------

// The validator's models there are settings {parent: {child: {value: 1}}} (plus
// version.feature_groups for the feature-group cases) and one role, test, with one
// restriction; check_roles_requirement raises InvalidData when a restriction holds.
// Here: the release has the attribute group parent, the role test carries the case's
// restriction, one node has the role, and fuelsync.yaml sets feature_groups.

const assignmentRelease = `roles_metadata:
  test:
    name: Test
    description: The role under test
    restrictions:
%s
tags_metadata:
  test: {has_primary: false}
components_metadata:
  - name: hypervisor:qemu
    label: QEMU
attributes_metadata:
  editable:
    parent:
      child: {value: 1}
`

const assignmentCluster = `cluster: prod
release: base-1.0
components: [hypervisor:qemu]
nodes:
  node-1: {id: 1, roles: [test]}
`

func TestCheckRolesRequirement(t *testing.T) {
	for _, tc := range []struct {
		name string
		// restriction is the YAML list item(s) under restrictions:, indented.
		restriction   string
		featureGroups string // fuelsync.yaml's feature_groups, "" for none
		// mismatch is the expected message after "restrictions mismatch: ", or "-" when
		// the role is valid.
		mismatch string
	}{
		{
			// test_check_roles_requirement_equal: 1 != 1 does not hold.
			name:        "test_check_roles_requirement_equal",
			restriction: "      - condition: 'settings:parent.child.value != 1'\n        message: error",
			mismatch:    "-",
		},
		{
			// test_check_roles_requirement_not_equal: 1 == 'x' does not hold.
			name:        "test_check_roles_requirement_not_equal",
			restriction: "      - condition: \"settings:parent.child.value == 'x'\"\n        message: error",
			mismatch:    "-",
		},
		{
			// test_check_roles_requirement_failed: 1 != 0 holds.
			name:        "test_check_roles_requirement_failed",
			restriction: "      - condition: 'settings:parent.child.value != 0'\n        message: error",
			mismatch:    "error",
		},
		{
			// test_check_roles_requirement_in_feature_group: the short form
			// {condition: message}; 'advanced' is a feature group, so it does not hold.
			name:          "test_check_roles_requirement_in_feature_group",
			restriction:   "      - \"not ('advanced' in version:feature_groups)\": error",
			featureGroups: "feature_groups: [advanced]\n",
			mismatch:      "-",
		},
		{
			// test_check_roles_requirement_not_in_feature_group: the string form (no
			// message); no feature group, so it holds and the message is empty.
			name:          "test_check_roles_requirement_not_in_feature_group",
			restriction:   "      - \"not ('advanced' in version:feature_groups)\"",
			featureGroups: "feature_groups: []\n",
			mismatch:      "",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := upstreamFiles(fmt.Sprintf(assignmentRelease, tc.restriction), assignmentCluster)
			if tc.featureGroups != "" {
				files["fuelsync.yaml"] = tc.featureGroups
			}
			_, models, diags := checkRepo(t, mapFS(files))
			if models["prod"] == nil {
				t.Fatalf("no model for cluster prod:\n%s", diagText(diags))
			}
			if tc.mismatch == "-" {
				expectDiags(t, files, diags)
				return
			}
			expectDiags(t, files, diags, diagAt{file: "clusters/prod.yaml", lineOf: "node-1", token: "test]",
				summary: "Role 'test' restrictions mismatch: " + tc.mismatch})
		})
	}
}

// --- nailgun/nailgun/test/unit/test_restriction.py -------------------------------------

// restrictionRelease holds the DATA of test_restriction.py: the attribute group
// `group` (attribute_1..attribute_5, with their restrictions) and the roles_meta
// cinder, controller and mongo with their limits, plus roles x and y carrying the
// restrictions of attribute_1 and attribute_3 (TestRestriction checks those lists).
const restrictionRelease = `roles_metadata:
  cinder:
    name: Cinder
    description: Block storage
    limits:
      min: 1
      overrides:
        - condition: 'settings:group.attribute_2.value == true'
          message: 'At most one role_1 node can be added'
          max: 1
  controller:
    name: Controller
    description: Control plane
    limits:
      recommended: 'settings:group.attribute_5.value'
  mongo:
    name: MongoDB
    description: Telemetry database
    limits:
      max: 12
      message: 'At most 12 MongoDB node should be added'
      overrides:
        - condition: 'settings:group.attribute_3.value == "spam"'
          min: 4
          message: 'At least 4 MongoDB node can be added if spam'
        - condition: 'settings:group.attribute_3.value == "egg"'
          recommended: 3
          message: "At least 3 MongoDB nodes are recommended"
  x:
    name: X
    description: The restrictions of attribute_1
    restrictions:
      - condition: 'settings:group.attribute_2.value == true'
        message: 'Only one of attributes 1 and 2 allowed'
      - condition: 'settings:group.attribute_3.value == "spam"'
        message: 'Only one of attributes 1 and 3 allowed'
  y:
    name: Y
    description: The restrictions of attribute_3
    restrictions:
      - condition: 'settings:group.attribute_3.value ==
          settings:group.attribute_4.value'
        message: 'Only one of attributes 3 and 4 allowed'
        action: enable
tags_metadata:
  cinder: {has_primary: false}
  controller: {has_primary: true}
  mongo: {has_primary: false}
  x: {has_primary: false}
  y: {has_primary: false}
components_metadata:
  - name: hypervisor:qemu
    label: QEMU
attributes_metadata:
  editable:
    group:
      attribute_1:
        name: attribute_1
        value: true
        restrictions:
          - condition: 'settings:group.attribute_2.value == true'
            message: 'Only one of attributes 1 and 2 allowed'
          - condition: 'settings:group.attribute_3.value == "spam"'
            message: 'Only one of attributes 1 and 3 allowed'
      attribute_2:
        name: attribute_2
        value: true
      attribute_3:
        name: attribute_3
        value: spam
        restrictions:
          - condition: 'settings:group.attribute_3.value ==
              settings:group.attribute_4.value'
            message: 'Only one of attributes 3 and 4 allowed'
            action: enable
      attribute_4:
        name: attribute_4
        value: spam
      attribute_5:
        name: attribute_5
        value: 4
`

// TestLimits_test_check_node_limits ports TestLimits.test_check_node_limits: nodes
// 1 cinder, 1 controller, 2 mongo. cinder is valid (the override max 1 holds, 1 node);
// controller is not (recommended is the expression settings:group.attribute_5.value,
// 4): in fuelsync a recommended limit is a warning, and nailgun's placeholder
// "Default message" is not printed; mongo is not (the override min 4 holds, with its
// message, which replaces the limits' own message).
func TestLimits_test_check_node_limits(t *testing.T) {
	cluster := `cluster: prod
release: base-1.0
components: [hypervisor:qemu]
nodes:
  node-1: {id: 1, roles: [cinder]}
  node-2: {id: 2, roles: [controller]}
  node-3: {id: 3, roles: [mongo]}
  node-4: {id: 4, roles: [mongo]}
`
	files := upstreamFiles(restrictionRelease, cluster)
	_, _, diags := checkRepo(t, mapFS(files))
	const cl = "clusters/prod.yaml"
	expectDiags(t, files, diags,
		diagAt{file: cl, lineOf: "node-2", token: "controller]", warning: true,
			summary: "Role 'controller': 4 nodes are recommended, 1 assigned."},
		diagAt{file: cl, lineOf: "node-3", token: "mongo]",
			summary: "Role 'mongo' needs at least 4 nodes, 2 assigned. At least 4 MongoDB node can be added if spam"},
	)
}

// TestLimits_test_check_override ports TestLimits.test_check_override (the override
// of cinder's limits, max 1 while attribute_2 is true): with 2 cinder nodes the override's max 1 is
// violated and its message is the one reported, at the second carrier.
func TestLimits_test_check_override(t *testing.T) {
	cluster := `cluster: prod
release: base-1.0
components: [hypervisor:qemu]
nodes:
  node-1: {id: 1, roles: [cinder]}
  node-2: {id: 2, roles: [cinder]}
  node-3: {id: 3, roles: [controller]}
  node-4: {id: 4, roles: [controller]}
  node-5: {id: 5, roles: [controller]}
  node-6: {id: 6, roles: [controller]}
  node-7: {id: 7, roles: [mongo]}
  node-8: {id: 8, roles: [mongo]}
  node-9: {id: 9, roles: [mongo]}
  node-10: {id: 10, roles: [mongo]}
`
	files := upstreamFiles(restrictionRelease, cluster)
	_, _, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags,
		diagAt{file: "clusters/prod.yaml", lineOf: "node-2:", token: "cinder]",
			summary: "Role 'cinder' allows at most 1 node, 2 assigned. At most one role_1 node can be added"},
	)
}

// TestLimits_override_without_message follows nailgun's LimitsMixin._check_limit for
// an override that has no message of its own: the violation's message is the
// override's, else "Default message" (which fuelsync does not print); the limits'
// own message belongs to the limits' own values. fuelsync falls back to the limits'
// message instead, so a violated min override is reported with the message written
// for max ("... needs at least 4 nodes, 1 assigned. At most 12 MongoDB node should
// be added").
func TestLimits_override_without_message(t *testing.T) {
	release := `roles_metadata:
  mongo:
    name: MongoDB
    description: Telemetry database
    limits:
      max: 12
      message: 'At most 12 MongoDB node should be added'
      overrides:
        - condition: 'settings:group.on.value == true'
          min: 4
components_metadata:
  - name: hypervisor:qemu
    label: QEMU
attributes_metadata:
  editable:
    group:
      on: {value: true}
`
	cluster := "cluster: prod\nrelease: base-1.0\ncomponents: [hypervisor:qemu]\nnodes:\n  node-1: {id: 1, roles: [mongo]}\n"
	files := upstreamFiles(release, cluster)
	_, _, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags, diagAt{file: "clusters/prod.yaml", lineOf: "node-1", token: "mongo",
		summary: "Role 'mongo' needs at least 4 nodes, 1 assigned."})
}

// TestLimits_test_get_proper_message ports TestLimits.test_get_proper_message: when
// several limits of one kind are violated, the message of the strictest one is
// reported (highest min, lowest max). Expressed with four overrides that all hold:
// min 1 and min 2, max 5 and max 8.
func TestLimits_test_get_proper_message(t *testing.T) {
	release := `roles_metadata:
  proper:
    name: Proper
    description: Limits with several messages
    limits:
      overrides:
        - {condition: 'settings:group.on.value == true', min: 1, message: 'Message for min_1'}
        - {condition: 'settings:group.on.value == true', min: 2, message: 'Message for min_2'}
        - {condition: 'settings:group.on.value == true', max: 5, message: 'Message for max_5'}
        - {condition: 'settings:group.on.value == true', max: 8, message: 'Message for max_8'}
  other:
    name: Other
    description: Another role
tags_metadata:
  proper: {has_primary: false}
  other: {has_primary: false}
components_metadata:
  - name: hypervisor:qemu
    label: QEMU
attributes_metadata:
  editable:
    group:
      on: {value: true}
`
	node := func(i int, role string) string {
		return fmt.Sprintf("  node-%d: {id: %d, roles: [%s]}\n", i, i, role)
	}
	t.Run("min", func(t *testing.T) {
		t.Parallel()
		cluster := "cluster: prod\nrelease: base-1.0\ncomponents: [hypervisor:qemu]\nnodes:\n" + node(1, "other")
		files := upstreamFiles(release, cluster)
		_, _, diags := checkRepo(t, mapFS(files))
		expectDiags(t, files, diags,
			diagAt{file: "clusters/prod.yaml", lineOf: "nodes:", token: "nodes",
				summary: "Role 'proper' needs at least 2 nodes, 0 assigned. Message for min_2"})
	})
	t.Run("max", func(t *testing.T) {
		t.Parallel()
		cluster := "cluster: prod\nrelease: base-1.0\ncomponents: [hypervisor:qemu]\nnodes:\n"
		for i := 1; i <= 9; i++ {
			cluster += node(i, "proper")
		}
		files := upstreamFiles(release, cluster)
		_, _, diags := checkRepo(t, mapFS(files))
		// At the first carrier beyond the limit: the sixth.
		expectDiags(t, files, diags,
			diagAt{file: "clusters/prod.yaml", lineOf: "node-6:", token: "proper]",
				summary: "Role 'proper' allows at most 5 nodes, 9 assigned. Message for max_5"})
	})
}

// TestRestriction_test_check_restrictions ports TestRestriction.test_check_restrictions
// as role restrictions: attribute_1's two restrictions both hold, so their messages are
// joined by ". "; attribute_3's restriction (action enable, comparing two settings)
// holds too, and a role check honours every action.
func TestRestriction_test_check_restrictions(t *testing.T) {
	cluster := `cluster: prod
release: base-1.0
components: [hypervisor:qemu]
nodes:
  node-1: {id: 1, roles: [cinder]}
  node-2: {id: 2, roles: [controller]}
  node-3: {id: 3, roles: [controller]}
  node-4: {id: 4, roles: [controller]}
  node-5: {id: 5, roles: [controller]}
  node-6: {id: 6, roles: [mongo]}
  node-7: {id: 7, roles: [mongo]}
  node-8: {id: 8, roles: [mongo]}
  node-9: {id: 9, roles: [mongo]}
  node-10: {id: 10, roles: [x]}
  node-11: {id: 11, roles: [y]}
`
	files := upstreamFiles(restrictionRelease, cluster)
	_, _, diags := checkRepo(t, mapFS(files))
	const cl = "clusters/prod.yaml"
	expectDiags(t, files, diags,
		diagAt{file: cl, lineOf: "node-10", token: "x]",
			summary: "Role 'x' restrictions mismatch: Only one of attributes 1 and 2 allowed. Only one of attributes 1 and 3 allowed"},
		diagAt{file: cl, lineOf: "node-11", token: "y]",
			summary: "Role 'y' restrictions mismatch: Only one of attributes 3 and 4 allowed"},
	)
}

// --- nailgun/nailgun/test/integration/test_plugin_manager.py ---------------------------

// TestPluginManager there creates two package_version 3.0.0 plugins, test_plugin_1
// and test_plugin_2, each with a volume and a volumes_roles_mapping entry named after
// itself, enabled in the cluster. nailgun names a plugin by its full name
// (test_plugin_1-0.1.0); fuelsync by its name.

func pluginVolumes(ids ...string) string {
	var b strings.Builder
	b.WriteString("volumes:\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "  - {id: %s, type: vg}\n", id)
	}
	fmt.Fprintf(&b, "volumes_roles_mapping:\n  %s: [{allocate_size: min, id: %s}]\n", ids[len(ids)-1], ids[len(ids)-1])
	return b.String()
}

// volumesRepo is the base release with a cluster that enables plugins, each with the
// volumes.yaml given.
func volumesRepo(t *testing.T, plugins []string, volumes map[string]string) map[string]string {
	t.Helper()
	cluster := strings.Replace(baseCluster, "plugins: [ext]\n", "plugins: ["+strings.Join(plugins, ", ")+"]\n", 1)
	cluster = strings.Replace(cluster, "  node-5: {id: 5, roles: [ext-role]}\n", "", 1)
	files := upstreamFiles(baseRelease, cluster)
	for _, p := range plugins {
		addPlugin(files, p, map[string]string{"volumes.yaml": volumes[p]})
	}
	return files
}

// TestPluginManager_test_get_plugin_volumes_metadata_for_cluster: the volumes of both
// plugins are added to the release's, and their roles mappings too.
func TestPluginManager_test_get_plugin_volumes_metadata_for_cluster(t *testing.T) {
	files := volumesRepo(t, []string{"test_plugin_1", "test_plugin_2"}, map[string]string{
		"test_plugin_1": pluginVolumes("test_plugin_1"),
		"test_plugin_2": pluginVolumes("test_plugin_2"),
	})
	_, models, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags)
	m := models["prod"]
	var ids []string
	for _, v := range m.Volumes.Volumes {
		ids = append(ids, v.Get("id").String())
	}
	if diff := cmp.Diff([]string{"os", "cinder", "test_plugin_1", "test_plugin_2"}, ids); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	for _, p := range []string{"test_plugin_1", "test_plugin_2"} {
		got := m.Volumes.RolesMapping[p].Interface()
		want := []any{map[string]any{"allocate_size": "min", "id": p}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("volumes_roles_mapping[%s] (-want +got):\n%s", p, diff)
		}
	}
}

// TestPluginManager_test_raise_exception_when_plugin_overlap_release_volumes: a plugin
// defining the release's volume os.
func TestPluginManager_test_raise_exception_when_plugin_overlap_release_volumes(t *testing.T) {
	files := volumesRepo(t, []string{"test_plugin_3"}, map[string]string{
		"test_plugin_3": pluginVolumes("os", "test_plugin_3"),
	})
	_, _, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags, diagAt{file: "clusters/prod.yaml", lineOf: "plugins:", token: "test_plugin_3",
		summary: `Plugin test_plugin_3 is overlapping with release by introducing the same volume with id "os"`})
}

// TestPluginManager_test_raise_exception_when_plugin_overlap_another_plugin_volumes: a
// third plugin defining test_plugin_2's volume.
func TestPluginManager_test_raise_exception_when_plugin_overlap_another_plugin_volumes(t *testing.T) {
	files := volumesRepo(t, []string{"test_plugin_1", "test_plugin_2", "test_plugin_4"}, map[string]string{
		"test_plugin_1": pluginVolumes("test_plugin_1"),
		"test_plugin_2": pluginVolumes("test_plugin_2"),
		"test_plugin_4": pluginVolumes("test_plugin_2", "test_plugin_4"),
	})
	_, _, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags, diagAt{file: "clusters/prod.yaml", lineOf: "plugins:", token: "test_plugin_4",
		summary: `Plugin test_plugin_4 is overlapping with plugin test_plugin_2 by introducing the same volume with id "test_plugin_2"`})
}

// The component tests use the environment's default components: one component,
// hypervisor:test_hypervisor.
const testHypervisor = "- name: hypervisor:test_hypervisor\n  label: Test hypervisor\n"

// componentsRepo is the base release with hypervisor:test_hypervisor among its
// components when inRelease, and the plugins given, each offering that component.
func componentsRepo(t *testing.T, inRelease bool, plugins ...string) map[string]string {
	t.Helper()
	release := baseRelease
	if inRelease {
		release = strings.Replace(release, "components_metadata:\n", "components_metadata:\n  - name: hypervisor:test_hypervisor\n    label: Test hypervisor\n", 1)
	}
	cluster := strings.Replace(baseCluster, "plugins: [ext]\n", "plugins: []\n", 1)
	cluster = strings.Replace(cluster, "  node-5: {id: 5, roles: [ext-role]}\n", "", 1)
	files := upstreamFiles(release, cluster)
	for _, p := range plugins {
		addPlugin(files, p, map[string]string{"components.yaml": testHypervisor})
	}
	return files
}

// TestPluginManager_test_raise_exception_when_plugin_overlap_release_component: the
// overlap is a problem of the data (it is reported even though no cluster enables the
// plugin), at the plugin's component.
func TestPluginManager_test_raise_exception_when_plugin_overlap_release_component(t *testing.T) {
	files := componentsRepo(t, true, "plugin_with_components")
	_, _, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags, diagAt{file: "plugins/plugin_with_components/components.yaml", lineOf: "hypervisor:test_hypervisor", token: "hypervisor:test_hypervisor",
		summary: `Plugin plugin_with_components is overlapping with release by introducing the same component with name "hypervisor:test_hypervisor"`})
}

// TestPluginManager_test_raise_exception_when_plugin_overlap_another_component: two
// plugins offering the same component; the second one (in repository order) is
// reported.
func TestPluginManager_test_raise_exception_when_plugin_overlap_another_component(t *testing.T) {
	files := componentsRepo(t, false, "plugin_with_components_1", "plugin_with_components_2")
	_, _, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags, diagAt{file: "plugins/plugin_with_components_2/components.yaml", lineOf: "hypervisor:test_hypervisor", token: "hypervisor:test_hypervisor",
		summary: `Plugin plugin_with_components_2 is overlapping with plugin_with_components_1 by introducing the same component with name "hypervisor:test_hypervisor"`})
}

// TestPluginManager_test_get_components_metadata: a plugin's components are offered
// with the release's.
func TestPluginManager_test_get_components_metadata(t *testing.T) {
	files := componentsRepo(t, false, "plugin_with_components")
	_, models, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags)
	c := models["prod"].Registry.Get("hypervisor:test_hypervisor")
	if c == nil || c.Plugin != "plugin_with_components" {
		t.Fatalf("hypervisor:test_hypervisor = %+v, want the plugin's component", c)
	}
}

// TestPluginManager_test_enable_plugins_by_component: choosing a plugin's component
// (storage:test_storage) enables the plugin, though `plugins:` does not list it.
func TestPluginManager_test_enable_plugins_by_component(t *testing.T) {
	cluster := strings.Replace(baseCluster, "plugins: [ext]\n", "", 1)
	cluster = strings.Replace(cluster, "  node-5: {id: 5, roles: [ext-role]}\n", "", 1)
	cluster = strings.Replace(cluster, "  - storage:block:lvm\n", "  - storage:block:lvm\n  - storage:test_storage\n", 1)
	files := upstreamFiles(baseRelease, cluster)
	addPlugin(files, "plugin_with_test_storage", map[string]string{"components.yaml": "- name: storage:test_storage\n  label: Test storage\n"})
	_, models, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags)
	m := models["prod"]
	if len(m.Plugins) != 1 || m.Plugins[0].Plugin.Name != "plugin_with_test_storage" || m.Plugins[0].Component != "storage:test_storage" {
		t.Fatalf("enabled plugins = %+v, want plugin_with_test_storage enabled by storage:test_storage", m.Plugins)
	}
	line, _ := locate(t, cluster, "storage:test_storage", "storage:test_storage")
	if c := m.Plugins[0].Cause.Range; c.Filename != "clusters/prod.yaml" || c.Start.Line != line {
		t.Errorf("cause at %s:%d, want clusters/prod.yaml:%d", c.Filename, c.Start.Line, line)
	}
}

// --- nailgun/nailgun/test/unit/test_objects.py, TestClusterObjectGetRoles --------------

// The release has roles role_a and role_b; each test creates plugins with roles and
// enables them in the cluster. ("Unable to register" is nailgun's
// PluginManager.get_plugins_node_roles; the tests live in test_objects.py, not in
// test_plugin_manager.py.) nailgun names the plugin by its id; fuelsync by its name,
// at the plugin's `plugins:` entry.

const getRolesRelease = `roles_metadata:
  role_a: {name: Role A, description: Role A is ...}
  role_b: {name: Role B, description: Role B is ...}
components_metadata:
  - name: hypervisor:qemu
    label: QEMU
`

func getRolesRepo(plugins []string, roles map[string]string) map[string]string {
	cluster := "cluster: prod\nrelease: base-1.0\nplugins: [" + strings.Join(plugins, ", ") + "]\ncomponents: [hypervisor:qemu]\nnodes:\n  node-1: {id: 1, roles: [role_a]}\n"
	files := upstreamFiles(getRolesRelease, cluster)
	for _, p := range plugins {
		addPlugin(files, p, map[string]string{"node_roles.yaml": roles[p]})
	}
	return files
}

func roleNames(m *Model) []string {
	var names []string
	for _, r := range m.Roles {
		names = append(names, r.Name)
	}
	return names
}

func TestClusterObjectGetRoles(t *testing.T) {
	const cl = "clusters/prod.yaml"
	t.Run("test_no_plugins_no_additional_roles", func(t *testing.T) {
		files := getRolesRepo(nil, nil)
		_, models, diags := checkRepo(t, mapFS(files))
		expectDiags(t, files, diags)
		if diff := cmp.Diff([]string{"role_a", "role_b"}, roleNames(models["prod"])); diff != "" {
			t.Errorf("roles (-want +got):\n%s", diff)
		}
	})
	t.Run("test_plugin_adds_new_roles", func(t *testing.T) {
		files := getRolesRepo([]string{"plugin_c"}, map[string]string{
			"plugin_c": "role_c: {name: Role C, description: Role C is ...}\n",
		})
		_, models, diags := checkRepo(t, mapFS(files))
		expectDiags(t, files, diags)
		if diff := cmp.Diff([]string{"role_a", "role_b", "role_c"}, roleNames(models["prod"])); diff != "" {
			t.Errorf("roles (-want +got):\n%s", diff)
		}
	})
	t.Run("test_plugin_role_conflict_with_core_roles", func(t *testing.T) {
		files := getRolesRepo([]string{"plugin_x"}, map[string]string{
			"plugin_x": "role_a: {name: Role X, description: Role X is ...}\n",
		})
		_, models, diags := checkRepo(t, mapFS(files))
		expectDiags(t, files, diags, diagAt{file: cl, lineOf: "plugins:", token: "plugin_x",
			summary: "Plugin plugin_x is unable to register the following node roles: role_a"})
		// The release's role stays.
		if r := models["prod"].Role("role_a"); r == nil || r.Plugin != nil {
			t.Errorf("role_a = %+v, want the release's", r)
		}
	})
	t.Run("test_plugin_role_conflict_with_other_plugins", func(t *testing.T) {
		files := getRolesRepo([]string{"plugin_1", "plugin_2"}, map[string]string{
			"plugin_1": "role_x: {name: Role X, description: Role X is ...}\n",
			"plugin_2": "role_x: {name: Role X, description: Role X is ...}\n",
		})
		_, _, diags := checkRepo(t, mapFS(files))
		expectDiags(t, files, diags, diagAt{file: cl, lineOf: "plugins:", token: "plugin_2",
			summary: "Plugin plugin_2 is unable to register the following node roles: role_x"})
	})
	t.Run("test_plugin_role_conflict_with_plugin_and_core", func(t *testing.T) {
		files := getRolesRepo([]string{"plugin_1", "plugin_2"}, map[string]string{
			"plugin_1": "role_x: {name: Role X, description: Role X is ...}\n",
			"plugin_2": "role_x: {name: Role Y, description: Role Y is ...}\nrole_a: {name: Role A, description: Role A is ...}\n",
		})
		_, _, diags := checkRepo(t, mapFS(files))
		// Upstream compares the set {role_x, role_a}; fuelsync lists them in the
		// plugin's order.
		expectDiags(t, files, diags, diagAt{file: cl, lineOf: "plugins:", token: "plugin_2",
			summary: "Plugin plugin_2 is unable to register the following node roles: role_x, role_a"})
	})
}

// --- Plugin._process_tags (nailgun/nailgun/objects/plugin.py) ---------------------------

// The upstream tests test_plugin_role_with_empty_tags and test_plugin_legacy_tags
// (nailgun/nailgun/test/integration/test_plugin_manager.py on master) exercise
// Plugin._process_tags; they are not in the versions of that file available to this
// port, so these tests follow the behaviour as notes/fuel.md §6.4 records it: a plugin
// without tags metadata gets, for every role without a `tags` key, tags [role] and a
// tag whose has_primary is the role's; a role that declares `tags` (even an empty
// list) is left alone.
func TestPluginLegacyTags(t *testing.T) {
	roles := `legacy-primary:
  name: Legacy primary
  description: A role without tags, with has_primary
  has_primary: true
legacy-plain:
  name: Legacy plain
  description: A role without tags nor has_primary
empty-tags:
  name: Empty tags
  description: A role with an empty tag list
  has_primary: true
  tags: []
`
	cluster := strings.Replace(baseCluster, "  node-5: {id: 5, roles: [ext-role]}\n",
		"  node-5: {id: 5, roles: [ext-role]}\n  node-6: {id: 6, roles: [legacy-primary, legacy-plain, empty-tags]}\n", 1)
	files := applyEdits(t, baseFiles(), []edit{
		{"plugins/ext/node_roles.yaml", "", extRoles + roles},
		{"clusters/prod.yaml", "", cluster},
	})
	_, models, diags := checkRepo(t, mapFS(files))
	expectDiags(t, files, diags)
	m := models["prod"]

	t.Run("test_plugin_legacy_tags", func(t *testing.T) {
		for _, tc := range []struct {
			role       string
			hasPrimary bool
		}{{"ext-role", true}, {"legacy-primary", true}, {"legacy-plain", false}} {
			r := m.Role(tc.role)
			if r == nil {
				t.Fatalf("no role %s", tc.role)
			}
			if diff := cmp.Diff([]string{tc.role}, r.Tags); diff != "" {
				t.Errorf("role %s tags (-want +got):\n%s", tc.role, diff)
			}
			tag := m.Tags[tc.role]
			if tag == nil {
				t.Fatalf("no tag %s in the merged tags metadata", tc.role)
			}
			if tag.HasPrimary != tc.hasPrimary || tag.Owner != "plugin ext" {
				t.Errorf("tag %s = {has_primary %v, owner %q}, want {%v, \"plugin ext\"}", tc.role, tag.HasPrimary, tag.Owner, tc.hasPrimary)
			}
		}
	})
	t.Run("test_plugin_role_with_empty_tags", func(t *testing.T) {
		r := m.Role("empty-tags")
		if r == nil {
			t.Fatal("no role empty-tags")
		}
		if len(r.Tags) != 0 {
			t.Errorf("role empty-tags tags = %q, want none (the role declares tags: [])", r.Tags)
		}
		if tag := m.Tags["empty-tags"]; tag != nil {
			t.Errorf("tag empty-tags = %+v, want none: a role with a tags key gets no implicit tag", tag)
		}
	})
	t.Run("plugin with tags metadata", func(t *testing.T) {
		// With node_tags.yaml the plugin supplies its tags: no tag is derived from a
		// role's has_primary.
		files := applyEdits(t, files, []edit{
			{"plugins/ext/metadata.yaml", "package_version: 4.0.0\n", "package_version: 6.0.0\n"},
			{"plugins/ext/node_tags.yaml", "", "ext-role: {has_primary: false}\n"},
		})
		_, models, diags := checkRepo(t, mapFS(files))
		m := models["prod"]
		if m == nil {
			t.Fatalf("no model:\n%s", diagText(diags))
		}
		if tag := m.Tags["ext-role"]; tag == nil || tag.HasPrimary {
			t.Errorf("tag ext-role = %+v, want node_tags.yaml's (has_primary false)", tag)
		}
		if tag := m.Tags["legacy-primary"]; tag != nil {
			t.Errorf("tag legacy-primary = %+v, want none (the plugin has tags metadata)", tag)
		}
	})
}
