package render

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// The synthetic base repository of the render tests: a release plugin with roles,
// tags, volumes, network roles, attributes and components, and a plugin extending it.
// Cases edit it; positions in the wants are counted in these texts.

const baseMeta = `name: base
title: Base release
version: 1.0.0
package_version: 5.0.0
description: The base release
licenses: [Apache-2.0]
authors: [fuelsync]
homepage: https://example.com/base
groups: []
releases:
  - is_release: true
    release_name: base
    description: Base release
    operating_system: Ubuntu
    version: base-1.0
    base_release_path: release.yaml
`

const baseRelease = `roles_metadata:
  controller:
    name: Controller
    description: Control plane
    conflicts: [compute]
    limits:
      min: 1
      recommended: 3
      overrides:
        - condition: "settings:common.l3_ha.value == true"
          min: 2
          message: "L3 HA requires at least 2 Controller nodes."
    tags: [controller, database]
  compute:
    name: Compute
    description: Instances
    limits: {recommended: 1}
  cinder:
    name: Cinder
    description: Block storage
    restrictions:
      - condition: "settings:storage.lvm.value == false"
        message: "Cinder LVM should be enabled in the environment settings."
  ceph-osd:
    name: Ceph OSD
    description: Ceph storage
    limits: {min: "settings:storage.pool_size.value"}
    restrictions:
      - "settings:storage.ceph.value == false": "Ceph should be enabled in the environment settings."
  virt:
    name: Virtual
    description: Runs VMs that become nodes
    conflicts: "*"
    restrictions:
      - condition: "not ('advanced' in version:feature_groups)"
        action: hide
        message: "Advanced feature should be enabled in feature groups"
tags_metadata:
  controller: {has_primary: true}
  database: {has_primary: true}
  compute: {has_primary: false}
  cinder: {has_primary: false}
  ceph-osd: {has_primary: false}
  virt: {has_primary: false}
volumes_metadata:
  volumes:
    - {id: os, type: vg}
    - {id: cinder, type: vg}
  volumes_roles_mapping:
    controller: [{id: os, allocate_size: min}]
    compute: [{id: os, allocate_size: min}]
    cinder: [{id: os, allocate_size: min}, {id: cinder, allocate_size: all}]
network_roles_metadata:
  - id: mgmt/vip
    default_mapping: management
    properties:
      subnet: true
      gateway: false
      vip: [{name: vip__management}]
components_metadata:
  - name: hypervisor:qemu
    label: QEMU
  - name: network:neutron:core:ml2
    label: ML2
  - name: network:neutron:ml2:vlan
    label: VLAN
    bind: !!pairs
      - "cluster:net_segment_type": "vlan"
    requires: [{name: network:neutron:core:ml2}]
    incompatible: [{name: network:neutron:ml2:tun, message: "Choose VLAN or tunnels."}]
  - name: network:neutron:ml2:tun
    label: Tunnels
    bind: !!pairs
      - "cluster:net_segment_type": "tun"
    requires: [{name: network:neutron:core:ml2}]
  - name: storage:block:lvm
    label: LVM
    bind: ["settings:storage.lvm.value"]
  - name: storage:block:ceph
    label: Ceph
    bind: ["settings:storage.ceph.value"]
    incompatible: [{name: storage:block:lvm}]
required_component_types: [hypervisor, network, storage]
attributes_metadata:
  editable:
    common:
      debug: {value: false, type: checkbox, label: Debug}
      l3_ha: {value: false, type: checkbox, label: L3 HA}
      libvirt_type:
        value: qemu
        type: radio
        values: [{data: kvm, label: KVM}, {data: qemu, label: QEMU}]
    storage:
      lvm: {value: false, type: checkbox}
      ceph: {value: false, type: checkbox}
      pool_size: {value: "3", type: text}
    access:
      password: {value: admin, type: password}
`

const extMeta = `name: ext
title: An extension
version: 1.0.0
package_version: 4.0.0
fuel_version: ['9.0']
description: Extends the base release
licenses: [Apache-2.0]
authors: [fuelsync]
homepage: https://example.com/ext
groups: [network]
is_hotpluggable: false
releases:
  - os: ubuntu
    version: base-1.0
    mode: [ha]
`

