package loader

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/hcl/v2"
)

// pluginHCLFS builds a repository with plugins/<dir> copied from
// testdata/pluginhcl/<src> for each dir → src.
func pluginHCLFS(t *testing.T, dirs map[string]string) fstest.MapFS {
	t.Helper()
	fsys := fstest.MapFS{}
	for dir, src := range dirs {
		root := os.DirFS(path.Join("testdata", "pluginhcl", src))
		err := fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := fs.ReadFile(root, name)
			if err != nil {
				return err
			}
			fsys[path.Join("plugins", dir, name)] = &fstest.MapFile{Data: data}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return fsys
}

func diagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		where := "(no range)"
		if d.Subject != nil {
			where = fmt.Sprintf("%s:%d:%d", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		}
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		fmt.Fprintf(&b, "\n  %s: %s: %s", where, sev, d.Summary)
	}
	return b.String()
}

var pluginHCLCmpOpts = []cmp.Option{
	cmpopts.IgnoreTypes(hcl.Range{}),
	cmpopts.EquateEmpty(),
}

// TestPluginHCLTwin checks that a 4.0.0 plugin written as YAML files and its
// plugin.hcl twin decode to the same data trees and the same model.
func TestPluginHCLTwin(t *testing.T) {
	fsys := pluginHCLFS(t, map[string]string{"sdn-yaml": "yaml4", "sdn-hcl": "hcl4"})

	// The data trees, file by file.
	l := &loadCtx{r: newRepoFS(fsys, 0)}
	l.paths = newPathLoader(l.r)
	ydoc, ydiags := l.pluginFromYAML("plugins/sdn-yaml", "plugins/sdn-yaml/metadata.yaml", nil)
	hdoc, hdiags := l.pluginFromHCL("plugins/sdn-hcl/plugin.hcl")
	if len(ydiags) > 0 || len(hdiags) > 0 {
		t.Fatalf("unexpected diagnostics:%s%s", diagText(ydiags), diagText(hdiags))
	}
	if ydoc == nil || hdoc == nil {
		t.Fatal("no plugin document")
	}
	if diff := cmp.Diff(ydoc.meta.Without("name"), hdoc.meta.Without("name"), pluginHCLCmpOpts...); diff != "" {
		t.Errorf("metadata differs (-yaml +hcl):\n%s", diff)
	}
	if got := hdoc.meta.Get("name").String(); got != "sdn-hcl" {
		t.Errorf("name = %q, want sdn-hcl", got)
	}
	var yfiles, hfiles []string
	for name := range ydoc.files {
		yfiles = append(yfiles, name)
	}
	for name := range hdoc.files {
		hfiles = append(hfiles, name)
		if hdoc.fileNames[name] != "plugins/sdn-hcl/plugin.hcl" {
			t.Errorf("fileNames[%s] = %q, want the plugin.hcl", name, hdoc.fileNames[name])
		}
	}
	if diff := cmp.Diff(yfiles, hfiles, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("fixed files differ (-yaml +hcl):\n%s", diff)
	}
	for _, name := range yfiles {
		if diff := cmp.Diff(ydoc.files[name], hdoc.files[name], pluginHCLCmpOpts...); diff != "" {
			t.Errorf("%s differs (-yaml +hcl):\n%s", name, diff)
		}
	}

	// The models, through Load.
	repo, diags := Load(fsys, Options{})
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics:%s", diagText(diags))
	}
	yp, hp := repo.FindPlugin("sdn-yaml"), repo.FindPlugin("sdn-hcl")
	if yp == nil || hp == nil {
		t.Fatalf("plugins not loaded: yaml %v, hcl %v", yp != nil, hp != nil)
	}
	if hp.MetadataFile != "plugins/sdn-hcl/plugin.hcl" {
		t.Errorf("MetadataFile = %q", hp.MetadataFile)
	}
	y, h := *yp, *hp
	y.Name, h.Name = "", ""
	opts := append([]cmp.Option{cmpopts.IgnoreFields(Plugin{}, "Dir", "MetadataFile", "Metadata")}, pluginHCLCmpOpts...)
	if diff := cmp.Diff(&y, &h, opts...); diff != "" {
		t.Errorf("models differ (-yaml +hcl):\n%s", diff)
	}
	// The twin is not trivially equal: spot-check a few parts.
	if len(h.Roles) != 2 || len(h.Components) != 1 || len(h.Graphs) != 1 || len(h.Graphs[0].Tasks) != 2 {
		t.Errorf("roles %d, components %d, graphs %d", len(h.Roles), len(h.Components), len(h.Graphs))
	}
	if got := h.Graphs[0].Tasks[1].Data.Get("cross-depends").Items[0].Get("role").String(); got != "self" {
		t.Errorf("cross-depends role = %q, want self", got)
	}
}

