package specedit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEditYAMLMap(t *testing.T) {
	const src = `cluster: demo   # c
tags:                           # cluster tags
  backup: {has_primary: false}
  audit:
    has_primary: true
nodes:
  node-1: {id: 1, roles: [controller]}
`
	const flow = "cluster: demo\ntags: {backup: {has_primary: false}, audit: {has_primary: true}}\n"
	const none = "cluster: demo\nnodes: {}\n"
	for _, tc := range []struct {
		name, src string
		edit      MapEdit
		want      string
	}{
		{"create", src, MapEdit{Path: []string{"tags"}, Key: "db", Value: "{has_primary: true}"},
			strings.Replace(src, "    has_primary: true\n", "    has_primary: true\n  db: {has_primary: true}\n", 1)},
		{"update flow value", src, MapEdit{Path: []string{"tags"}, Key: "backup", Value: "{has_primary: true}"},
			strings.Replace(src, "backup: {has_primary: false}", "backup: {has_primary: true}", 1)},
		{"update block value", src, MapEdit{Path: []string{"tags"}, Key: "audit", Value: "{has_primary: false}"},
			strings.Replace(src, "  audit:\n    has_primary: true\n", "  audit: {has_primary: false}\n", 1)},
		{"delete block entry", src, MapEdit{Path: []string{"tags"}, Key: "audit"},
			strings.Replace(src, "  audit:\n    has_primary: true\n", "", 1)},
		{"delete flow entry", flow, MapEdit{Path: []string{"tags"}, Key: "backup"},
			"cluster: demo\ntags: {audit: {has_primary: true}}\n"},
		{"delete last flow entry", flow, MapEdit{Path: []string{"tags"}, Key: "audit"},
			"cluster: demo\ntags: {backup: {has_primary: false}}\n"},
		{"create the mapping", none, MapEdit{Path: []string{"tags"}, Key: "db", Value: "{has_primary: false}"},
			"cluster: demo\nnodes: {}\ntags: {db: {has_primary: false}}\n"},
		{"delete the only entry", "tags:\n  a: {has_primary: false}\nnodes: {}\n", MapEdit{Path: []string{"tags"}, Key: "a"},
			"tags: {}\nnodes: {}\n"},
		{"at a position", src, MapEdit{AtLine: 3, AtCol: 3, Key: "db", Value: "{has_primary: false}"},
			strings.Replace(src, "    has_primary: true\n", "    has_primary: true\n  db: {has_primary: false}\n", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EditYAMLMap([]byte(tc.src), tc.edit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
