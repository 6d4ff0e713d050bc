package render

// Tests on more real Fuel 9.0 plugins (testdata/plugins-9.0, copied unmodified; see
// its SOURCES.md): fuel-plugin-manila, midonet and nsx-t, each added to a copy of
// examples/fuel-mitaka beside its four plugins.

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
)

const plugins90 = "testdata/plugins-9.0"

// renderMitakaWith renders clusters/mitaka.yaml of loadMitaka.
func renderMitakaWith(t *testing.T, cluster string, plugins ...string) hcl.Diagnostics {
	t.Helper()
	_, diags := Render(loadMitaka(t, cluster, plugins...), Options{Clusters: []string{"mitaka"}})
	return diags
}

// errorsOnly drops the warnings of diags.
func errorsOnly(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, d)
		}
	}
	return out
}

// TestMitakaDNSList: the release's own external_dns.dns_list (type text_list, min 0,
// max 3, an IPv4 regex) takes two servers and the empty list, as nailgun does since
// fuel-web's "text_list attributes could be empty" (backported to mitaka); four
// servers and a name fail with nailgun's messages.
func TestMitakaDNSList(t *testing.T) {
	for _, tc := range []struct {
		name, value string
		want        []diagAt
	}{
		{name: "two servers", value: "[8.8.8.8, 8.8.4.4]"},
		{name: "none", value: "[]"},
		{name: "three servers", value: "[8.8.8.8, 8.8.4.4, 1.1.1.1]"},
		{name: "four servers", value: "[8.8.8.8, 8.8.4.4, 1.1.1.1, 1.0.0.1]", want: []diagAt{{file: mitakaCluster, lineOf: "dns_list", token: "[8.8.8.8",
			summary: "cluster mitaka: settings: external_dns.dns_list: Value ['8.8.8.8', '8.8.4.4', '1.1.1.1', '1.0.0.1'] should not have more than 3 items"}}},
		{name: "a name", value: "[8.8.8.8, dns.google]", want: []diagAt{{file: mitakaCluster, lineOf: "dns_list", token: "dns.google",
			summary: "cluster mitaka: settings: external_dns.dns_list: Invalid IP address"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cluster := strings.Replace(mitakaClusterText(t), "settings:\n", "settings:\n  external_dns.dns_list.value: "+tc.value+"\n", 1)
			_, diags := checkMitaka(t, cluster)
			expectDiags(t, map[string]string{mitakaCluster: cluster}, errorsOnly(diags), tc.want...)
		})
	}
}

// midonetCluster enables midonet (its component chosen, its two roles with one
// node each).
const midonetCluster = `cluster: mitaka
release: mitaka-9.0
mode: ha
plugins: [midonet]
components: [hypervisor:qemu, network:neutron:midonet, storage:block:lvm]
settings:
nodes:
  node-1: {id: 1, roles: [controller]}
  node-2: {id: 2, roles: [compute]}
  node-3: {id: 3, roles: [nsdb]}
  node-4: {id: 4, roles: [midonet-gw]}
`

// TestPlugins90NullValues: a text value may be null (nailgun's schema allows it);
// check_data forbids it only on an attribute it checks (visible, not disabled) that
// is not nullable. fuel-plugin-manila's netapp-host is hidden while the NetApp
// driver is off, midonet's mem_repo_user disabled while MEM is off.
func TestPlugins90NullValues(t *testing.T) {
	manila := strings.Replace(mitakaClusterText(t), "  - lma_collector ", "  - fuel-plugin-manila\n  - lma_collector ", 1)
	for _, tc := range []struct {
		name, cluster, plugin, settings string
		want                            []diagAt
	}{
		{name: "manila, hidden", cluster: manila, plugin: "fuel-plugin-manila",
			settings: "fuel-plugin-manila.netapp-host.value: null"},
		{name: "manila, visible", cluster: manila, plugin: "fuel-plugin-manila",
			settings: "fuel-plugin-manila.netapp-host.value: null\n  fuel-plugin-manila.use-netapp-driver.value: true\n" +
				"  fuel-plugin-manila.netapp-user.value: admin\n  fuel-plugin-manila.netapp-pass.value: secret",
			want: []diagAt{{file: mitakaCluster, lineOf: "netapp-host", token: "null",
				summary: "cluster mitaka: settings: fuel-plugin-manila.netapp-host: Null value is forbidden for 'NetApp server hostname'"}}},
		{name: "midonet, disabled", cluster: midonetCluster, plugin: "midonet",
			settings: "midonet.mem_repo_user.value: null"},
		{name: "midonet, enabled", cluster: midonetCluster, plugin: "midonet",
			settings: "midonet.mem_repo_user.value: null\n  midonet.mem.value: true",
			want: []diagAt{{file: mitakaCluster, lineOf: "mem_repo_user", token: "null",
				summary: "cluster mitaka: settings: midonet.mem_repo_user: Null value is forbidden for 'MEM repository username'"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cluster := strings.Replace(tc.cluster, "settings:\n", "settings:\n  "+tc.settings+"\n", 1)
			_, diags := Check(loadMitaka(t, cluster, tc.plugin))
			expectDiags(t, map[string]string{mitakaCluster: cluster}, errorsOnly(diags), tc.want...)
		})
	}
}

// TestPlugins90TaskOverlap: midonet and nsx-t both define openstack-network-networks
// and five other tasks (all skipped, without a selector, so they meet on no node).
// nailgun refuses such a cluster whatever the nodes
// (PluginManager.get_plugins_deployment_graph); so does fuelsync, once per task id, at
// the later plugin's plugins: entry, with both definitions. Either plugin alone
// overrides the release's tasks of those ids, which is no overlap.
func TestPlugins90TaskOverlap(t *testing.T) {
	cluster := strings.Replace(midonetCluster, "plugins: [midonet]", "plugins: [midonet, nsx-t]", 1)
	diags := renderMitakaWith(t, cluster, "midonet", "nsx-t")
	var got []string
	for _, d := range diags {
		if strings.Contains(d.Summary, "overlapping") {
			got = append(got, fmt.Sprintf("%s: %s\n%s", at(*d.Subject), d.Summary, d.Detail))
		}
	}
	sort.Strings(got)
	line := func(plugin, id string) string {
		data, err := os.ReadFile(filepath.Join(plugins90, plugin, "deployment_tasks.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		l, _ := locate(t, string(data), "- id: "+id, id)
		return fmt.Sprintf("plugins/%s/deployment_tasks.yaml:%d", plugin, l)
	}
	var want []string
	for _, id := range []string{"enable_nova_compute_service", "openstack-network-agents-l3", "openstack-network-networks",
		"openstack-network-plugins-l2", "primary-openstack-network-agents-l3", "primary-openstack-network-plugins-l2"} {
		want = append(want, fmt.Sprintf("clusters/mitaka.yaml:4: Plugin nsx-t-1.0.0 is overlapping with plugin midonet-9.2.0 by introducing the same deployment task with id %s\n"+
			"Graph default: task %s is defined by plugin midonet at %s and by plugin nsx-t at %s. nailgun refuses to deploy a cluster whose enabled plugins define the same task; enable only one of them.",
			id, id, line("midonet", id), line("nsx-t", id)))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("overlaps (-want +got):\n%s", diff)
	}
	nsxt := strings.NewReplacer("plugins: [midonet]", "plugins: [nsx-t]", "network:neutron:midonet", "network:neutron:core:nsx").Replace(midonetCluster)
	for alone, cluster := range map[string]string{"midonet": midonetCluster, "nsx-t": nsxt} {
		for _, d := range renderMitakaWith(t, cluster, "midonet", "nsx-t") {
			if strings.Contains(d.Summary, "overlapping") {
				t.Errorf("%s alone: %s", alone, d.Summary)
			}
		}
	}
}