// TestPluginHCLRelease loads a 5.0.0 release plugin written in HCL.
func TestPluginHCLRelease(t *testing.T) {
	fsys := pluginHCLFS(t, map[string]string{"newton": "release5"})
	repo, diags := Load(fsys, Options{})
	if len(diags) > 0 {
		t.Fatalf("unexpected diagnostics:%s", diagText(diags))
	}
	if len(repo.Releases) != 1 {
		t.Fatalf("got %d releases, want 1", len(repo.Releases))
	}
	r := repo.Releases[0]
	type graph struct {
		Type  string
		Tasks []string
	}
	type summary struct {
		Name, Version, OS, Description, Plugin string
		Roles, Tags                            []string
		Graphs                                 []graph
		Debug                                  any
	}
	got := summary{Name: r.Name, Version: r.Version, OS: r.OperatingSystem, Description: r.Description, Plugin: r.Plugin.Name}
	for _, role := range r.Roles {
		got.Roles = append(got.Roles, role.Name)
	}
	for _, tag := range r.Tags {
		got.Tags = append(got.Tags, tag.Name)
	}
	for _, g := range r.Graphs {
		gg := graph{Type: g.Type}
		for _, task := range g.Tasks {
			gg.Tasks = append(gg.Tasks, task.ID)
		}
		got.Graphs = append(got.Graphs, gg)
	}
	got.Debug = r.Attributes.Get("common").Get("debug").Get("type").Interface()
	want := summary{
		Name: "ubuntu-newton", Version: "newton-10.0", OS: "Ubuntu", Description: "OpenStack Newton on Ubuntu 16.04", Plugin: "ubuntu-newton",
		Roles: []string{"controller", "compute", "cinder"},
		Tags:  []string{"controller", "compute", "cinder"},
		Graphs: []graph{
			{Type: "default", Tasks: []string{"globals", "hiera"}},
			{Type: "provision", Tasks: []string{"provision-nodes"}},
		},
		Debug: "checkbox",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("release (-want +got):\n%s", diff)
	}
	if got := r.Data.Get("name").String(); got != "ubuntu-newton" {
		t.Errorf("release data name = %q", got)
	}
	hiera := r.Graphs[0].Tasks[1].Data
	if !hiera.Has("cross-depends") || hiera.Has("cross_depends") {
		t.Errorf("hiera keys = %v, want cross-depends", hiera.Keys())
	}
	if p := repo.FindPlugin("ubuntu-newton"); p == nil || len(p.Defines) != 1 || len(p.Graphs) != 0 {
		t.Errorf("plugin = %+v", p)
	}
}

const pluginHCLBase = `plugin "bad" {
  title           = "Bad"
  version         = "1.0.0"
  package_version = "4.0.0"
  description     = "A plugin"
  fuel_version    = ["9.0"]
  licenses        = ["MIT"]
  authors         = ["me"]
  homepage        = "https://example.org"
  groups          = []
  is_hotpluggable = false
  releases        = [{ os = "ubuntu", version = "mitaka-9.0", mode = ["ha"] }]
}
`

