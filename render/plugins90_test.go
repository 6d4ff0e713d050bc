package render

// Tests on more real Fuel 9.0 plugins (testdata/plugins-9.0, copied unmodified; see
// its SOURCES.md): fuel-plugin-manila, midonet and nsx-t, each added to a copy of
// examples/fuel-mitaka beside its four plugins.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

const plugins90 = "testdata/plugins-9.0"

// loadMitakaWith loads a copy of the example with the named plugins of
// testdata/plugins-9.0 added and cluster as clusters/mitaka.yaml.
func loadMitakaWith(t *testing.T, cluster string, plugins ...string) *loader.Repo {
	t.Helper()
	dir := copyDir(t, mitakaExample)
	for _, p := range plugins {
		src := copyDir(t, filepath.Join(plugins90, p))
		if err := os.Rename(src, filepath.Join(dir, "plugins", p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, mitakaCluster), []byte(cluster), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, diags := loader.Load(os.DirFS(dir), loader.Options{})
	if diags.HasErrors() {
		t.Fatalf("the repository does not load:\n%s", diagText(diags))
	}
	return repo
}

// renderMitakaWith renders clusters/mitaka.yaml of loadMitakaWith.
func renderMitakaWith(t *testing.T, cluster string, plugins ...string) hcl.Diagnostics {
	t.Helper()
	_, diags := Render(loadMitakaWith(t, cluster, plugins...), Options{Clusters: []string{"mitaka"}})
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
			_, diags := Check(loadMitakaWith(t, cluster, tc.plugin))
			expectDiags(t, map[string]string{mitakaCluster: cluster}, errorsOnly(diags), tc.want...)
		})
	}
}
