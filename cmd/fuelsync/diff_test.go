package main

import (
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/loader"
)

// TestAffectedClusters: a change to a cluster spec affects that cluster; any other
// file the load reads, every cluster; nothing, none.
func TestAffectedClusters(t *testing.T) {
	base := fstest.MapFS{}
	root := os.DirFS("../../examples/quickstart")
	err := fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(root, p)
		base[p] = &fstest.MapFile{Data: data}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	with := func(name, old, new string) fstest.MapFS {
		out := fstest.MapFS{}
		for k, v := range base {
			out[k] = v
		}
		src := string(base[name].Data)
		if !strings.Contains(src, old) {
			t.Fatalf("%s has no %q", name, old)
		}
		out[name] = &fstest.MapFile{Data: []byte(strings.Replace(src, old, new, 1))}
		return out
	}
	load := func(t *testing.T, fsys fstest.MapFS) *loader.Repo {
		repo, diags := loader.Load(fsys, loader.Options{})
		if diags.HasErrors() {
			t.Fatalf("load: %v", diags.Errs())
		}
		return repo
	}
	for _, tc := range []struct {
		name string
		head fstest.MapFS
		want []string
	}{
		{"nothing", base, []string{}},
		{"a cluster spec", with("clusters/demo.yaml", "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}"), []string{"demo"}},
		{"a comment in the HCL twin", with("clusters/demo-hcl.hcl", "\n", "\n# edited\n"), []string{"demo-hcl"}},
		{"a plugin's tasks", with("plugins/monitoring/deployment_tasks.yaml", "timeout: 600", "timeout: 900"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := affectedClusters(load(t, base), load(t, tc.head))
			if diff := cmp.Diff(tc.want, got); diff != "" || (got == nil) != (tc.want == nil) {
				t.Errorf("affected clusters (-want +got):\n%s (nil: %v)", diff, got == nil)
			}
		})
	}
}
