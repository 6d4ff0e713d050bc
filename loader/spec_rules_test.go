package loader

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/fuelsync/fuelsync/internal/mapfs"
)

// TestSpecRules: the rules of a cluster spec's and a plugin's fields, each
// breaking of one reported at its place (the quickstart example, with a file
// added to or lines appended to one of its files).
func TestSpecRules(t *testing.T) {
	for _, c := range []struct {
		name      string
		file, add string // lines appended to file (created when missing)
		want      string // a line of diagsString
	}{
		{"a cluster's resolution", "clusters/demo.yaml", "resolution: nodes",
			`clusters/demo.yaml:32,13-18 "cluster demo: resolution must be tags or roles, not \"nodes\""`},
		{"a cluster's instances, not a number", "clusters/demo.yaml", "instances: {backup: two}",
			`clusters/demo.yaml:32,21-24 "cluster demo: instances.backup must be a positive integer"`},
		{"a cluster's instances, not positive", "clusters/demo.yaml", "instances: {backup: 0}",
			`clusters/demo.yaml:32,21-22 "cluster demo: instances.backup must be a positive integer"`},
		{"a fixed file the package format does not read", "plugins/monitoring/node_tags.yaml", "backup: {has_primary: false}",
			`plugins/monitoring/node_tags.yaml:1,1-1 "plugin monitoring: node_tags.yaml is not read by package_version 4.0.0 (it needs 6.0.0 or later)"`},
		{"legacy tasks.yaml", "plugins/monitoring/tasks.yaml", "- {role: [monitor], stage: post_deployment, type: shell, parameters: {cmd: 'true', timeout: 60}}",
			`plugins/monitoring/tasks.yaml:1,1-2 "plugin monitoring: tasks.yaml (legacy pre/post deployment tasks) is deprecated"`},
		{"tasks.yaml not a list", "plugins/monitoring/tasks.yaml", "role: monitor",
			`plugins/monitoring/tasks.yaml:1,1-2 "plugin monitoring: tasks.yaml must be a list, not a mapping"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			fsys, err := mapfs.Read("../examples/quickstart")
			if err != nil {
				t.Fatal(err)
			}
			f := fsys[c.file]
			if f == nil {
				f = &fstest.MapFile{}
				fsys[c.file] = f
			}
			f.Data = append(append([]byte{}, f.Data...), []byte(c.add+"\n")...)
			_, diags := Load(fsys, Options{})
			if got := diagsString(diags); !strings.Contains(got, c.want) {
				t.Fatalf("want %s\ngot:\n%s", c.want, got)
			}
		})
	}
}
