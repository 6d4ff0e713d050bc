package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/expr"
)

func TestBaseModel(t *testing.T) {
	_, models, diags := checkRepo(t, mapFS(baseFiles()))
	if len(diags) > 0 {
		t.Fatalf("the base repository has problems:\n%s", diagText(diags))
	}
	m := models["prod"]
	if m == nil {
		t.Fatal("no model for cluster prod")
	}

	var plugins []string
	for _, p := range m.Plugins {
		plugins = append(plugins, p.Plugin.Name)
	}
	if diff := cmp.Diff([]string{"ext"}, plugins); diff != "" {
		t.Errorf("enabled plugins (-want +got):\n%s", diff)
	}

	roles := map[string][]string{}
	var order []string
	for _, r := range m.Roles {
		roles[r.Name] = r.Tags
		order = append(order, r.Name)
	}
	if diff := cmp.Diff([]string{"controller", "compute", "cinder", "ceph-osd", "virt", "ext-role"}, order); diff != "" {
		t.Errorf("roles (-want +got):\n%s", diff)
	}
	wantTags := map[string][]string{
		"controller": {"controller", "database"},
		"compute":    {"compute"},
		"cinder":     {"cinder"},
		"ceph-osd":   {"ceph-osd"},
		"virt":       {"virt"},
		"ext-role":   {"ext-role"},
	}
	if diff := cmp.Diff(wantTags, roles); diff != "" {
		t.Errorf("role tags (-want +got):\n%s", diff)
	}
	// A tag-less plugin role's has_primary becomes its tag's (nailgun _process_tags).
	if tag := m.Tags["ext-role"]; tag == nil || !tag.HasPrimary || tag.Owner != "plugin ext" {
		t.Errorf("tag ext-role = %+v, want has_primary from the plugin role", tag)
	}
	// Plugin roles get the plugin-enabled restriction first.
	if r := m.Role("ext-role"); len(r.Restrictions) != 2 || !r.Restrictions[0].Implicit || r.Restrictions[0].Condition != "settings:ext.metadata.enabled == false" {
		t.Errorf("ext-role restrictions = %+v", r.Restrictions)
	}

	// Attributes: release defaults, the plugin's group, binds, then settings.
	settings := m.Models["settings"].(map[string]any)
	get := func(path string) any {
		v, err := expr.Eval("settings:"+path, m.Models, true)
		if err != nil {
			t.Fatalf("settings:%s: %v", path, err)
		}
		return v
	}
	for path, want := range map[string]any{
		"common.debug.value":      true,  // settings:
		"storage.lvm.value":       true,  // bind of storage:block:lvm
		"storage.ceph.value":      false, // release default
		"ext.mode.value":          "on",  // plugin group
		"ext.metadata.enabled":    true,
		"common.l3_ha.value":      false,
		"storage.pool_size.value": "3",
	} {
		if got := get(path); got != want {
			t.Errorf("settings:%s = %#v, want %#v", path, got, want)
		}
	}
	if _, ok := settings["access"]; !ok || !m.Sensitive["access.password"] || len(m.Sensitive) != 1 {
		t.Errorf("sensitive = %v, want access.password only", m.Sensitive)
	}
	if got, _ := expr.Eval("cluster:net_segment_type", m.Models, true); got != "vlan" {
		t.Errorf("cluster:net_segment_type = %v, want vlan (bind of network:neutron:ml2:vlan)", got)
	}
	if got, _ := expr.Eval("networking_parameters:segmentation_type", m.Models, true); got != "vlan" {
		t.Errorf("networking_parameters:segmentation_type = %v, want vlan", got)
	}
	if got, _ := expr.Eval("cluster:mode", m.Models, true); got != "ha_compact" {
		t.Errorf("cluster:mode = %v, want ha_compact", got)
	}
	if got, _ := expr.Eval("'advanced' in version:feature_groups", m.Models, true); got != true {
		t.Errorf("feature groups default lacks advanced")
	}

	// Volumes: the release's then the plugin's, mappings updated.
	var vols []string
	for _, v := range m.Volumes.Volumes {
		vols = append(vols, v.Get("id").String())
	}
	if diff := cmp.Diff([]string{"os", "cinder", "ext-data"}, vols); diff != "" {
		t.Errorf("volumes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"controller", "compute", "cinder", "ext-role"}, m.Volumes.RoleOrder); diff != "" {
		t.Errorf("volume role order (-want +got):\n%s", diff)
	}

	// Component states: the selection and what the wizard offers besides.
	states := map[string]string{}
	for _, s := range m.States {
		states[s.Name] = s.State
	}
	want := map[string]string{
		"hypervisor:qemu":          "selected",
		"network:neutron:core:ml2": "selected",
		"network:neutron:ml2:vlan": "selected",
		"storage:block:lvm":        "selected",
		"network:neutron:ml2:tun":  "disabled",
		"storage:block:ceph":       "disabled",
		"network:neutron:ml2:ext":  "available",
	}
	if diff := cmp.Diff(want, states); diff != "" {
		t.Errorf("component states (-want +got):\n%s", diff)
	}
}

func TestComponentEnablesPlugin(t *testing.T) {
	files := applyEdits(t, baseFiles(), []edit{
		{"clusters/prod.yaml", "plugins: [ext]\n", ""},
		{"clusters/prod.yaml", "  - storage:block:lvm\n", "  - storage:block:lvm\n  - network:neutron:ml2:ext\n"},
	})
	_, models, diags := checkRepo(t, mapFS(files))
	if len(diags) > 0 {
		t.Fatalf("problems:\n%s", diagText(diags))
	}
	m := models["prod"]
	if len(m.Plugins) != 1 || m.Plugins[0].Plugin.Name != "ext" || m.Plugins[0].Component != "network:neutron:ml2:ext" {
		t.Fatalf("plugins = %+v, want ext enabled by its component", m.Plugins)
	}
	if c := m.Plugins[0].Cause; c.Range.Start.Line != 8 || c.Range.Filename != "clusters/prod.yaml" {
		t.Errorf("cause at %s:%d, want clusters/prod.yaml:8", c.Range.Filename, c.Range.Start.Line)
	}
}

func TestVersionMatch(t *testing.T) {
	for _, tc := range []struct {
		plugin, release string
		want            bool
	}{
		{"mitaka-9.0", "mitaka-9.0", true},
		{"mitaka-9", "mitaka-9.0", true},
		{"mitaka-9.0", "mitaka-9.0.1", true},
		{"liberty-9.0", "mitaka-9.0", false},
		{"mitaka-8.0", "mitaka-9.0", false},
		{"9.0", "9.0", true},
		{"9", "9.0", true},
		{"newton-10.0", "mitaka-9.0", false},
	} {
		if got := versionMatch(tc.plugin, tc.release); got != tc.want {
			t.Errorf("versionMatch(%q, %q) = %v, want %v", tc.plugin, tc.release, got, tc.want)
		}
	}
}

// nailgun skips a limit whose value is falsy: `max: 0` sets no maximum.
func TestLimitZeroIsNoLimit(t *testing.T) {
	files := applyEdits(t, baseFiles(), []edit{{"plugins/ext/node_roles.yaml", "limits: {max: 1}", "limits: {max: 0, min: 0}"}})
	_, _, diags := checkRepo(t, mapFS(files))
	if len(diags) > 0 {
		t.Fatalf("problems:\n%s", diagText(diags))
	}
	files = applyEdits(t, baseFiles(), []edit{{"plugins/ext/node_roles.yaml", "limits: {max: 1}", "limits: {max: 0, min: 2}"}})
	_, _, diags = checkRepo(t, mapFS(files))
	if got := diagText(diags); got != "clusters/prod.yaml:16:27: error: Role 'ext-role' needs at least 2 nodes, 1 assigned.\n" {
		t.Errorf("got:\n%s", got)
	}
}
