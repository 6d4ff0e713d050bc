package components

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// upstreamMetadata is setUp's components_metadata of nailgun's
// test/unit/test_restriction.py TestComponentsRestrictions.
const upstreamMetadata = `
- name: hypervisor:test_hypervisor
- name: network:core:test_network_1
  incompatible:
    - name: hypervisor:test_hypervisor
- name: network:core:test_network_2
- name: network:ml2:test_network_3
- name: storage:test_storage
  compatible:
    - name: hypervisor:test_hypervisor
  requires:
    - name: hypervisor:test_hypervisor
- name: storage:test_storage_2
`

// The components the upstream test methods append to the metadata.
const (
	wrongStorage = `
- name: storage:wrong_storage
  requires:
    - any_of:
        items: ['network:core:*']
    - name: hypervisor:test_hypervisor
`
	anyOfService = `
- name: additional_service:test_service
  requires:
    - any_of:
        items: ['network:core:*']
    - any_of:
        items: [storage:test_storage_2, hypervisor:test_hypervisor]
`
	oneOfService = `
- name: additional_service:test_service
  requires:
    - one_of:
        items: ['network:core:*']
    - one_of:
        items: [storage:test_storage_2, hypervisor:test_hypervisor]
`
	noneOfService = `
- name: additional_service:test_service
  requires:
    - none_of:
        items: ['network:core:*', storage:test_storage]
`
	allOfService = `
- name: additional_service:test_service
  requires:
    - all_of:
        items: [network:core:test_network_2, 'storage:*', hypervisor:test_hypervisor]
`
)

var upstreamRequiredTypes = []string{"hypervisor", "network", "storage"}

// TestComponentsRestrictions ports every case of nailgun's TestComponentsRestrictions
// (test/unit/test_restriction.py). Upstream calls validate_components on the raw
// metadata, so the registry is built without symmetric relations here. nailgun raises
// its first error; Validate reports every failed check in nailgun's order, so want[0]
// is the exact message upstream asserts and the rest are the checks nailgun never
// reaches (mostly the required types).
func TestComponentsRestrictions(t *testing.T) {
	const (
		svc   = "additional_service:test_service"
		hyp   = "hypervisor:test_hypervisor"
		net1  = "network:core:test_network_1"
		net2  = "network:core:test_network_2"
		net3  = "network:ml2:test_network_3"
		st    = "storage:test_storage"
		st2   = "storage:test_storage_2"
		types = " types are required but wasn't found in data."
	)
	cases := []struct {
		name     string // the upstream test method, and the step within it
		extra    string
		selected []string
		want     []string
	}{
		{
			name:     "test_components_not_in_available_components",
			selected: []string{"storage:not_existing_component"},
			want: []string{
				"['storage:not_existing_component'] components are not related to used release.",
				"Components with ['hypervisor', 'network', 'storage']" + types,
			},
		},
		{name: "test_not_all_required_types_components/valid", selected: []string{hyp, net2, st2}},
		{
			name:     "test_not_all_required_types_components/pop1",
			selected: []string{hyp, net2},
			want:     []string{"Components with ['storage']" + types},
		},
		{
			name:     "test_not_all_required_types_components/pop2",
			selected: []string{hyp},
			want:     []string{"Components with ['network', 'storage']" + types},
		},
		{
			name:     "test_not_all_required_types_components/pop3",
			selected: []string{},
			want:     []string{"Components with ['hypervisor', 'network', 'storage']" + types},
		},
		{
			name:     "test_incompatible_components_found",
			selected: []string{hyp, net1},
			want: []string{
				"Incompatible components were found: 'network:core:test_network_1' incompatible with ['hypervisor:test_hypervisor'].",
				"Components with ['storage']" + types,
			},
		},
		{
			name:     "test_requires_components_not_found",
			selected: []string{st},
			want: []string{
				"Component 'storage:test_storage' requires any of components from ['hypervisor:test_hypervisor'] set.",
				"Components with ['hypervisor', 'network']" + types,
			},
		},
		{
			name:     "test_requires_mixed_format",
			extra:    wrongStorage,
			selected: []string{"storage:wrong_storage"},
			want: []string{
				"Component 'storage:wrong_storage' has mixed format of requires.",
				"Components with ['hypervisor', 'network']" + types,
			},
		},
		{
			name:     "test_requires_any_of_predicate/1",
			extra:    anyOfService,
			selected: []string{svc, net3},
			want: []string{
				"Requirements was not satisfied for component 'additional_service:test_service': any_of(['network:core:*'])",
				"Requirements was not satisfied for component 'additional_service:test_service': any_of(['hypervisor:test_hypervisor', 'storage:test_storage_2'])",
				"Components with ['hypervisor', 'storage']" + types,
			},
		},
		{
			name:     "test_requires_any_of_predicate/2",
			extra:    anyOfService,
			selected: []string{svc, net2},
			want: []string{
				"Requirements was not satisfied for component 'additional_service:test_service': any_of(['hypervisor:test_hypervisor', 'storage:test_storage_2'])",
				"Components with ['hypervisor', 'storage']" + types,
			},
		},
		{name: "test_requires_any_of_predicate/valid", extra: anyOfService, selected: []string{svc, net2, hyp, st2}},
		{
			name:     "test_requires_one_of_predicate/1",
			extra:    oneOfService,
			selected: []string{svc, net1, net2, st2},
			want: []string{
				"Requirements was not satisfied for component 'additional_service:test_service': one_of(['network:core:*'])",
				"Components with ['hypervisor']" + types,
			},
		},
		{
			name:     "test_requires_one_of_predicate/2",
			extra:    oneOfService,
			selected: []string{svc, net1},
			want: []string{
				"Requirements was not satisfied for component 'additional_service:test_service': one_of(['hypervisor:test_hypervisor', 'storage:test_storage_2'])",
				"Components with ['hypervisor', 'storage']" + types,
			},
		},
		{name: "test_requires_one_of_predicate/valid", extra: oneOfService, selected: []string{svc, net2, hyp, st}},
		{
			name:     "test_requires_none_of_predicate",
			extra:    noneOfService,
			selected: []string{svc, net1},
			want: []string{
				"Requirements was not satisfied for component 'additional_service:test_service': none_of(['network:core:*', 'storage:test_storage'])",
				"Components with ['hypervisor', 'storage']" + types,
			},
		},
		{name: "test_requires_none_of_predicate/valid", extra: noneOfService, selected: []string{svc, net3, st2, hyp}},
		{
			name:     "test_requires_all_of_predicate",
			extra:    allOfService,
			selected: []string{svc, net2, st2, hyp},
			want: []string{
				"Requirements was not satisfied for component 'additional_service:test_service': all_of(['hypervisor:test_hypervisor', 'network:core:test_network_2', 'storage:*'])",
			},
		},
		{name: "test_requires_all_of_predicate/valid", extra: allOfService, selected: []string{svc, net2, st2, hyp, st}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			comps := decode(t, "openstack.yaml", upstreamMetadata+tc.extra)
			r, diags := build([]Source{{Components: comps}}, false)
			if len(diags) > 0 {
				t.Fatalf("build: %v", diags)
			}
			got := messages(r.Validate(names(tc.selected...), upstreamRequiredTypes))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Validate(%q) (-want +got):\n%s", tc.selected, diff)
			}
		})
	}
}