// TestPluginHCLBadInput checks the diagnostics of broken plugin.hcl files: the
// message, and a position inside plugin.hcl for every diagnostic.
func TestPluginHCLBadInput(t *testing.T) {
	const file = "plugins/bad/plugin.hcl"
	tests := []struct {
		name      string
		src       string
		summary   string
		line, col int
	}{
		{"no plugin block", "role \"r\" {\n  name = \"R\"\n}\n", `no plugin "<name>" block`, 1, 1},
		{"two plugin blocks", pluginHCLBase + "plugin \"again\" {}\n", "holds one plugin block (the first is at line 1)", 14, 1},
		{"unknown block", pluginHCLBase + "\nservice \"x\" {}\n", `unexpected block "service"; the blocks of plugin.hcl are locals, plugin, role`, 15, 1},
		{"duplicate role", pluginHCLBase + "role \"r\" {\n  name = \"R\"\n  description = \"D\"\n}\nrole \"r\" {\n  name = \"R2\"\n  description = \"D\"\n}\n",
			`duplicate role "r" (the first is at line 14)`, 18, 6},
		{"syntax error", pluginHCLBase + "role \"r\" {\n  name = \"R\"\n  description \"D\"\n}\n", "Invalid block definition", 16, 18},
		{"graph outside release", pluginHCLBase + "graph \"provision\" {\n  task \"a\" {\n    type = \"shell\"\n  }\n}\n",
			"graph provision needs a release block (package_version 5.0.0+)", 14, 7},
		{"role without description", pluginHCLBase + "role \"r\" {\n  name = \"R\"\n}\n", `role r: missing required field "description"`, 14, 1},
		{"release in 4.0.0", pluginHCLBase + "release \"x-1.0\" {\n  release_name = \"x\"\n}\n", "is_release needs package_version 5.0.0 or later", 14, 1},
		{"attribute and blocks", pluginHCLBase + "component \"network:x\" {\n  label = \"X\"\n  requires = []\n  requires {\n    name = \"network:y\"\n  }\n}\n",
			"requires is set both as an attribute (line 16) and as blocks", 17, 3},
		{"label set twice", pluginHCLBase + "task \"t\" {\n  id = \"u\"\n  type = \"shell\"\n}\n", `task "t": id is the block label`, 15, 3},
		{"top-level attribute", "title = \"x\"\n" + pluginHCLBase, `unexpected attribute "title" outside a block`, 1, 1},
		{"bad expression", pluginHCLBase + "role \"r\" {\n  name = local.nope\n  description = \"D\"\n}\n", "Unsupported attribute", 15, 15},
		{"missing label", pluginHCLBase + "volume {\n  type = \"vg\"\n}\n", "a volume block takes one label, its id", 14, 1},
		{"nested entity in plugin", strings.Replace(pluginHCLBase, "groups ", "role \"r\" {}\n  groups ", 1),
			`unexpected block "role" in the plugin block; role blocks go at the top level`, 10, 3},
		{"duplicate release", strings.Replace(pluginHCLBase, "4.0.0", "5.0.0", 1) + "release \"r-1\" {\n  release_name = \"bad\"\n}\nrelease \"r-1\" {}\n",
			`duplicate release "r-1" (the first is at line 14)`, 17, 9},
		{"default graph twice", pluginHCLBase + "task \"a\" {\n  type = \"shell\"\n}\ngraph \"default\" {\n  task \"b\" {\n    type = \"shell\"\n  }\n}\n",
			"the plugin's default graph is written both as task blocks (line 14)", 17, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{file: &fstest.MapFile{Data: []byte(tt.src)}}
			_, diags := Load(fsys, Options{})
			var found *hcl.Diagnostic
			for _, d := range diags {
				if d.Subject == nil || d.Subject.Filename != file {
					t.Errorf("diagnostic without a range in %s: %s", file, diagText(hcl.Diagnostics{d}))
				}
				if found == nil && strings.Contains(d.Summary, tt.summary) {
					found = d
				}
			}
			if found == nil {
				t.Fatalf("no diagnostic containing %q; got:%s", tt.summary, diagText(diags))
			}
			if found.Severity != hcl.DiagError {
				t.Errorf("severity = %v, want error", found.Severity)
			}
			if got := found.Subject; got.Start.Line != tt.line || got.Start.Column != tt.col {
				t.Errorf("%q at %d:%d, want %d:%d", found.Summary, got.Start.Line, got.Start.Column, tt.line, tt.col)
			}
		})
	}
}

// TestPluginHCLTruncated loads truncated versions of the test plugins: every one must
// give diagnostics with ranges (or none), never a panic.
func TestPluginHCLTruncated(t *testing.T) {
	for _, src := range []string{"hcl4", "release5"} {
		full := pluginHCLFS(t, map[string]string{"p": src})
		data := full["plugins/p/plugin.hcl"].Data
		for n := 0; n < len(data); n += 3 {
			fsys := fstest.MapFS{}
			for k, v := range full {
				fsys[k] = v
			}
			fsys["plugins/p/plugin.hcl"] = &fstest.MapFile{Data: data[:n]}
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("%s truncated to %d bytes: panic: %v", src, n, r)
					}
				}()
				_, diags := Load(fsys, Options{})
				for _, d := range diags {
					if d.Subject == nil {
						t.Errorf("%s truncated to %d bytes: diagnostic without a range: %s", src, n, d.Summary)
					}
				}
			}()
		}
	}
}

// One missing closing quote makes hclsyntax report an error on almost every
// following line; the loader reports one, at the string that is not closed.
func TestHCLUnterminatedStringIsOneError(t *testing.T) {
	src := "cluster \"demo\" {\n  release = \"base-1.0\n  mode    = \"ha\"\n  plugins = [\"a\", \"b\"]\n  node \"node-1\" {\n    roles = [\"controller\"]\n  }\n}\n"
	_, diags := clusterHCLToValue("clusters/demo.hcl", []byte(src))
	if len(diags) != 1 {
		t.Fatalf("got %d diagnostics, want 1:\n%v", len(diags), diags)
	}
	d := diags[0]
	want := hcl.Range{Filename: "clusters/demo.hcl", Start: hcl.Pos{Line: 2, Column: 13, Byte: 29}, End: hcl.Pos{Line: 2, Column: 22, Byte: 38}}
	if d.Summary != "Unterminated string" || d.Subject == nil || *d.Subject != want {
		t.Errorf("got %q at %#v, want \"Unterminated string\" at %#v", d.Summary, d.Subject, want)
	}
	if got := src[d.Subject.Start.Byte:d.Subject.End.Byte]; got != "\"base-1.0" {
		t.Errorf("the subject covers %q, want the unterminated string", got)
	}
	// An error before the unterminated string is kept.
	_, diags = clusterHCLToValue("clusters/demo.hcl", []byte("cluster \"demo\" {\n  release = = 1\n  mode = \"ha\n  x = \"y\"\n}\n"))
	var sums []string
	for _, d := range diags {
		sums = append(sums, fmt.Sprintf("%d:%s", d.Subject.Start.Line, d.Summary))
	}
	if got, want := strings.Join(sums, ", "), "2:Invalid expression, 3:Unterminated string"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
