package scaffold

import (
	"strings"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// Check loads one plugin package (its files by path relative to the package) on
// its own, as plugins/<name> of an otherwise empty repository, and runs every check
// of validate on it, and fuel-plugin-builder's checks that validate leaves out
// (builder.go). The diagnostics, sorted, and the sources for their snippets name
// files relative to the package.
func Check(name string, files map[string][]byte) (hcl.Diagnostics, map[string]*hcl.File) {
	prefix := "plugins/" + name + "/"
	fsys := fstest.MapFS{}
	for f, data := range files {
		fsys[prefix+f] = &fstest.MapFile{Data: data}
	}
	repo, diags := loader.Load(fsys, loader.Options{})
	_, more := render.Check(repo)
	diags = append(diags, more...)
	for _, p := range repo.Plugins {
		diags = append(diags, builderChecks(p)...)
	}
	var out hcl.Diagnostics
	for _, d := range diags {
		nd := *d
		for _, r := range []**hcl.Range{&nd.Subject, &nd.Context} {
			if *r != nil {
				rr := **r
				rr.Filename = strings.TrimPrefix(rr.Filename, prefix)
				*r = &rr
			}
		}
		out = append(out, &nd)
	}
	sources := map[string]*hcl.File{}
	for f, file := range repo.Sources.Files() {
		sources[strings.TrimPrefix(f, prefix)] = file
	}
	return loader.SortDiagnostics(out), sources
}
