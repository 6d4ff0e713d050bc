package render

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// FuzzCheck builds the merged model of a fuzzed cluster spec and a fuzzed role file
// against the base repository. Whatever the input: no panic, and every diagnostic
// points inside the file it names.
func FuzzCheck(f *testing.F) {
	f.Add(baseCluster, extRoles)
	for _, tc := range renderCases() {
		for _, e := range tc.edits {
			if e.file == "clusters/prod.yaml" && e.old != "" {
				f.Add(strings.Replace(baseCluster, e.old, e.new, 1), extRoles)
			}
		}
	}
	f.Add(baseCluster, "ext-role:\n  name: x\n  description: y\n  limits: {min: \"settings:ext.mode.value\", max: \"(\"}\n  conflicts: '*'\n")
	f.Add(baseCluster, "ext-role:\n  name: x\n  description: y\n  restrictions: ['cluster:mode == \"x\" and', {\"a:b\": c}, {condition: 1}]\n")
	f.Fuzz(func(t *testing.T, cluster, roles string) {
		files := baseFiles()
		files["clusters/prod.yaml"] = cluster
		files["plugins/ext/node_roles.yaml"] = roles
		done := make(chan struct{})
		var repo *loader.Repo
		var diags, more hcl.Diagnostics
		go func() {
			defer close(done)
			repo, diags = loader.Load(mapFS(files), loader.Options{})
			_, more = Check(repo)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("no result after 5s")
		}
		for _, d := range append(diags, more...) {
			if d.Subject == nil {
				continue
			}
			src, ok := files[d.Subject.Filename]
			if !ok {
				continue // a directory or a file the fuzzer cannot change
			}
			if lines := strings.Count(src, "\n") + 1; d.Subject.Start.Line < 1 || d.Subject.Start.Line > lines {
				t.Errorf("%s: line %d outside the file (%d lines): %s", d.Subject.Filename, d.Subject.Start.Line, lines, d.Summary)
			}
		}
	})
}
