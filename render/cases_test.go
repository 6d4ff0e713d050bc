package render

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// want is a diagnostic a case must produce. Its position is given by content: the
// line is the one line of file that contains lineOf, the column is where token starts
// in that line; so a case cannot pass with a miscounted position.
type want struct {
	file    string
	lineOf  string
	token   string
	summary string // a substring of the summary
	warning bool
	skip    int // added to the column: the position is skip characters into token
}

type renderCase struct {
	name  string
	edits []edit
	want  want
}

const ext2Meta = `name: ext2
title: Another extension
version: 1.0.0
package_version: 4.0.0
fuel_version: ['9.0']
description: Extends the base release too
licenses: [Apache-2.0]
authors: [fuelsync]
homepage: https://example.com/ext2
groups: [storage]
is_hotpluggable: false
releases:
  - os: ubuntu
    version: base-1.0
    mode: [ha]
`

func renderCases() []renderCase {
	const cl = "clusters/prod.yaml"
	const rel = "plugins/base/release.yaml"
	node4 := "  node-4: {id: 4, roles: [compute, cinder]}\n"
	setNode4 := func(roles string) edit {
		return edit{cl, node4, "  node-4: {id: 4, roles: [" + roles + "]}\n"}
	}
	addSetting := func(s string) edit {
		return edit{cl, "  common.debug.value: true\n", "  common.debug.value: true\n  " + s + "\n"}
	}
	return []renderCase{
		// --- roles on a node ---
		{
			name:  "conflicting roles",
			edits: []edit{setNode4("compute, controller")},
			want:  want{file: cl, lineOf: "node-4", token: "controller", summary: "Role 'controller' in conflict with role 'compute'."},
		},
		{
			name:  "conflicts star",
			edits: []edit{setNode4("compute, virt")},
			want:  want{file: cl, lineOf: "node-4", token: "virt", summary: "Role 'virt' in conflict with role 'compute'."},
		},
		{
			name:  "restriction long form",
			edits: []edit{addSetting("storage.lvm.value: false")},
			want:  want{file: cl, lineOf: "node-4", token: "cinder", summary: "Role 'cinder' restrictions mismatch: Cinder LVM should be enabled in the environment settings."},
		},
		{
			name:  "restriction short form",
			edits: []edit{setNode4("compute, ceph-osd")},
			want:  want{file: cl, lineOf: "node-4", token: "ceph-osd", summary: "Role 'ceph-osd' restrictions mismatch: Ceph should be enabled in the environment settings."},
		},
		{
			name:  "restriction on feature groups",
			edits: []edit{{"fuelsync.yaml", "", "feature_groups: [experimental]\n"}, setNode4("virt")},
			want:  want{file: cl, lineOf: "node-4", token: "virt", summary: "Role 'virt' restrictions mismatch: Advanced feature should be enabled in feature groups"},
		},
		{
			name:  "plugin role restriction",
			edits: []edit{addSetting("ext.mode.value: 'off'")},
			want:  want{file: cl, lineOf: "node-5", token: "ext-role", summary: "Role 'ext-role' restrictions mismatch: Set ext.mode first."},
		},
		{
			name:  "unknown role",
			edits: []edit{setNode4("compute, cindr")},
			want:  want{file: cl, lineOf: "node-4", token: "cindr", summary: `cindr are not valid roles for node node-4 in environment prod; did you mean "cinder"?`},
		},
		{
			name:  "role of a plugin that is not enabled",
			edits: []edit{{cl, "plugins: [ext]\n", "plugins: []\n"}},
			want:  want{file: cl, lineOf: "node-5", token: "ext-role", summary: `cluster prod: role "ext-role" belongs to plugin ext, which is not enabled`},
		},
		// --- limits ---
		{
			name: "limit min from an override",
			edits: []edit{addSetting("common.l3_ha.value: true"),
				{cl, "  node-2: {id: 2, roles: [controller]}\n  node-3: {id: 3, roles: [controller]}\n", ""}},
			want: want{file: cl, lineOf: "node-1", token: "controller", summary: "Role 'controller' needs at least 2 nodes, 1 assigned. L3 HA requires at least 2 Controller nodes."},
		},
		{
			name:  "limit min with no node",
			edits: []edit{{cl, "  node-1: {id: 1, roles: [controller]}\n  node-2: {id: 2, roles: [controller]}\n  node-3: {id: 3, roles: [controller]}\n", ""}},
			want:  want{file: cl, lineOf: "nodes:", token: "nodes", summary: "Role 'controller' needs at least 1 node, 0 assigned."},
		},
		{
			name:  "limit max",
			edits: []edit{setNode4("ext-role")},
			want:  want{file: cl, lineOf: "node-5", token: "ext-role", summary: "Role 'ext-role' allows at most 1 node, 2 assigned."},
		},
		{
			name:  "limit recommended",
			edits: []edit{setNode4("cinder")},
			want:  want{file: cl, lineOf: "nodes:", token: "nodes", summary: "Role 'compute': 1 node is recommended, 0 assigned.", warning: true},
		},
		{
			name: "limit from an expression",
			edits: []edit{{cl, "  - storage:block:lvm\n", "  - storage:block:ceph\n"},
				setNode4("compute, ceph-osd")},
			want: want{file: cl, lineOf: "node-4", token: "ceph-osd", summary: "Role 'ceph-osd' needs at least 3 nodes, 1 assigned."},
		},
		{
			name: "limit expression that is not a number",
			edits: []edit{{rel, `pool_size: {value: "3", type: text}`, `pool_size: {value: "three", type: text}`},
				{cl, "  - storage:block:lvm\n", "  - storage:block:ceph\n"}, setNode4("compute, ceph-osd")},
			want: want{file: rel, lineOf: `limits: {min: "settings:storage.pool_size.value"}`, token: "settings:storage.pool_size.value",
				summary: `cluster prod: role ceph-osd: limits.min: the limit is "three", not a whole number`},
		},
		// --- expressions ---
		{
			name:  "expression syntax error",
			edits: []edit{{rel, `"settings:storage.lvm.value == false"`, `"settings:storage.lvm.value == == false"`}},
			want:  want{file: rel, lineOf: "storage.lvm.value == ==", token: "== false", summary: `role cinder: restriction: syntax error: unexpected '=='`},
		},
		{
			name:  "expression with an unclosed parenthesis",
			edits: []edit{{rel, `"not ('advanced' in version:feature_groups)"`, `"not ('advanced' in version:feature_groups"`}},
			want:  want{file: rel, lineOf: "in version:feature_groups", token: `groups"`, skip: 6, summary: `syntax error: missing ')'`},
		},
		{
			name:  "expression with an unknown model",
			edits: []edit{{rel, `"settings:storage.lvm.value == false"`, `"setings:storage.lvm.value == false"`}},
			want:  want{file: rel, lineOf: "setings:storage", token: "setings:storage.lvm.value", summary: `role cinder: restriction: unknown model "setings"`},
		},
		{
			name:  "expression with a missing key (strict)",
			edits: []edit{{rel, `"settings:storage.lvm.value == false"`, `"settings:storage.lvm2.value == false"`}},
			want:  want{file: rel, lineOf: "storage.lvm2.value", token: "settings:storage.lvm2.value", summary: `cluster prod: role cinder: restriction: value of settings:storage.lvm2.value is undefined`},
		},
		{
			name:  "expression error in a limits override",
			edits: []edit{{rel, `"settings:common.l3_ha.value == true"`, `"settings:common.l3_ha.value == true)"`}},
			want:  want{file: rel, lineOf: "l3_ha.value == true)", token: ")", summary: `role controller: limits override: syntax error: unexpected ')'`},
		},
		// --- overlaps between the release and plugins ---
		{
			name:  "plugin role overlap",
			edits: []edit{{"plugins/ext/node_roles.yaml", "ext-role:\n", "compute:\n  name: Compute\n  description: again\next-role:\n"}},
			want:  want{file: cl, lineOf: "plugins:", token: "ext", summary: "Plugin ext is unable to register the following node roles: compute"},
		},
		{
			name:  "plugin volume overlap with the release",
			edits: []edit{{"plugins/ext/volumes.yaml", "  - {id: ext-data, type: vg}\n", "  - {id: ext-data, type: vg}\n  - {id: os, type: vg}\n"}},
			want:  want{file: cl, lineOf: "plugins:", token: "ext", summary: `Plugin ext is overlapping with release by introducing the same volume with id "os"`},
		},
		{
			name: "plugin volume overlap with another plugin",
			edits: []edit{{"plugins/ext2/metadata.yaml", "", ext2Meta},
				{"plugins/ext2/volumes.yaml", "", "volumes: [{id: ext-data, type: vg}]\nvolumes_roles_mapping: {}\n"},
				{cl, "plugins: [ext]\n", "plugins: [ext, ext2]\n"}},
			want: want{file: cl, lineOf: "plugins:", token: "ext2", summary: `Plugin ext2 is overlapping with plugin ext by introducing the same volume with id "ext-data"`},
		},
		{
			name:  "plugin component overlap",
			edits: []edit{{"plugins/ext/components.yaml", "- name: network:neutron:ml2:ext\n", "- {name: hypervisor:qemu, label: QEMU again}\n- name: network:neutron:ml2:ext\n"}},
			want:  want{file: "plugins/ext/components.yaml", lineOf: "QEMU again", token: "hypervisor:qemu", summary: `Plugin ext is overlapping with release by introducing the same component with name "hypervisor:qemu"`},
		},
		{
			name:  "network role conflict",
			edits: []edit{{"plugins/ext/network_roles.yaml", "", "- id: mgmt/vip\n  default_mapping: management\n  properties: {subnet: false, gateway: false, vip: []}\n"}},
			want:  want{file: cl, lineOf: "plugins:", token: "ext", summary: `Cannot override existing network roles: 'mgmt/vip' in plugins: 'ext'`},
		},
		{
			name:  "plugin incompatible with the release",
			edits: []edit{{"plugins/ext/metadata.yaml", "    version: base-1.0\n", "    version: base-2.0\n"}},
			want:  want{file: cl, lineOf: "plugins:", token: "ext", summary: "Plugin ext is not compatible with release base (base-1.0 on Ubuntu)"},
		},
		{
			name:  "plugin incompatible with the cluster mode",
			edits: []edit{{cl, "release: base-1.0\n", "release: base-1.0\nmode: multinode\n"}},
			want:  want{file: cl, lineOf: "plugins:", token: "ext", summary: "Plugin ext is not compatible with release base (base-1.0 on Ubuntu)"},
		},
		// --- components ---
		{
			name:  "component not offered",
			edits: []edit{{cl, "  - storage:block:lvm\n", "  - storage:block:lvm\n  - storage:block:nfs\n"}},
			want:  want{file: cl, lineOf: "storage:block:nfs", token: "storage:block:nfs", summary: "['storage:block:nfs'] components are not related to used release."},
		},
		{
			name:  "incompatible components",
			edits: []edit{{cl, "  - storage:block:lvm\n", "  - storage:block:lvm\n  - network:neutron:ml2:tun\n"}},
			want:  want{file: cl, lineOf: "network:neutron:ml2:vlan", token: "network:neutron:ml2:vlan", summary: "Incompatible components were found: 'network:neutron:ml2:vlan' incompatible with ['network:neutron:ml2:tun']. Choose VLAN or tunnels."},
		},
		{
			name:  "component requirement missing",
			edits: []edit{{cl, "  - network:neutron:core:ml2\n", ""}},
			want:  want{file: cl, lineOf: "network:neutron:ml2:vlan", token: "network:neutron:ml2:vlan", summary: "Component 'network:neutron:ml2:vlan' requires any of components from ['network:neutron:core:ml2'] set."},
		},
		{
			name:  "plugin component requirement with its message",
			edits: []edit{{cl, "  - hypervisor:qemu\n", ""}, {cl, "  - storage:block:lvm\n", "  - storage:block:lvm\n  - network:neutron:ml2:ext\n"}},
			want:  want{file: cl, lineOf: "network:neutron:ml2:ext", token: "network:neutron:ml2:ext", summary: "Component 'network:neutron:ml2:ext' requires any of components from ['hypervisor:qemu'] set. Ext needs QEMU."},
		},
		{
			name:  "required component type missing",
			edits: []edit{{cl, "  - storage:block:lvm\n", ""}},
			want:  want{file: cl, lineOf: "hypervisor:qemu", token: "hypervisor:qemu", summary: "Components with ['storage'] types are required but wasn't found in data."},
		},
		// --- tags ---
		{
			name:  "role tag absent from tags metadata",
			edits: []edit{{rel, "tags: [controller, database]", "tags: [controller, database, keystone]"}},
			want:  want{file: rel, lineOf: "tags: [controller, database, keystone]", token: "[controller", summary: "Tags keystone are present for role controller, but absent in release tags metadata"},
		},
		{
			name:  "cluster role override with an undeclared tag",
			edits: []edit{{cl, "nodes:\n", "roles:\n  compute: {tags: [compute, gpu]}\nnodes:\n"}},
			want:  want{file: cl, lineOf: "compute: {tags", token: "compute", summary: "Tags gpu are present for role compute, but absent in release tags metadata"},
		},
		{
			name:  "cluster role override of an unknown role",
			edits: []edit{{cl, "nodes:\n", "roles:\n  comptue: {tags: [compute]}\nnodes:\n"}},
			want:  want{file: cl, lineOf: "comptue:", token: "comptue", summary: `cluster prod: roles: unknown role "comptue"; did you mean "compute"?`},
		},
		// --- settings ---
		{
			name:  "setting of an unknown group",
			edits: []edit{addSetting("comon.l3_ha.value: true")},
			want:  want{file: cl, lineOf: "comon.l3_ha", token: "comon.l3_ha.value", summary: `cluster prod: settings: unknown group "comon"; did you mean "common"?`},
		},
		{
			name:  "setting of an unknown attribute",
			edits: []edit{addSetting("common.l3ha.value: true")},
			want:  want{file: cl, lineOf: "common.l3ha", token: "common.l3ha.value", summary: `cluster prod: settings: group common has no attribute "l3ha"`},
		},
		{
			name:  "checkbox setting that is not a boolean",
			edits: []edit{addSetting("common.l3_ha.value: 'yes'")},
			want:  want{file: cl, lineOf: "common.l3_ha", token: "'yes'", summary: `cluster prod: settings: common.l3_ha.value is a checkbox: its value is true or false, not "yes"`},
		},
		{
			name:  "radio setting outside its values",
			edits: []edit{addSetting("common.libvirt_type.value: xen")},
			want:  want{file: cl, lineOf: "libvirt_type", token: "xen", summary: `cluster prod: settings: common.libvirt_type.value must be one of kvm, qemu, not "xen"`},
		},
		{
			name:  "setting of a plugin that is not enabled",
			edits: []edit{{cl, "plugins: [ext]\n", "plugins: []\n"}, {cl, "  node-5: {id: 5, roles: [ext-role]}\n", ""}, addSetting("ext.mode.value: 'off'")},
			want:  want{file: cl, lineOf: "ext.mode", token: "ext.mode.value", summary: "cluster prod: settings: ext.mode.value sets an attribute of plugin ext, which is not enabled", warning: true},
		},
		{
			name:  "setting of plugin metadata",
			edits: []edit{addSetting("ext.metadata.enabled: false")},
			want:  want{file: cl, lineOf: "ext.metadata", token: "ext.metadata.enabled", summary: `cluster prod: settings: "ext.metadata.enabled" is managed by fuelsync`},
		},
	}
}

