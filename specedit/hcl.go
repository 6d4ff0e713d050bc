package specedit

import (
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// EditHCL applies e to an HCL cluster spec. current is the list as the loader
// evaluated it (an HCL value may be an expression, local.controller); the new list
// is written as a literal in place of the old expression. The file's byte order
// mark and line endings are kept (keepConventions).
func EditHCL(src []byte, filename string, e Edit, current []string) ([]byte, error) {
	return keepConventions(src, func(src []byte) ([]byte, error) { return editHCL(src, filename, e, current) })
}

func editHCL(src []byte, filename string, e Edit, current []string) ([]byte, error) {
	f, diags := hclwrite.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	var node *hclwrite.Block
	for _, c := range f.Body().Blocks() {
		if c.Type() != "cluster" {
			continue
		}
		for _, b := range c.Body().Blocks() {
			if b.Type() == "node" && len(b.Labels()) == 1 && b.Labels()[0] == e.Node {
				node = b
			}
		}
	}
	if node == nil {
		return nil, fmt.Errorf("no node block %q in the file (a node made by for_each cannot be edited one by one)", e.Node)
	}
	if node.Body().GetAttribute("for_each") != nil {
		return nil, fmt.Errorf("node %s comes from a for_each block: edit the block itself", e.Node)
	}
	items := e.Set(slices.Clone(current))
	if slices.Equal(items, current) {
		return nil, ErrNoChange
	}
	body := node.Body()
	for _, key := range e.Path[:len(e.Path)-1] {
		b := body.FirstMatchingBlock(key, nil)
		if b == nil {
			if len(items) == 0 {
				return nil, ErrNoChange
			}
			b = body.AppendNewBlock(key, nil)
		}
		body = b.Body()
	}
	vals := make([]cty.Value, len(items))
	for i, it := range items {
		vals[i] = cty.StringVal(it)
	}
	list := cty.ListValEmpty(cty.String)
	if len(vals) > 0 {
		list = cty.TupleVal(vals)
	}
	body.SetAttributeValue(e.Path[len(e.Path)-1], list)
	out := f.Bytes()
	if string(out) == string(src) {
		return nil, errors.New("the edit changed nothing")
	}
	return out, nil
}

// SetHCLClusterAttr sets attribute name of the cluster block to val (a literal in
// place of the old expression), or removes it when val is cty.NilVal. The file's
// byte order mark and line endings are kept (keepConventions).
func SetHCLClusterAttr(src []byte, filename, name string, val cty.Value) ([]byte, error) {
	return keepConventions(src, func(src []byte) ([]byte, error) { return setHCLClusterAttr(src, filename, name, val) })
}

func setHCLClusterAttr(src []byte, filename, name string, val cty.Value) ([]byte, error) {
	f, diags := hclwrite.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	for _, c := range f.Body().Blocks() {
		if c.Type() != "cluster" {
			continue
		}
		if val == cty.NilVal {
			c.Body().RemoveAttribute(name)
		} else {
			c.Body().SetAttributeValue(name, val)
		}
		return f.Bytes(), nil
	}
	return nil, fmt.Errorf("no cluster block in %s", filename)
}