const extRoles = `ext-role:
  name: Ext role
  description: The extension's role
  has_primary: true
  limits: {max: 1}
  restrictions:
    - condition: "settings:ext.mode.value == 'off'"
      message: "Set ext.mode first."
`

const extEnv = `attributes:
  metadata: {label: Ext}
  mode: {value: 'on', type: text}
`

const extComponents = `- name: network:neutron:ml2:ext
  label: Ext network
  requires:
    - name: hypervisor:qemu
      message: "Ext needs QEMU."
`

const extVolumes = `volumes:
  - {id: ext-data, type: vg}
volumes_roles_mapping:
  ext-role: [{id: os, allocate_size: min}, {id: ext-data, allocate_size: all}]
`

const baseCluster = `cluster: prod
release: base-1.0
plugins: [ext]
components:
  - hypervisor:qemu
  - network:neutron:core:ml2
  - network:neutron:ml2:vlan
  - storage:block:lvm
settings:
  common.debug.value: true
nodes:
  node-1: {id: 1, roles: [controller]}
  node-2: {id: 2, roles: [controller]}
  node-3: {id: 3, roles: [controller]}
  node-4: {id: 4, roles: [compute, cinder]}
  node-5: {id: 5, roles: [ext-role]}
`

func baseFiles() map[string]string {
	return map[string]string{
		"plugins/base/metadata.yaml":             baseMeta,
		"plugins/base/release.yaml":              baseRelease,
		"plugins/ext/metadata.yaml":              extMeta,
		"plugins/ext/node_roles.yaml":            extRoles,
		"plugins/ext/environment_config.yaml":    extEnv,
		"plugins/ext/components.yaml":            extComponents,
		"plugins/ext/volumes.yaml":               extVolumes,
		"plugins/ext/deployment_tasks.yaml":      "[]\n",
		"clusters/prod.yaml":                     baseCluster,
		"plugins/ext/deployment_scripts/.keep":   "",
		"plugins/base/deployment_scripts/.keep":  "",
		"plugins/ext/repositories/ubuntu/.keep":  "",
		"plugins/base/repositories/ubuntu/.keep": "",
	}
}

// edit is a replacement of the one occurrence of old in a file ("" old: replace the
// whole file; "" new and old: delete it).
type edit struct{ file, old, new string }

func applyEdits(t *testing.T, files map[string]string, edits []edit) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range files {
		out[k] = v
	}
	for _, e := range edits {
		switch {
		case e.old == "" && e.new == "":
			delete(out, e.file)
		case e.old == "":
			out[e.file] = e.new
		default:
			if n := strings.Count(out[e.file], e.old); n != 1 {
				t.Fatalf("edit of %s: %q occurs %d times, want once", e.file, e.old, n)
			}
			out[e.file] = strings.Replace(out[e.file], e.old, e.new, 1)
		}
	}
	return out
}

func mapFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, src := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(src), Mode: 0o644}
	}
	return fsys
}

// checkRepo loads fsys and checks it, failing the test on load errors (the cases
// are about the merged model, not about loading).
func checkRepo(t *testing.T, fsys fs.FS) (*loader.Repo, map[string]*Model, hcl.Diagnostics) {
	t.Helper()
	repo, diags := loader.Load(fsys, loader.Options{})
	if diags.HasErrors() {
		t.Fatalf("the repository does not load:\n%s", diagText(diags))
	}
	models, more := Check(repo)
	return repo, models, more
}

// diagText renders diagnostics one per line as "file:line:col: severity: summary".
func diagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		if d.Subject != nil {
			fmt.Fprintf(&b, "%s:%d:%d: ", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		fmt.Fprintf(&b, "%s: %s\n", sev, d.Summary)
	}
	return b.String()
}

// copyDir copies the directory tree src into a new temporary directory and returns
// it, so a test can edit a real example without touching it.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// defWithID is a definition of a task id alone, for placed tasks built by hand.
func defWithID(id string) *TaskDef { return &TaskDef{Task: &loader.Task{ID: id}} }
