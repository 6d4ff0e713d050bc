package loader

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// The real upstream data the tests load, kept in the project: the newton-10.0
// release wrapped as a plugin (testdata/newton, provenance in its SOURCES.md) and the
// four upstream plugins of the fuel-mitaka example (examples/fuel-mitaka/SOURCES.md).
const (
	newtonDir  = "testdata/newton"
	pluginsDir = "../examples/fuel-mitaka/plugins"
)

// mountFS serves the files under prefix from sub and everything else from base.
type mountFS struct {
	base   fs.FS
	prefix string
	sub    fs.FS
}

func (m mountFS) Open(name string) (fs.File, error) {
	if name == m.prefix {
		return m.sub.Open(".")
	}
	if rest, ok := strings.CutPrefix(name, m.prefix+"/"); ok {
		return m.sub.Open(rest)
	}
	return m.base.Open(name)
}

// newtonFS is a repository whose only plugin wraps the real newton release.
func newtonFS(t testing.TB) fs.FS {
	t.Helper()
	if _, err := os.Stat(newtonDir + "/release/openstack.yaml"); err != nil {
		t.Fatalf("the newton release data is missing: %v", err)
	}
	base := fstest.MapFS{"plugins/newton": {Mode: fs.ModeDir | 0o755}}
	return mountFS{base: base, prefix: "plugins/newton", sub: os.DirFS(newtonDir)}
}

func TestNewtonRelease(t *testing.T) {
	repo, diags := Load(newtonFS(t), Options{})
	if diags.HasErrors() {
		t.Fatalf("loading newton: %v", diags)
	}
	if len(repo.Releases) != 1 {
		t.Fatalf("got %d releases, want 1", len(repo.Releases))
	}
	r := repo.Releases[0]
	var roles, components []string
	for _, x := range r.Roles {
		roles = append(roles, x.Name)
	}
	for _, x := range r.Components {
		components = append(components, x.Name)
	}
	graphs := map[string]int{}
	for _, g := range r.Graphs {
		graphs[g.Type] = len(g.Tasks)
	}
	got := map[string]any{
		"name": r.Name, "version": r.Version, "os": r.OperatingSystem,
		"roles": roles, "components": components, "graphs": graphs,
		"required_component_types": r.RequiredComponentTypes,
		"tags":                     len(r.Tags),
	}
	want := map[string]any{
		"name": "Newton on Ubuntu 16.04", "version": "newton-10.0", "os": "Ubuntu",
		"roles":                    []string{"controller", "compute", "cinder", "cinder-block-device", "ceph-osd", "mongo", "base-os", "virt", "ironic"},
		"components":               []string{"hypervisor:qemu", "network:neutron:core:ml2", "network:neutron:ml2:vlan", "network:neutron:ml2:tun", "storage:block:lvm", "storage:block:ceph", "storage:object:ceph", "storage:ephemeral:ceph", "storage:image:ceph", "additional_service:sahara", "additional_service:ironic"},
		"graphs":                   map[string]int{"default": 204, "provision": 10, "deletion": 5, "net-verification": 14},
		"required_component_types": []string{"hypervisor", "network", "storage"},
		"tags":                     13, // 6 with has_primary: controller, rabbitmq, database, keystone, neutron, mongo
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("newton release mismatch (-want +got):\n%s", diff)
	}
	// The fixture item is pk 2 ("Newton on Ubuntu 16.04"), which extends the base
	// release: inherited keys are present, the item's own keys win.
	if r.Data.Get("modes").IsNull() || r.Data.Get("attributes_metadata").Get("editable").IsNull() {
		t.Errorf("inherited fixture keys are missing")
	}
	if g := r.Graphs[1]; g.Metadata.Get("node_filter").IsNull() {
		t.Errorf("graph %s: metadata_path was not loaded", g.Type)
	}
	// Every warning the real data produces is a known trap (notes/fuel.md §9).
	for _, d := range diags {
		if !strings.Contains(d.Summary, "duplicate key") && !strings.Contains(d.Summary, "differs from release_name") {
			t.Errorf("unexpected warning: %s: %s", d.Subject, d.Summary)
		}
	}
}

// TestCorpusPlugins loads each real plugin on its own: they are 4.0.0 packages and
// must pass fuel-plugin-builder's checks unmodified.
func TestCorpusPlugins(t *testing.T) {
	tests := map[string]struct{ roles, components, tasks int }{
		"contrail":               {roles: 7, components: 1, tasks: 88},
		"detach-database":        {roles: 1, components: 0, tasks: 6},
		"fuel-plugin-vmware-dvs": {roles: 0, components: 1, tasks: 12},
		"lma_collector":          {roles: 0, components: 0, tasks: 11},
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			dir := pluginsDir + "/" + name
			if _, err := os.Stat(dir + "/metadata.yaml"); err != nil {
				t.Fatalf("the upstream plugin is missing: %v", err)
			}
			fsys := mountFS{base: fstest.MapFS{"plugins/" + name: {Mode: fs.ModeDir | 0o755}}, prefix: "plugins/" + name, sub: os.DirFS(dir)}
			repo, diags := Load(fsys, Options{})
			if diags.HasErrors() {
				t.Fatalf("errors: %v", diags)
			}
			p := repo.Plugins[0]
			tasks := 0
			for _, g := range p.Graphs {
				tasks += len(g.Tasks)
			}
			got := struct{ roles, components, tasks int }{len(p.Roles), len(p.Components), tasks}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
			if p.Name != name || p.PackageVersion != "4.0.0" {
				t.Errorf("got plugin %s %s", p.Name, p.PackageVersion)
			}
		})
	}
}