// With relations made symmetric (New, as Release.get_all_components feeds
// validate_components in the API), the hypervisor is the first to report the
// conflict, as nailgun's integration test of the cluster handler expects
// ("'hypervisor:test_hypervisor' incompatible with ['network:core:test_network_1']"),
// with the added relation's message.
func TestComponentsRestrictionsSymmetric(t *testing.T) {
	r, diags := New([]Source{{Components: decode(t, "openstack.yaml", upstreamMetadata)}})
	if len(diags) > 0 {
		t.Fatalf("New: %v", diags)
	}
	sel := refs(t, "clusters/c.yaml", "[hypervisor:test_hypervisor, network:core:test_network_1, storage:test_storage_2, storage:nope]")
	got := r.Validate(sel, upstreamRequiredTypes)
	type row struct{ Component, Message, At string }
	var rows []row
	for _, p := range got {
		rows = append(rows, row{p.Component, p.Message, pos(p.Range)})
	}
	want := []row{
		{"storage:nope", "['storage:nope'] components are not related to used release.", "clusters/c.yaml:1:83"},
		{"hypervisor:test_hypervisor", "Incompatible components were found: 'hypervisor:test_hypervisor' incompatible with ['network:core:test_network_1']. Not compatible with network:core:test_network_1", "clusters/c.yaml:1:2"},
		{"network:core:test_network_1", "Incompatible components were found: 'network:core:test_network_1' incompatible with ['hypervisor:test_hypervisor'].", "clusters/c.yaml:1:30"},
	}
	if diff := cmp.Diff(want, rows); diff != "" {
		t.Errorf("Validate (-want +got):\n%s", diff)
	}
}

// The missing-types problem points at the first selected entry, or nowhere for an
// empty selection; repeated names count once.
func TestValidateRanges(t *testing.T) {
	r, _ := New([]Source{{Components: decode(t, "openstack.yaml", upstreamMetadata)}})
	sel := refs(t, "clusters/c.yaml", "- storage:test_storage_2\n- storage:test_storage_2\n- hypervisor:test_hypervisor\n")
	got := r.Validate(sel, []string{"network", "hypervisor", "network"})
	want := []Problem{{Message: "Components with ['network'] types are required but wasn't found in data.", Range: sel[0].Range}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Validate (-want +got):\n%s", diff)
	}
	if pos(got[0].Range) != "clusters/c.yaml:1:3" {
		t.Errorf("range %s", pos(got[0].Range))
	}
	got = r.Validate(nil, []string{"storage"})
	want = []Problem{{Message: "Components with ['storage'] types are required but wasn't found in data."}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Validate(nil) (-want +got):\n%s", diff)
	}
	if got := r.Validate(sel, nil); got != nil {
		t.Errorf("Validate without required types: %v", got)
	}
}