func TestRenderCases(t *testing.T) {
	cases := renderCases()
	if len(cases) < 30 {
		t.Fatalf("%d cases, want at least 30", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			files := applyEdits(t, baseFiles(), tc.edits)
			_, _, diags := checkRepo(t, mapFS(files))
			line, col := locate(t, files[tc.want.file], tc.want.lineOf, tc.want.token)
			col += tc.want.skip
			sev := hcl.DiagError
			if tc.want.warning {
				sev = hcl.DiagWarning
			}
			for _, d := range diags {
				if d.Severity == sev && strings.Contains(d.Summary, tc.want.summary) && d.Subject != nil &&
					d.Subject.Filename == tc.want.file && d.Subject.Start.Line == line && d.Subject.Start.Column == col {
					return
				}
			}
			t.Errorf("want %s at %s:%d:%d containing %q; got:\n%s", sev2(tc.want.warning), tc.want.file, line, col, tc.want.summary, diagText(diags))
		})
	}
}

func sev2(warning bool) string {
	if warning {
		return "a warning"
	}
	return "an error"
}

// locate returns the line of src containing lineOf (which must be unique) and the
// column of token in it.
func locate(t *testing.T, src, lineOf, token string) (int, int) {
	t.Helper()
	found := 0
	var line, col int
	for i, l := range strings.Split(src, "\n") {
		if strings.Contains(l, lineOf) {
			found++
			line = i + 1
			c := strings.Index(l, token)
			if c < 0 {
				t.Fatalf("token %q is not on line %d %q", token, line, l)
			}
			col = c + 1
		}
	}
	if found != 1 {
		t.Fatalf("%q is on %d lines, want 1", lineOf, found)
	}
	return line, col
}
