package specedit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
)

// conventions are the byte conventions of files written on Windows: each turns a
// file written with LF endings and no byte order mark into one with them.
var conventions = []struct {
	name  string
	apply func(string) string
}{
	{"BOM", func(s string) string { return "\ufeff" + s }},
	{"CRLF", func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }},
	{"BOM and CRLF", func(s string) string { return "\ufeff" + strings.ReplaceAll(s, "\n", "\r\n") }},
}

// checkConventions runs edit on src and want written in every convention: the
// result is want in the same convention (the mark kept, every line ending CRLF).
func checkConventions(t *testing.T, src, want string, edit func([]byte) ([]byte, error)) {
	t.Helper()
	for _, c := range conventions {
		got, err := edit([]byte(c.apply(src)))
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if diff := cmp.Diff(c.apply(want), string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
	}
}

// TestEditKeepsBOMAndCRLF: tags and roles edits, in YAML (flow and block, lines
// rewritten, added and removed) and in HCL (hclwrite rewrites the whole file), keep
// a UTF-8 byte order mark and CRLF line endings, the new lines included.
func TestEditKeepsBOMAndCRLF(t *testing.T) {
	const yamlSrc = "# demo\ncluster: demo\ntags:\n  backup: {has_primary: false}\n  audit:\n    has_primary: true\nnodes:\n  node-1: {id: 1, roles: [controller]}   # the first\n  node-2:\n    id: 2\n    roles:\n      - controller\n  node-3:\n    id: 3\n"
	yamlEdits := []struct {
		name string
		edit Edit
		want string
	}{
		{"flow list", Edit{"node-1", []string{"roles"}, add("compute")},
			strings.Replace(yamlSrc, "roles: [controller]}", "roles: [controller, compute]}", 1)},
		{"block list grown", Edit{"node-2", []string{"roles"}, add("compute")},
			strings.Replace(yamlSrc, "      - controller\n", "      - controller\n      - compute\n", 1)},
		{"block list emptied", Edit{"node-2", []string{"roles"}, remove("controller")},
			strings.Replace(yamlSrc, "    roles:\n      - controller\n", "    roles: []\n", 1)},
		{"key added on a new line", Edit{"node-3", []string{"tags", "assign"}, add("backup")},
			yamlSrc + "    tags: {assign: [backup]}\n"},
	}
	for _, tc := range yamlEdits {
		t.Run("yaml "+tc.name, func(t *testing.T) {
			checkConventions(t, yamlSrc, tc.want, func(src []byte) ([]byte, error) { return EditYAML(src, tc.edit) })
		})
	}
	mapEdits := []struct {
		name string
		edit MapEdit
		want string
	}{
		{"tag created", MapEdit{Path: []string{"tags"}, Key: "db", Value: "{has_primary: true}"},
			strings.Replace(yamlSrc, "    has_primary: true\n", "    has_primary: true\n  db: {has_primary: true}\n", 1)},
		{"tag deleted", MapEdit{Path: []string{"tags"}, Key: "audit"},
			strings.Replace(yamlSrc, "  audit:\n    has_primary: true\n", "", 1)},
	}
	for _, tc := range mapEdits {
		t.Run("yaml "+tc.name, func(t *testing.T) {
			checkConventions(t, yamlSrc, tc.want, func(src []byte) ([]byte, error) { return EditYAMLMap(src, tc.edit) })
		})
	}

	const hclSrc = "# demo\ncluster \"demo\" {\n  release = \"quickstart-1.0\"\n\n  node \"node-1\" {\n    id    = 1\n    roles = [\"controller\"]\n  }\n}\n"
	t.Run("hcl roles", func(t *testing.T) {
		want := strings.Replace(hclSrc, `roles = ["controller"]`, `roles = ["controller", "compute"]`, 1)
		checkConventions(t, hclSrc, want, func(src []byte) ([]byte, error) {
			return EditHCL(src, "demo.hcl", Edit{"node-1", []string{"roles"}, add("compute")}, []string{"controller"})
		})
	})
	t.Run("hcl tags block added", func(t *testing.T) {
		want := strings.Replace(hclSrc, "    roles = [\"controller\"]\n", "    roles = [\"controller\"]\n    tags {\n      assign = [\"backup\"]\n    }\n", 1)
		checkConventions(t, hclSrc, want, func(src []byte) ([]byte, error) {
			return EditHCL(src, "demo.hcl", Edit{"node-1", []string{"tags", "assign"}, add("backup")}, nil)
		})
	})
	t.Run("hcl cluster tags", func(t *testing.T) {
		edit := func(src []byte) ([]byte, error) {
			val := cty.ObjectVal(map[string]cty.Value{"backup": cty.ObjectVal(map[string]cty.Value{"has_primary": cty.False})})
			return SetHCLClusterAttr(src, "demo.hcl", "tags", val)
		}
		want, err := edit([]byte(hclSrc))
		if err != nil || !strings.Contains(string(want), "      has_primary = false\n") {
			t.Fatalf("the edit with LF endings: %v\n%s", err, want)
		}
		checkConventions(t, hclSrc, string(want), edit)
	})
	t.Run("no change", func(t *testing.T) {
		for _, c := range conventions {
			if _, err := EditYAML([]byte(c.apply(yamlSrc)), Edit{"node-1", []string{"roles"}, add("controller")}); err != ErrNoChange {
				t.Errorf("%s: a no-op edit: %v", c.name, err)
			}
		}
	})
}

// TestEditMixedLineEndings: in a file whose lines end in both CRLF and LF, the
// lines an edit does not touch keep their own ending, and the lines it writes end
// as most of the file's lines do.
func TestEditMixedLineEndings(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"mostly CRLF",
			"cluster: demo\r\nnodes:\n  node-1:\r\n    id: 1\r\n    roles:\r\n      - controller\r\n  node-2: {id: 2}\n",
			"cluster: demo\r\nnodes:\n  node-1:\r\n    id: 1\r\n    roles:\r\n      - controller\r\n      - compute\r\n  node-2: {id: 2}\n"},
		{"mostly LF",
			"cluster: demo\r\nnodes:\n  node-1:\n    id: 1\n    roles:\n      - controller\r\n  node-2: {id: 2}\n",
			"cluster: demo\r\nnodes:\n  node-1:\n    id: 1\n    roles:\n      - controller\r\n      - compute\n  node-2: {id: 2}\n"},
		{"no final line break",
			"nodes:\r\n  node-1:\r\n    roles:\r\n      - controller",
			"nodes:\r\n  node-1:\r\n    roles:\r\n      - controller\r\n      - compute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := EditYAML([]byte(tc.src), Edit{"node-1", []string{"roles"}, add("compute")})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
