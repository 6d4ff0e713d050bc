package specedit

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// FuzzEditHCL: an HCL edit either fails or returns a file that parses, whose
// node-1 has the new list as a literal (the value read back is the one written)
// — whatever the spec's text and the name added.
func FuzzEditHCL(f *testing.F) {
	f.Add("cluster \"d\" {\n  node \"node-1\" {\n    id    = 1\n    roles = [\"a\"]\n  }\n}\n", "b", "roles")
	f.Add("cluster \"d\" {\n  node \"node-1\" { id = 1 }\n}\n", "x${y}", "tags")
	f.Add("cluster \"d\" {\n\tnode \"node-1\" {\n\t\ttags {\n\t\t\tassign = [] # c\n\t\t}\n\t}\n}", "%{z}\"\\", "tags")
	f.Add("cluster \"d\" {\n  node \"node-1\" {\n    roles = local.r }\n}\n", "é\u2028", "roles")
	f.Fuzz(func(t *testing.T, src, name, where string) {
		path := []string{"roles"}
		if where == "tags" {
			path = []string{"tags", "assign"}
		}
		if !utf8.ValidString(name) {
			return // cluster specs are UTF-8; the loader refuses anything else
		}
		want := cty.StringVal(name).AsString() // NFC, as the loader reads it
		out, err := EditHCL([]byte(src), "f.hcl", Edit{"node-1", path, add(name)}, nil)
		if err != nil {
			return
		}
		file, diags := hclsyntax.ParseConfig(out, "f.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("the edit wrote a file that does not parse: %s\n%s", diags.Error(), out)
		}
		body := file.Body.(*hclsyntax.Body)
		var node *hclsyntax.Block
		for _, c := range body.Blocks {
			for _, b := range c.Body.Blocks {
				if c.Type == "cluster" && b.Type == "node" && len(b.Labels) == 1 && b.Labels[0] == "node-1" {
					node = b
				}
			}
		}
		if node == nil {
			t.Fatalf("node-1 is gone:\n%s", out)
		}
		for _, key := range path[:len(path)-1] {
			i := slices.IndexFunc(node.Body.Blocks, func(b *hclsyntax.Block) bool { return b.Type == key && len(b.Labels) == 0 })
			if i < 0 {
				t.Fatalf("no %s block in node-1:\n%s", key, out)
			}
			node = node.Body.Blocks[i]
		}
		a := node.Body.Attributes[path[len(path)-1]]
		if a == nil {
			t.Fatalf("no %s in node-1:\n%s", strings.Join(path, "."), out)
		}
		v, diags := a.Expr.Value(nil)
		if diags.HasErrors() || !v.CanIterateElements() || v.LengthInt() != 1 || v.Index(cty.Zero).AsString() != want {
			t.Fatalf("%s reads back as %#v (%s), want [%q]:\n%s", strings.Join(path, "."), v, diags.Error(), want, out)
		}
	})
}
