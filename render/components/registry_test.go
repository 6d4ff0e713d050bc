package components

import (
	"encoding/json"
	"testing"

	"github.com/fuelsync/fuelsync/internal/golden"
	"github.com/google/go-cmp/cmp"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"hypervisor:*", "hypervisor:qemu", true},
		{"hypervisor:*", "hypervisor:vmware", true},
		{"hypervisor:*", "hypervisor", false},
		{"hypervisor:*", "network:neutron:core:ml2", false},
		{"network:neutron:ml2:*", "network:neutron:ml2:vlan", true},
		{"network:neutron:ml2:*", "network:neutron:core:ml2", false},
		// Everything after the first '*' is ignored: a:*:b is the prefix "a:".
		{"a:*:b", "a:x:b", true},
		{"a:*:b", "a:x:c", true},
		{"a:*:b", "a:", true},
		{"a:*:b", "b:x:b", false},
		{"hypervisor:q*", "hypervisor:qemu", true},
		{"hypervisor:q*", "hypervisor:vmware", false},
		{"*", "storage:block:lvm", true},
		{"storage:block:lvm", "storage:block:lvm", true},
		{"storage:block:lvm", "storage:block:lvm2", false},
		{"storage:block", "storage:block:lvm", false},
	}
	for _, tc := range cases {
		if got := Match(tc.pattern, tc.name); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.name, got, tc.want)
		}
	}
}

type rel struct {
	Name, Message, At string
	Added             bool
}

func rels(rs []Relation) []rel {
	var out []rel
	for _, r := range rs {
		out = append(out, rel{r.Name, r.Message, pos(r.Range), r.Added})
	}
	return out
}

