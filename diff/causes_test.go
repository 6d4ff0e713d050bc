package diff

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/internal/mapfs"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// mitakaSide renders cluster mitaka of a copy of examples/fuel-mitaka.
func mitakaSide(t *testing.T, fsys fstest.MapFS, base map[string]string) *Side {
	t.Helper()
	repo, diags := loader.Load(fsys, loader.Options{})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags.Errs())
	}
	rs, diags := render.Render(repo, render.Options{Clusters: []string{"mitaka"}})
	if diags.HasErrors() {
		t.Fatalf("render: %v", diags.Errs())
	}
	s, err := RenderedSide(rs, "rev", "test", base)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCausesGroupTasks: on the real Fuel 9 data, a task a group lists (its
// tasks:) comes to a node with the tag that selects the group, and goes with it.
// The compute-vmware group lists top-role-compute (and connectivity_tests):
// assigning the tag put them down as "edited" in the release's task files,
// where nothing was edited.
func TestCausesGroupTasks(t *testing.T) {
	mitaka, err := mapfs.Read("../examples/fuel-mitaka")
	if err != nil {
		t.Fatal(err)
	}
	const spec = "clusters/mitaka.yaml"
	for _, tc := range []struct {
		name     string
		old, new string // node lines of clusters/mitaka.yaml, before and after
		want     []string
	}{
		{
			name: "group tag assigned to a controller",
			old:  "node-2: {id: 2, roles: [controller]}", new: "node-2: {id: 2, roles: [controller], tags: {assign: [compute-vmware]}}",
			want: []string{
				"~ node-1,node-3,node-5,node-6 [cinder compute controller] run=[default] | dependencies  ~openstack-network-start || default: +0 -0 ~1",
				"~ node-2 [controller] run=[default] | tag_assigned compute-vmware +ceilometer-compute +enable_nova_compute_service +top-role-compute +top-role-compute-vmware +vcenter_compute_zones_create | dependencies  ~openstack-network-start || default: +5 -0 ~1",
				"summary deploy=5 provision=0 delete=0 tasks +5 -0 ~5",
			},
		},
		{
			name: "group tag unassigned from a controller",
			old:  "node-2: {id: 2, roles: [controller], tags: {assign: [compute-vmware]}}", new: "node-2: {id: 2, roles: [controller]}",
			want: []string{
				"~ node-1,node-3,node-5,node-6 [cinder compute controller] run=[default] | dependencies  ~openstack-network-start || default: +0 -0 ~1",
				"~ node-2 [controller] run=[default] | tag_unassigned compute-vmware -ceilometer-compute -enable_nova_compute_service -top-role-compute -top-role-compute-vmware -vcenter_compute_zones_create | dependencies  ~openstack-network-start || default: +0 -5 ~1",
				"summary deploy=5 provision=0 delete=0 tasks +0 -5 ~5",
			},
		},
		{
			name: "group tag assigned to the database node",
			old:  "node-4: {id: 4, roles: [standalone-database]}", new: "node-4: {id: 4, roles: [standalone-database], tags: {assign: [compute-vmware]}}",
			want: []string{
				"~ node-1,node-2,node-3,node-5,node-6 [cinder compute controller] run=[default] | dependencies  ~openstack-network-start || default: +0 -0 ~1",
				"~ node-4 [standalone-database] run=[default] | tag_assigned compute-vmware +ceilometer-compute +connectivity_tests +enable_nova_compute_service +hiera_default_route +ssl-add-trust-chain +ssl-keys-saving +top-role-compute +top-role-compute-vmware +vcenter_compute_zones_create +net-verification/v_hiera | dependencies  ~firewall ~hosts ~net-verification/v_setup_repositories || default: +9 -0 ~2 || net-verification: +1 -0 ~1",
				"summary deploy=6 provision=0 delete=0 tasks +9 -0 ~7",
			},
		},
		{
			name: "cinder role added to a compute",
			old:  "node-5: {id: 5, roles: [compute]}", new: "node-5: {id: 5, roles: [compute, cinder]}",
			want: []string{
				"~ node-5 [cinder compute] run=[default] | role_added cinder +enable_cinder_volume_service +lma-main-cinder +top-role-cinder | dependencies  ~lma-aggregator || default: +3 -0 ~1",
				"summary deploy=1 provision=0 delete=0 tasks +3 -0 ~1",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The node's line as the example has it, before and after.
			line := tc.old[:strings.Index(tc.old, "]}")+2]
			if i := strings.Index(tc.old, "], tags"); i >= 0 {
				line = tc.old[:i+1] + "}"
			}
			oldSide := mitakaSide(t, edit(t, mitaka, spec, line, tc.old), nil)
			newSide := mitakaSide(t, edit(t, mitaka, spec, line, tc.new), oldSide.Digests)
			cs, err := Compute(oldSide, newSide)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, lines(cs)); diff != "" {
				t.Errorf("change set (-want +got):\n%s", diff)
			}
		})
	}
}
