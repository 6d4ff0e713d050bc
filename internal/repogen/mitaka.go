package repogen

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"

	"github.com/fuelsync/fuelsync/examples"
)

// The real-data shape: the Fuel 9.x release (nailgun's mitaka-9.0 fixture and
// fuel-library's tasks) and the four upstream plugins of examples/fuel-mitaka,
// copied unmodified, with generated clusters of several roles per node. Its
// clusters take four kinds in turn, each a selection the Fuel 9 wizard accepts
// with every example plugin enabled in one of them:
//
//	ceph      Ceph for everything, VXLAN, Sahara, lma_collector; three
//	          controller+ceph-osd nodes, then compute+ceph-osd, compute, ceph-osd
//	lvm       LVM, VLAN, Ceilometer and Murano, detach-database and
//	          lma_collector; three controller+cinder, three mongo, three
//	          standalone-database, then compute+cinder, compute, cinder
//	contrail  contrail (its component network:neutron:contrail), LVM; three
//	          controller+cinder, three contrail-controller+contrail-analytics,
//	          three contrail-analytics-db, then compute+cinder, compute
//	dvs       vCenter beside QEMU, VLAN, fuel-plugin-vmware-dvs (its component)
//	          and lma_collector, LVM; three controller+cinder, a compute-vmware
//	          and a cinder-vmware node, then compute+cinder, compute
//
// Every cluster is valid: rendering it gives no diagnostic but the upstream
// data's own warnings.

// MitakaRelease is Spec.Release for the real-data shape.
const MitakaRelease = "mitaka-9.0"

// Mitaka is the real-data shape with nodes nodes in 4 clusters (one of each
// kind; 500 nodes a cluster at 2,000, 2,000 at 8,000).
func Mitaka(nodes int) Spec {
	return Spec{Release: MitakaRelease, Nodes: nodes, Clusters: 4}
}

// mitakaKind is one kind of cluster of the real-data shape.
type mitakaKind struct {
	name       string
	plugins    []string
	components []string
	settings   [][2]string // dotted path, YAML value
	first      [][]string  // the roles of the first nodes, in order
	rest       [][]string  // then these in turn
}

var mitakaKinds = []mitakaKind{
	{
		name:    "ceph",
		plugins: []string{"lma_collector"},
		components: []string{"hypervisor:qemu", "network:neutron:core:ml2", "network:neutron:ml2:tun",
			"storage:block:ceph", "storage:image:ceph", "storage:object:ceph", "storage:ephemeral:ceph", "additional_service:sahara"},
		settings: [][2]string{{"lma_collector.environment_label.value", "generated-ceph"}},
		first:    rolesTimes(3, "controller", "ceph-osd"),
		rest:     [][]string{{"compute", "ceph-osd"}, {"compute", "ceph-osd"}, {"compute"}, {"ceph-osd"}},
	},
	{
		name:    "lvm",
		plugins: []string{"detach-database", "lma_collector"},
		components: []string{"hypervisor:qemu", "network:neutron:core:ml2", "network:neutron:ml2:vlan", "storage:block:lvm",
			"additional_service:ceilometer", "additional_service:murano"},
		first: append(append(rolesTimes(3, "controller", "cinder"), rolesTimes(3, "mongo")...), rolesTimes(3, "standalone-database")...),
		rest:  [][]string{{"compute", "cinder"}, {"compute"}, {"compute", "cinder"}, {"cinder"}},
	},
	{
		name:       "contrail",
		plugins:    []string{"contrail"},
		components: []string{"hypervisor:qemu", "network:neutron:contrail", "storage:block:lvm"},
		settings:   [][2]string{{"contrail.enable_tor_agents.value", "false"}},
		first: append(append(rolesTimes(3, "controller", "cinder"), rolesTimes(3, "contrail-controller", "contrail-analytics")...),
			rolesTimes(3, "contrail-analytics-db")...),
		rest: [][]string{{"compute", "cinder"}, {"compute"}},
	},
	{
		name:    "dvs",
		plugins: []string{"lma_collector"},
		components: []string{"hypervisor:qemu", "hypervisor:vmware", "network:neutron:core:ml2", "network:neutron:ml2:vlan",
			"network:neutron:ml2:dvs", "storage:block:lvm"},
		settings: [][2]string{{"fuel-plugin-vmware-dvs.vmware_dvs_net_maps.value", "'Cluster1:dvSwitch1'"}},
		first:    append(rolesTimes(3, "controller", "cinder"), []string{"compute-vmware"}, []string{"cinder-vmware"}),
		rest:     [][]string{{"compute", "cinder"}, {"compute"}},
	},
}

// rolesTimes is n nodes' roles, each roles.
func rolesTimes(n int, roles ...string) [][]string {
	out := make([][]string, n)
	for i := range out {
		out[i] = roles
	}
	return out
}

// mitaka fills g.fs with the example's plugins and the clusters of the
// real-data shape.
func (g *gen) mitaka() {
	err := fs.WalkDir(examples.FuelMitaka, "fuel-mitaka/plugins", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(name, "fuel-mitaka/")
		if d.IsDir() {
			g.dir(rel)
			return nil
		}
		data, err := fs.ReadFile(examples.FuelMitaka, name)
		if err != nil {
			return err
		}
		g.file(rel, bytes.NewBuffer(data))
		return nil
	})
	if err != nil { // the files are embedded: only a broken build fails here, and then loading fails
		g.file("clusters/repogen-error.yaml", bytes.NewBufferString(fmt.Sprintf("repogen: %q\n", err.Error())))
	}
	for i := 1; i <= g.s.Clusters; i++ {
		n := g.s.Nodes / g.s.Clusters
		if i <= g.s.Nodes%g.s.Clusters {
			n++
		}
		g.mitakaCluster(i, n)
	}
}

// mitakaCluster writes cluster i (1-based) of the real-data shape with nnodes
// nodes (at least the kind's first nodes).
func (g *gen) mitakaCluster(i, nnodes int) {
	k := mitakaKinds[(i-1)%len(mitakaKinds)]
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Generated cluster %d of the real-data shape (%s).\ncluster: m-%02d\nrelease: %s\nmode: ha\nplugins: %s\n\ncomponents:\n",
		i, k.name, i, MitakaRelease, flow(k.plugins))
	for _, c := range k.components {
		fmt.Fprintf(&b, "  - %s\n", c)
	}
	if len(k.settings) > 0 {
		b.WriteString("\nsettings:\n")
		for _, s := range k.settings {
			fmt.Fprintf(&b, "  %s: %s\n", s[0], s[1])
		}
	}
	b.WriteString("\nnodes:\n")
	for j := range max(nnodes, len(k.first)) {
		var roles []string
		if j < len(k.first) {
			roles = k.first[j]
		} else {
			roles = k.rest[(j-len(k.first))%len(k.rest)]
		}
		fmt.Fprintf(&b, "  node-%d: {id: %d, roles: %s}\n", j+1, j+1, flow(roles))
	}
	g.file(fmt.Sprintf("clusters/m-%02d.yaml", i), &b)
}