func TestSymmetricRelations(t *testing.T) {
	release := decode(t, "release.yaml", `
- name: hypervisor:qemu
  label: QEMU
  compatible:
    - name: 'network:*'
- name: network:a
  incompatible:
    - name: 'hypervisor:*'
      message: a needs another hypervisor
- name: network:b
  label: Network B
  compatible:
    - name: hypervisor:qemu
  incompatible:
    - name: network:a
`)
	plugin := decode(t, "plugins/p/components.yaml", `
- name: storage:x
  incompatible:
    - name: network:b
  compatible:
    - name: 'hypervisor:*'
`)
	r, diags := New([]Source{{Components: release}, {Plugin: "p", Components: plugin}})
	if len(diags) > 0 {
		t.Fatalf("New: %v", diags)
	}
	type both struct{ Compatible, Incompatible []rel }
	got := map[string]both{}
	for _, c := range r.All() {
		got[c.Name] = both{rels(c.Compatible), rels(c.Incompatible)}
	}
	want := map[string]both{
		"hypervisor:qemu": {
			Compatible: []rel{
				{Name: "network:*", At: "release.yaml:5:13"},
				// storage:x lists hypervisor:*; network:b lists qemu but qemu's network:*
				// already matches network:b, so nothing is added for it.
				{Name: "storage:x", At: "plugins/p/components.yaml:6:13", Added: true},
			},
			Incompatible: []rel{
				{Name: "network:a", Message: "Not compatible with network:a", At: "release.yaml:8:13", Added: true},
			},
		},
		"network:a": {
			Compatible: []rel{{Name: "hypervisor:qemu", At: "release.yaml:5:13", Added: true}},
			Incompatible: []rel{
				{Name: "hypervisor:*", Message: "a needs another hypervisor", At: "release.yaml:8:13"},
				{Name: "network:b", Message: "Not compatible with Network B", At: "release.yaml:15:13", Added: true},
			},
		},
		"network:b": {
			Compatible: []rel{{Name: "hypervisor:qemu", At: "release.yaml:13:13"}},
			Incompatible: []rel{
				{Name: "network:a", At: "release.yaml:15:13"},
				{Name: "storage:x", Message: "Not compatible with storage:x", At: "plugins/p/components.yaml:4:13", Added: true},
			},
		},
		"storage:x": {
			Compatible:   []rel{{Name: "hypervisor:*", At: "plugins/p/components.yaml:6:13"}},
			Incompatible: []rel{{Name: "network:b", At: "plugins/p/components.yaml:4:13"}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("relations (-want +got):\n%s", diff)
	}
}

func TestOverlap(t *testing.T) {
	release := decode(t, "release.yaml", "- name: hypervisor:qemu\n- name: network:x\n")
	p1 := decode(t, "plugins/one/components.yaml", "- name: storage:one\n- name: hypervisor:qemu\n- name: storage:one\n")
	p2 := decode(t, "plugins/two/components.yaml", "- name: additional_service:two\n- name: storage:one\n")
	r, diags := New([]Source{{Plugin: "one", Components: p1}, {Components: release}, {Plugin: "two", Components: p2}})
	want := []string{
		`error plugins/one/components.yaml:2:9: Plugin one is overlapping with release by introducing the same component with name "hypervisor:qemu"`,
		`warning plugins/one/components.yaml:3:9: duplicate component name "storage:one": only the first, at plugins/one/components.yaml:1, is used`,
		`error plugins/two/components.yaml:2:9: Plugin two is overlapping with one by introducing the same component with name "storage:one"`,
	}
	if diff := cmp.Diff(want, diagLines(diags)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	var order []string
	for _, c := range r.All() {
		order = append(order, c.Plugin+"/"+c.Name)
	}
	// The release comes first whatever the order of the sources; the first definition wins.
	wantOrder := []string{"/hypervisor:qemu", "/network:x", "one/storage:one", "two/additional_service:two"}
	if diff := cmp.Diff(wantOrder, order); diff != "" {
		t.Errorf("registry order (-want +got):\n%s", diff)
	}
	if got := r.Get("storage:one"); got == nil || pos(got.Range) != "plugins/one/components.yaml:1:9" {
		t.Errorf("Get(storage:one) = %+v, want the first definition", got)
	}
	if r.Get("storage:none") != nil {
		t.Errorf("Get of an unknown name is not nil")
	}
}

func TestFieldErrors(t *testing.T) {
	comps := decode(t, "release.yaml", `
- name: hypervisor:a
  weight: heavy
  default: 'yes'
- name: hypervisor:b
  weight: 7
  default: false
  bind:
    - "settings:a.b.value"
    - "nowhere:x"
    - {"settings:c.d.value": 1, "cluster:e": 2}
    - [1, 2]
    - "settings:.x"
- name: hypervisor:c
  bind: 42
`)
	r, diags := New([]Source{{Components: comps}})
	want := []string{
		`error release.yaml:3:11: component hypervisor:a: weight must be an integer, not the string "heavy"`,
		`error release.yaml:4:12: component hypervisor:a: default must be true or false, not the string "yes"`,
		`error release.yaml:10:7: component hypervisor:b: bind path "nowhere:x" must be settings:<group>.<attribute>.<field> or cluster:<attribute>`,
		`error release.yaml:11:7: component hypervisor:b: bind entry must be a path, a [path, value] pair or a {path: value} mapping, not a mapping`,
		`error release.yaml:12:7: component hypervisor:b: bind entry must be a path, a [path, value] pair or a {path: value} mapping, not a list`,
		`error release.yaml:13:7: component hypervisor:b: bind path "settings:.x" must be settings:<group>.<attribute>.<field> or cluster:<attribute>`,
		`error release.yaml:15:9: component hypervisor:c: bind entry must be a path, a [path, value] pair or a {path: value} mapping, not the integer "42"`,
	}
	if diff := cmp.Diff(want, diagLines(diags)); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
	b := r.Get("hypervisor:b")
	if !b.HasWeight || b.Weight != 7 || b.Default || r.Get("hypervisor:a").HasWeight {
		t.Errorf("weight/default: got b=%d/%v/%v", b.Weight, b.HasWeight, b.Default)
	}
	if len(b.Bind) != 1 || b.Bind[0].Path != "settings:a.b.value" {
		t.Errorf("valid binds kept: got %+v", b.Bind)
	}
}

type bindRow struct {
	Path  string
	Value any
	At    string
}

func bindRows(bs []Bind) []bindRow {
	var out []bindRow
	for _, b := range bs {
		var v any = "<true>"
		if b.Value != nil {
			v = b.Value.Interface()
		}
		out = append(out, bindRow{b.Path, v, pos(b.Range)})
	}
	return out
}

func TestBinds(t *testing.T) {
	release := decode(t, "release.yaml", `
- name: network:neutron:ml2:vlan
  bind: !!pairs
    - "cluster:net_provider": "neutron"
    - "cluster:net_segment_type": "vlan"
- name: storage:block:lvm
  bind:
    - "settings:storage.volumes_lvm.value"
- name: storage:block:ceph
  bind:
    - "settings:storage.volumes_ceph.value": true
    - ["settings:storage.volumes_lvm.value", false]
- name: hypervisor:qemu
  bind: {"settings:common.libvirt_type.value": qemu, "cluster:mode": ha}
`)
	plugin := decode(t, "plugins/p/components.yaml", `
- name: additional_service:p
  bind: "settings:p.metadata.enabled"
`)
	r, diags := New([]Source{{Plugin: "p", Components: plugin}, {Components: release}})
	if len(diags) > 0 {
		t.Fatalf("New: %v", diags)
	}
	got := bindRows(r.Binds([]string{"additional_service:p", "hypervisor:qemu", "storage:block:ceph", "network:neutron:ml2:vlan", "unknown:x"}))
	want := []bindRow{
		{"cluster:net_provider", "neutron", "release.yaml:4:7"},
		{"cluster:net_segment_type", "vlan", "release.yaml:5:7"},
		{"settings:storage.volumes_ceph.value", true, "release.yaml:11:7"},
		{"settings:storage.volumes_lvm.value", false, "release.yaml:12:7"},
		{"settings:common.libvirt_type.value", "qemu", "release.yaml:14:10"},
		{"cluster:mode", "ha", "release.yaml:14:54"},
		{"settings:p.metadata.enabled", "<true>", "plugins/p/components.yaml:3:9"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Binds (-want +got):\n%s", diff)
	}
	if got := r.Binds(nil); got != nil {
		t.Errorf("Binds(nil) = %v, want nil", got)
	}
}

func TestPluginsFor(t *testing.T) {
	release := decode(t, "release.yaml", "- name: hypervisor:qemu\n- name: network:neutron:core:ml2\n")
	contrail := decode(t, "plugins/contrail/components.yaml", "- name: network:neutron:contrail\n")
	dvs := decode(t, "plugins/dvs/components.yaml", "- name: network:neutron:ml2:dvs\n- name: hypervisor:dvs-helper\n")
	r, diags := New([]Source{{Components: release}, {Plugin: "contrail", Components: contrail}, {Plugin: "dvs", Components: dvs}})
	if len(diags) > 0 {
		t.Fatalf("New: %v", diags)
	}
	cases := []struct {
		selected []string
		want     []string
	}{
		{nil, nil},
		{[]string{"hypervisor:qemu", "network:neutron:core:ml2"}, nil},
		{[]string{"hypervisor:qemu", "network:neutron:ml2:dvs"}, []string{"dvs"}},
		{[]string{"hypervisor:dvs-helper", "network:neutron:ml2:dvs", "network:neutron:contrail"}, []string{"contrail", "dvs"}},
		{[]string{"network:neutron:nope"}, nil},
	}
	for _, tc := range cases {
		if diff := cmp.Diff(tc.want, r.PluginsFor(tc.selected)); diff != "" {
			t.Errorf("PluginsFor(%q) (-want +got):\n%s", tc.selected, diff)
		}
	}
}

// statesRelease is a cut of the mitaka components_metadata with a plugin component.
const statesRelease = `
- name: hypervisor:qemu
  compatible:
    - name: hypervisor:vmware
- name: hypervisor:vmware
  compatible:
    - name: hypervisor:qemu
  requires:
    - name: hypervisor:qemu
      message: vcenter_warning
- name: network:neutron:core:ml2
  compatible:
    - name: 'hypervisor:*'
    - name: 'network:neutron:ml2:*'
- name: network:neutron:ml2:vlan
  label: VLAN
  incompatible:
    - name: network:neutron:ml2:tun
      message: vlan_tun_alert
  compatible:
    - name: network:neutron:core:ml2
    - name: hypervisor:qemu
  requires:
    - name: network:neutron:core:ml2
- name: network:neutron:ml2:tun
  label: TUN
  incompatible:
    - name: network:neutron:ml2:vlan
      message: vlan_tun_alert
    - name: hypervisor:vmware
      message: hypervisor_alert
  requires:
    - name: network:neutron:core:ml2
- name: storage:block:lvm
  compatible:
    - name: hypervisor:qemu
    - name: network:neutron:core:ml2
`

func TestStates(t *testing.T) {
	comps := decode(t, "release.yaml", statesRelease)
	plugin := decode(t, "plugins/p/components.yaml", `
- name: additional_service:p
  requires:
    - one_of:
        items: ['storage:*']
        message: p needs exactly one storage
`)
	r, diags := New([]Source{{Components: comps}, {Plugin: "p", Components: plugin}})
	if len(diags) > 0 {
		t.Fatalf("New: %v", diags)
	}
	cases := []struct {
		name     string
		selected []string
		want     []State
	}{
		{
			name:     "qemu, ml2, vlan, lvm",
			selected: []string{"hypervisor:qemu", "network:neutron:core:ml2", "network:neutron:ml2:vlan", "storage:block:lvm", "unknown:ignored"},
			want: []State{
				{Name: "hypervisor:qemu", State: "selected", Compatible: true},
				{Name: "hypervisor:vmware", State: "available", Compatible: true},
				{Name: "network:neutron:core:ml2", State: "selected", Compatible: true},
				{Name: "network:neutron:ml2:vlan", State: "selected", Compatible: true},
				{
					Name: "network:neutron:ml2:tun", State: "disabled",
					Reason: "Incompatible components were found: 'network:neutron:ml2:tun' incompatible with ['network:neutron:ml2:vlan']. vlan_tun_alert",
				},
				// lvm lists neither vlan nor tun: no green light (vlan's added compatible
				// entry does not count the other way).
				{Name: "storage:block:lvm", State: "selected"},
				{Name: "additional_service:p", State: "available"},
			},
		},
		{
			name:     "vmware alone, tun",
			selected: []string{"hypervisor:vmware", "network:neutron:ml2:tun"},
			want: []State{
				// qemu is compatible with vmware: green; vmware is selected but its own
				// requirement fails (Validate reports it); tun lists vmware as
				// incompatible, so vmware got the mirror entry.
				{Name: "hypervisor:qemu", State: "available", Compatible: true},
				{Name: "hypervisor:vmware", State: "selected", Compatible: true},
				{Name: "network:neutron:core:ml2", State: "available", Compatible: true},
				{
					Name: "network:neutron:ml2:vlan", State: "disabled",
					Reason: "Incompatible components were found: 'network:neutron:ml2:vlan' incompatible with ['network:neutron:ml2:tun']. vlan_tun_alert " +
						"Component 'network:neutron:ml2:vlan' requires any of components from ['network:neutron:core:ml2'] set.",
				},
				{Name: "network:neutron:ml2:tun", State: "selected"},
				{Name: "storage:block:lvm", State: "available"},
				{
					Name: "additional_service:p", State: "disabled",
					Reason: "Requirements was not satisfied for component 'additional_service:p': one_of(['storage:*']) p needs exactly one storage",
				},
			},
		},
		{
			name:     "nothing",
			selected: nil,
			want: []State{
				{Name: "hypervisor:qemu", State: "available", Compatible: true},
				{
					Name: "hypervisor:vmware", State: "disabled",
					Reason: "Component 'hypervisor:vmware' requires any of components from ['hypervisor:qemu'] set. vcenter_warning",
				},
				{Name: "network:neutron:core:ml2", State: "available", Compatible: true},
				{
					Name: "network:neutron:ml2:vlan", State: "disabled",
					Reason: "Component 'network:neutron:ml2:vlan' requires any of components from ['network:neutron:core:ml2'] set.",
				},
				{
					Name: "network:neutron:ml2:tun", State: "disabled",
					Reason: "Component 'network:neutron:ml2:tun' requires any of components from ['network:neutron:core:ml2'] set.",
				},
				{Name: "storage:block:lvm", State: "available", Compatible: true},
				{
					Name: "additional_service:p", State: "disabled",
					Reason: "Requirements was not satisfied for component 'additional_service:p': one_of(['storage:*']) p needs exactly one storage",
				},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, r.States(tc.selected)); diff != "" {
				t.Errorf("States (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAPI(t *testing.T) {
	release := decode(t, "release.yaml", statesRelease+`
- name: storage:block:ceph
  label: common.ceph
  description: Ceph RBD
  weight: 10
  default: false
  bind: !!pairs
    - "settings:storage.volumes_ceph.value": true
  incompatible:
    - name: storage:block:lvm
      message: Ceph not compatible with LVM
`)
	plugin := decode(t, "plugins/p/components.yaml", `
- name: additional_service:p
  label: P
  default: true
  weight: 0
  requires:
    - one_of:
        items: ['storage:*']
        message: inside the predicate
    - any_of:
        items: []
      message: on the entry
    - none_of:
        items: [network:neutron:ml2:tun]
`)
	r, diags := New([]Source{{Components: release}, {Plugin: "p", Components: plugin}})
	if len(diags) > 0 {
		t.Fatalf("New: %v", diags)
	}
	got, err := json.MarshalIndent(r.API(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "testdata/api.golden.json", append(got, '\n'))
}

func TestPyRepr(t *testing.T) {
	cases := map[string]string{
		"storage:x": `'storage:x'`,
		"it's":      `"it's"`,
		`a'b"c`:     `'a\'b"c'`,
		"tab\there": `'tab\there'`,
		`back\`:     `'back\\'`,
		"\x01é":     `'\x01é'`,
	}
	for in, want := range cases {
		if got := pyRepr(in); got != want {
			t.Errorf("pyRepr(%q) = %s, want %s", in, got, want)
		}
	}
	if got := pyList(nil); got != "[]" {
		t.Errorf("pyList(nil) = %s", got)
	}
}
