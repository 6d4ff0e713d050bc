package scaffold

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/fuelsync/fuelsync/internal/golden"
	"github.com/fuelsync/fuelsync/internal/mapfs"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

func quickstart(t *testing.T) fstest.MapFS {
	t.Helper()
	fsys, err := mapfs.Read("../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	return fsys
}

func diagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "%s: %s: %s\n", d.Subject, d.Summary, d.Detail)
	}
	return b.String()
}

// cluster is a cluster on the quickstart release enabling plugin name with its role
// on node-1, or on the plugin's own release.
func cluster(o Options) string {
	if o.Release {
		return fmt.Sprintf("cluster: scaffolded\nrelease: %s\nmode: ha\nnodes:\n  node-1: {id: 1, roles: [%s]}\n", o.ReleaseVersion(), o.Name)
	}
	return fmt.Sprintf(`cluster: scaffolded
release: quickstart-1.0
mode: ha
plugins: [%s]
components: [hypervisor:qemu, network:neutron:core:ml2, network:neutron:ml2:vlan, storage:block:lvm]
nodes:
  node-1: {id: 1, roles: [controller]}
  node-2: {id: 2, roles: [controller]}
  node-3: {id: 3, roles: [controller]}
  node-4: {id: 4, roles: [compute]}
  node-5: {id: 5, roles: [%s]}
`, o.Name, o.Name)
}

// TestCreate: every package version, extending a release or defining one, YAML and
// HCL: the plugin loads without an error or a warning on its own, and in the
// quickstart repository a cluster with its role on a node validates and renders,
// the role's tasks on that node. The files are pinned by golden files.
func TestCreate(t *testing.T) {
	for _, pv := range PackageVersions {
		for _, release := range []bool{false, true} {
			if release && pv == "4.0.0" {
				continue // is_release is a 5.0.0 feature (TestCreateRefused)
			}
			for _, format := range []string{"yaml", "hcl"} {
				name := fmt.Sprintf("%s-%s", strings.ReplaceAll(pv, ".", ""), map[bool]string{false: "plugin", true: "release"}[release])
				t.Run(name+"-"+format, func(t *testing.T) {
					o := Options{Name: "acme-" + name, PackageVersion: pv, Release: release, Format: format,
						Roles: []string{"acme-extra"}, Components: []string{"network:neutron:ml2:acme", "additional_service:acme"},
						Releases: []Compat{{OS: "ubuntu", Version: "quickstart-1.0"}}}
					files, err := Files(o)
					if err != nil {
						t.Fatal(err)
					}
					if diags, _ := Check(o.Name, files); len(diags) > 0 {
						t.Fatalf("the package alone (plugin check):\n%s", diagText(diags))
					}
					fsys := quickstart(t)
					for f, data := range files {
						fsys[path.Join("plugins", o.Name, f)] = &fstest.MapFile{Data: data}
						golden.Check(t, path.Join("testdata", name+"-"+format, f), data)
						if strings.HasSuffix(f, ".hcl") && !bytes.Equal(hclwrite.Format(data), data) {
							t.Errorf("%s is not formatted as hclwrite (terraform fmt) formats it:\n%s", f, hclwrite.Format(data))
						}
					}
					fsys["clusters/scaffolded.yaml"] = &fstest.MapFile{Data: []byte(cluster(o))}
					repo, diags := loader.Load(fsys, loader.Options{})
					rs, more := render.Render(repo, render.Options{Clusters: []string{"scaffolded"}})
					diags = append(diags, more...)
					var mine hcl.Diagnostics
					for _, d := range diags {
						if d.Subject == nil || strings.HasPrefix(d.Subject.Filename, "plugins/"+o.Name+"/") || strings.HasPrefix(d.Subject.Filename, "clusters/scaffolded") || d.Severity == hcl.DiagError {
							mine = append(mine, d)
						}
					}
					if len(mine) > 0 {
						t.Fatalf("problems:\n%s", diagText(mine))
					}
					if len(rs) != 1 {
						t.Fatalf("%d clusters rendered", len(rs))
					}
					node := "node-5"
					if release {
						node = "node-1"
					}
					ng := rs[0].Graph("default").Node(node)
					if ng == nil || ng.Task(o.Name+"-example") == nil {
						t.Errorf("the role's task %s-example is not on %s", o.Name, node)
					}
				})
			}
		}
	}
}

// TestCreateRefused: options that would not make a valid package, each with its
// rule in the message.
func TestCreateRefused(t *testing.T) {
	ok := Options{Name: "acme", PackageVersion: "6.0.0", Format: "yaml", Releases: []Compat{{"ubuntu", "quickstart-1.0"}}}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"uppercase name", func(o *Options) { o.Name = "Acme" }, `invalid plugin name "Acme"`},
		{"dotted name", func(o *Options) { o.Name = "a.b" }, `(^[a-z0-9_-]+$)`},
		{"package version", func(o *Options) { o.PackageVersion = "3.0.0" }, `unknown package version "3.0.0": plugin create writes 4.0.0, 5.0.0, 6.0.0`},
		{"release in 4.0.0", func(o *Options) { o.PackageVersion, o.Release = "4.0.0", true }, "--release needs package_version 5.0.0 or later"},
		{"role name", func(o *Options) { o.Roles = []string{"bad role"} }, `invalid role name "bad role"`},
		{"component", func(o *Options) { o.Components = []string{"sdn"} }, `invalid component name "sdn"`},
		{"format", func(o *Options) { o.Format = "json" }, `unknown format "json"`},
		{"no release", func(o *Options) { o.Releases = nil }, "no release to extend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := ok
			tc.edit(&o)
			_, err := Files(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := Files(ok); err != nil {
		t.Errorf("valid options: %v", err)
	}
}
