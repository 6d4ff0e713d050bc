package components_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/golden"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render/components"
	"github.com/google/go-cmp/cmp"
)

// mitaka builds the registry of the real mitaka-9.0 release of examples/fuel-mitaka
// and the plugins compatible with it, in plugin directory order.
func mitaka(t *testing.T) (*components.Registry, *loader.Repo) {
	t.Helper()
	repo, diags := loader.Load(os.DirFS("../../examples/fuel-mitaka"), loader.Options{})
	if diags.HasErrors() {
		t.Fatalf("loading examples/fuel-mitaka: %v", diags.Errs())
	}
	rels := repo.FindRelease("mitaka-9.0")
	if len(rels) != 1 {
		t.Fatalf("FindRelease(mitaka-9.0): %d releases", len(rels))
	}
	rel := rels[0]
	sources := []components.Source{{Components: rel.Components}}
	for _, p := range repo.Plugins {
		for _, c := range p.Compatible {
			if strings.EqualFold(c.OS, rel.OperatingSystem) && strings.HasPrefix(rel.Version, c.Version) {
				sources = append(sources, components.Source{Plugin: p.Name, Components: p.Components})
				break
			}
		}
	}
	r, diags := components.New(sources)
	if len(diags) > 0 {
		t.Fatalf("New: %v", diags)
	}
	return r, repo
}

func TestMitakaRegistry(t *testing.T) {
	r, _ := mitaka(t)
	var got []string
	for _, c := range r.All() {
		got = append(got, c.Plugin+"/"+c.Name)
	}
	want := []string{
		// The release's 14 components (nailgun's mitaka fixture).
		"/hypervisor:qemu", "/hypervisor:vmware",
		"/network:neutron:core:ml2", "/network:neutron:ml2:vlan", "/network:neutron:ml2:tun",
		"/storage:block:lvm", "/storage:block:ceph", "/storage:object:ceph", "/storage:ephemeral:ceph", "/storage:image:ceph",
		"/additional_service:sahara", "/additional_service:murano", "/additional_service:ceilometer", "/additional_service:ironic",
		// The plugins' components.yaml.
		"contrail/network:neutron:contrail",
		"fuel-plugin-vmware-dvs/network:neutron:ml2:dvs",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("registry (-want +got):\n%s", diff)
	}

	b, err := json.MarshalIndent(r.API(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/mitaka-api.golden.json", append(b, '\n'))
}

var requiredTypes = []string{"hypervisor", "network", "storage"}

func TestMitakaDVSNeedsVCenter(t *testing.T) {
	r, _ := mitaka(t)
	src := "components:\n  - hypervisor:qemu\n  - network:neutron:core:ml2\n  - network:neutron:ml2:dvs\n  - storage:block:lvm\n"
	v, diags := loader.DecodeYAML("clusters/dvs.yaml", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var sel []loader.Ref
	var selNames []string
	for _, it := range v.Get("components").Items {
		sel = append(sel, loader.Ref{Name: it.String(), Range: it.Range})
		selNames = append(selNames, it.String())
	}
	var got []string
	for _, p := range r.Validate(sel, requiredTypes) {
		got = append(got, fmt.Sprintf("%s:%d: %s: %s", p.Range.Filename, p.Range.Start.Line, p.Component, p.Message))
	}
	want := []string{
		"clusters/dvs.yaml:4: network:neutron:ml2:dvs: Component 'network:neutron:ml2:dvs' requires any of components from ['hypervisor:vmware'] set. " +
			"The VMware DVS plugin requires vCenter as the hypervisor option.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Validate (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"fuel-plugin-vmware-dvs"}, r.PluginsFor(selNames)); diff != "" {
		t.Errorf("PluginsFor (-want +got):\n%s", diff)
	}

	// With vCenter (which requires qemu) the selection is valid.
	sel = append(sel, loader.Ref{Name: "hypervisor:vmware"})
	if probs := r.Validate(sel, requiredTypes); len(probs) != 0 {
		t.Errorf("Validate with hypervisor:vmware: %v", probs)
	}
}

func TestMitakaCluster(t *testing.T) {
	r, repo := mitaka(t)
	cl := repo.Cluster("mitaka")
	if cl == nil {
		t.Fatal("no cluster mitaka")
	}
	if probs := r.Validate(cl.Components, requiredTypes); len(probs) != 0 {
		t.Errorf("Validate(%v): %v", cl.Components, probs)
	}
	var selected []string
	for _, ref := range cl.Components {
		selected = append(selected, ref.Name)
	}
	if diff := cmp.Diff([]string{"hypervisor:qemu", "network:neutron:core:ml2", "network:neutron:ml2:vlan", "storage:block:lvm"}, selected); diff != "" {
		t.Fatalf("the example's selection changed (-want +got):\n%s", diff)
	}
	if got := r.PluginsFor(selected); got != nil {
		t.Errorf("PluginsFor = %v, want none", got)
	}

	type bind struct {
		Path  string
		Value any
	}
	var binds []bind
	for _, b := range r.Binds(selected) {
		var v any = true
		if b.Value != nil {
			v = b.Value.Interface()
		}
		binds = append(binds, bind{b.Path, v})
	}
	wantBinds := []bind{
		{"settings:common.libvirt_type.value", "qemu"},
		{"cluster:net_provider", "neutron"},
		{"cluster:net_segment_type", "vlan"},
		{"settings:storage.volumes_lvm.value", true},
	}
	if diff := cmp.Diff(wantBinds, binds); diff != "" {
		t.Errorf("Binds (-want +got):\n%s", diff)
	}

	const (
		incompat = "Incompatible components were found: '%s' incompatible with ['%s']. %s"
		requires = "Component '%s' requires any of components from ['%s'] set. %s"
	)
	want := []components.State{
		{Name: "hypervisor:qemu", State: "selected", Compatible: true},
		{Name: "hypervisor:vmware", State: "available", Compatible: true},
		{Name: "network:neutron:core:ml2", State: "selected", Compatible: true},
		{Name: "network:neutron:ml2:vlan", State: "selected", Compatible: true},
		{
			Name: "network:neutron:ml2:tun", State: "disabled",
			Reason: fmt.Sprintf(incompat, "network:neutron:ml2:tun", "network:neutron:ml2:vlan", "dialog.create_cluster_wizard.network.vlan_tun_alert"),
		},
		{Name: "storage:block:lvm", State: "selected", Compatible: true},
		{
			Name: "storage:block:ceph", State: "disabled",
			Reason: fmt.Sprintf(incompat, "storage:block:ceph", "storage:block:lvm", "Ceph not compatible with LVM"),
		},
		{Name: "storage:object:ceph", State: "available", Compatible: true},
		{Name: "storage:ephemeral:ceph", State: "available", Compatible: true},
		{Name: "storage:image:ceph", State: "available", Compatible: true},
		{Name: "additional_service:sahara", State: "available", Compatible: true},
		{Name: "additional_service:murano", State: "available", Compatible: true},
		{Name: "additional_service:ceilometer", State: "available", Compatible: true},
		{Name: "additional_service:ironic", State: "available", Compatible: true},
		// contrail lists only kvm and qemu as compatible: no green light next to ml2.
		{Name: "network:neutron:contrail", State: "available"},
		{
			Name: "network:neutron:ml2:dvs", State: "disabled",
			Reason: fmt.Sprintf(requires, "network:neutron:ml2:dvs", "hypervisor:vmware", "The VMware DVS plugin requires vCenter as the hypervisor option."),
		},
	}
	if diff := cmp.Diff(want, r.States(selected)); diff != "" {
		t.Errorf("States (-want +got):\n%s", diff)
	}
}
