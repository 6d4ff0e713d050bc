package loader

import (
	"fmt"
	"math/big"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// hclFunctions is the standard function library available in HCL documents (the cty
// stdlib, under the names Terraform users know).
var hclFunctions = map[string]function.Function{
	"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "chomp": stdlib.ChompFunc, "chunklist": stdlib.ChunklistFunc,
	"coalesce": stdlib.CoalesceFunc, "coalescelist": stdlib.CoalesceListFunc, "compact": stdlib.CompactFunc,
	"concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc, "csvdecode": stdlib.CSVDecodeFunc,
	"distinct": stdlib.DistinctFunc, "element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc,
	"floor": stdlib.FloorFunc, "format": stdlib.FormatFunc, "formatdate": stdlib.FormatDateFunc,
	"formatlist": stdlib.FormatListFunc, "indent": stdlib.IndentFunc, "index": stdlib.IndexFunc,
	"join": stdlib.JoinFunc, "jsondecode": stdlib.JSONDecodeFunc, "jsonencode": stdlib.JSONEncodeFunc,
	"keys": stdlib.KeysFunc, "length": stdlib.LengthFunc, "log": stdlib.LogFunc, "lookup": stdlib.LookupFunc,
	"lower": stdlib.LowerFunc, "max": stdlib.MaxFunc, "merge": stdlib.MergeFunc, "min": stdlib.MinFunc,
	"parseint": stdlib.ParseIntFunc, "pow": stdlib.PowFunc, "range": stdlib.RangeFunc, "regex": stdlib.RegexFunc,
	"regexall": stdlib.RegexAllFunc, "regex_replace": stdlib.RegexReplaceFunc, "replace": stdlib.ReplaceFunc,
	"reverse": stdlib.ReverseListFunc, "setintersection": stdlib.SetIntersectionFunc,
	"setproduct": stdlib.SetProductFunc, "setsubtract": stdlib.SetSubtractFunc, "setunion": stdlib.SetUnionFunc,
	"signum": stdlib.SignumFunc, "slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "split": stdlib.SplitFunc,
	"strlen": stdlib.StrlenFunc, "strrev": stdlib.ReverseFunc, "substr": stdlib.SubstrFunc, "title": stdlib.TitleFunc,
	"trim": stdlib.TrimFunc, "trimprefix": stdlib.TrimPrefixFunc, "trimspace": stdlib.TrimSpaceFunc,
	"trimsuffix": stdlib.TrimSuffixFunc, "upper": stdlib.UpperFunc, "values": stdlib.ValuesFunc,
	"zipmap":   stdlib.ZipmapFunc,
	"tostring": stdlib.MakeToFunc(cty.String), "tonumber": stdlib.MakeToFunc(cty.Number),
	"tobool": stdlib.MakeToFunc(cty.Bool), "tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
	"toset": stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)), "tomap": stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
}

// parseHCL parses an HCL native-syntax file.
func parseHCL(file string, src []byte) (*hclsyntax.Body, hcl.Diagnostics) {
	if d := checkHCLDepth(file, src); d != nil {
		return nil, hcl.Diagnostics{d}
	}
	f, diags := hclsyntax.ParseConfig(src, file, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, firstUnterminatedString(file, src, diags)
	}
	body := f.Body.(*hclsyntax.Body)
	boundForExprs(body)
	return body, diags
}

// hclContext evaluates the `locals` blocks of a file (locals may refer to each other
// in any order) and returns the evaluation context for the rest of it.
func hclContext(body *hclsyntax.Body) (*hcl.EvalContext, hcl.Diagnostics) {
	ctx := &hcl.EvalContext{Functions: boundedFunctions(hclFunctions), Variables: map[string]cty.Value{}}
	pending := map[string]*hclsyntax.Attribute{}
	var diags hcl.Diagnostics
	for _, b := range body.Blocks {
		if b.Type != "locals" {
			continue
		}
		for name, a := range b.Body.Attributes {
			if _, dup := pending[name]; dup {
				diags = append(diags, errorAt(a.NameRange, "local.%s is defined twice", name))
			}
			pending[name] = a
		}
	}
	locals := map[string]cty.Value{}
	for len(pending) > 0 {
		progress := false
		for _, name := range sortedKeys(pending) {
			a := pending[name]
			ready := true
			for _, tr := range a.Expr.Variables() {
				if tr.RootName() != "local" || len(tr) < 2 {
					continue
				}
				if attr, ok := tr[1].(hcl.TraverseAttr); ok {
					if _, waiting := pending[attr.Name]; waiting && attr.Name != name {
						ready = false
					}
				}
			}
			if !ready {
				continue
			}
			ctx.Variables["local"] = cty.ObjectVal(locals)
			v, d := a.Expr.Value(ctx)
			diags = append(diags, d...)
			locals[name] = v
			delete(pending, name)
			progress = true
		}
		if !progress {
			for _, name := range sortedKeys(pending) {
				diags = append(diags, errorAt(pending[name].NameRange, "local.%s depends on itself (a cycle among locals)", name))
			}
			break
		}
	}
	ctx.Variables["local"] = cty.ObjectVal(locals)
	return ctx, diags
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// sortedAttributes returns a body's attributes in source order.
func sortedAttributes(b *hclsyntax.Body) []*hclsyntax.Attribute {
	attrs := make([]*hclsyntax.Attribute, 0, len(b.Attributes))
	for _, a := range b.Attributes {
		attrs = append(attrs, a)
	}
	sort.Slice(attrs, func(i, j int) bool { return attrs[i].SrcRange.Start.Byte < attrs[j].SrcRange.Start.Byte })
	return attrs
}

// exprToValue evaluates an expression into a Value. Object and tuple literals are
// walked item by item so that keys keep their written order and every item its own
// range; anything else is evaluated and converted.
func exprToValue(expr hclsyntax.Expression, ctx *hcl.EvalContext) (*Value, hcl.Diagnostics) {
	switch e := expr.(type) {
	case *hclsyntax.ObjectConsExpr:
		out := NewMap(e.SrcRange)
		var diags hcl.Diagnostics
		for _, it := range e.Items {
			kv, d := it.KeyExpr.Value(ctx)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			if kv.IsNull() || !kv.IsKnown() || !kv.Type().Equals(cty.String) {
				diags = append(diags, errorAt(it.KeyExpr.Range(), "object keys must be strings"))
				continue
			}
			val, d := exprToValue(it.ValueExpr, ctx)
			diags = append(diags, d...)
			if val == nil {
				continue
			}
			key := kv.AsString()
			if out.Has(key) {
				diags = append(diags, errorAt(it.KeyExpr.Range(), "key %q is set twice", key))
				continue
			}
			out.Fields = append(out.Fields, Field{Key: key, KeyRange: it.KeyExpr.Range(), Value: val})
		}
		return out, diags
	case *hclsyntax.TupleConsExpr:
		out := &Value{Kind: KindList, Range: e.SrcRange, Items: make([]*Value, 0, len(e.Exprs))}
		var diags hcl.Diagnostics
		for _, x := range e.Exprs {
			val, d := exprToValue(x, ctx)
			diags = append(diags, d...)
			if val != nil {
				out.Items = append(out.Items, val)
			}
		}
		return out, diags
	}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return nil, diags
	}
	return ctyToValue(v, expr.Range())
}

// ctyToValue converts an evaluated cty value; object and map keys come out sorted.
func ctyToValue(v cty.Value, r hcl.Range) (*Value, hcl.Diagnostics) {
	if v.IsNull() {
		return &Value{Kind: KindNull, Range: r}, nil
	}
	if !v.IsWhollyKnown() {
		return nil, hcl.Diagnostics{errorAt(r, "the value is not known: it refers to something fuelsync does not define")}
	}
	v, _ = v.Unmark()
	t := v.Type()
	switch {
	case t == cty.String:
		return NewString(v.AsString(), r), nil
	case t == cty.Bool:
		b := v.True()
		return &Value{Kind: KindBool, Bool: b, Text: fmt.Sprint(b), Range: r}, nil
	case t == cty.Number:
		bf := v.AsBigFloat()
		if bf.IsInt() {
			if i, acc := bf.Int64(); acc == big.Exact {
				return &Value{Kind: KindInt, Int: i, Text: fmt.Sprint(i), Range: r}, nil
			}
		}
		f, _ := bf.Float64()
		return &Value{Kind: KindFloat, Float: f, Text: bf.Text('g', -1), Range: r}, nil
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		out := &Value{Kind: KindList, Range: r}
		var diags hcl.Diagnostics
		for it := v.ElementIterator(); it.Next(); {
			_, ev := it.Element()
			x, d := ctyToValue(ev, r)
			diags = append(diags, d...)
			if x != nil {
				out.Items = append(out.Items, x)
			}
		}
		return out, diags
	case t.IsMapType() || t.IsObjectType():
		out := NewMap(r)
		var diags hcl.Diagnostics
		for it := v.ElementIterator(); it.Next(); {
			k, ev := it.Element()
			x, d := ctyToValue(ev, r)
			diags = append(diags, d...)
			if x != nil {
				out.Fields = append(out.Fields, Field{Key: k.AsString(), KeyRange: r, Value: x})
			}
		}
		return out, diags
	}
	return nil, hcl.Diagnostics{errorAt(r, "values of type %s cannot be used here", t.FriendlyName())}
}

// attributesToValue turns a body's attributes into a mapping in source order.
func attributesToValue(b *hclsyntax.Body, ctx *hcl.EvalContext, skip ...string) (*Value, hcl.Diagnostics) {
	out := NewMap(b.SrcRange)
	var diags hcl.Diagnostics
outer:
	for _, a := range sortedAttributes(b) {
		for _, s := range skip {
			if a.Name == s {
				continue outer
			}
		}
		v, d := exprToValue(a.Expr, ctx)
		diags = append(diags, d...)
		if v != nil {
			out.Fields = append(out.Fields, Field{Key: a.Name, KeyRange: a.NameRange, Value: v})
		}
	}
	return out, diags
}

// DecodeHCL decodes an HCL file of plain attributes (and locals blocks), as
// fuelsync.hcl is written, into a mapping: the HCL twin of DecodeYAML for the
// configuration files of other packages (notify's --notify-config).
func DecodeHCL(file string, src []byte) (*Value, hcl.Diagnostics) {
	return decodeHCLAttributes(file, src)
}

// decodeHCLAttributes reads a file of plain attributes (fuelsync.hcl) as a mapping.
func decodeHCLAttributes(file string, src []byte) (*Value, hcl.Diagnostics) {
	body, diags := parseHCL(file, src)
	if body == nil {
		return nil, diags
	}
	ctx, d := hclContext(body)
	diags = append(diags, d...)
	for _, b := range body.Blocks {
		if b.Type != "locals" {
			diags = append(diags, errorAt(b.TypeRange, "unexpected block %q; %s holds attributes (and locals)", b.Type, file))
		}
	}
	v, d := attributesToValue(body, ctx)
	return v, append(diags, d...)
}

// clusterHCLToValue converts an HCL cluster spec into the data tree a YAML spec
// decodes to: `cluster "<name>" {...}` attributes become keys, `node "<name>" {...}`
// blocks (with for_each) become entries of `nodes`.
func clusterHCLToValue(file string, src []byte) (*Value, hcl.Diagnostics) {
	body, diags := parseHCL(file, src)
	if body == nil {
		return nil, diags
	}
	ctx, d := hclContext(body)
	diags = append(diags, d...)
	for _, a := range sortedAttributes(body) {
		diags = append(diags, errorAt(a.NameRange, "unexpected attribute %q outside the cluster block", a.Name))
	}
	var cluster *hclsyntax.Block
	for _, b := range body.Blocks {
		switch {
		case b.Type == "locals":
		case b.Type == "cluster" && cluster == nil:
			cluster = b
		case b.Type == "cluster":
			diags = append(diags, errorAt(b.TypeRange, "a cluster spec file holds one cluster block (the first is at line %d)", cluster.TypeRange.Start.Line))
		default:
			diags = append(diags, withDetail(errorAt(b.TypeRange, "unexpected block %q", b.Type), "A cluster spec has locals blocks and one cluster \"<name>\" block."))
		}
	}
	if cluster == nil {
		return nil, append(diags, errorAt(hcl.Range{Filename: file, Start: hcl.InitialPos, End: hcl.InitialPos}, "no cluster \"<name>\" block in %s", file))
	}
	if len(cluster.Labels) != 1 {
		return nil, append(diags, errorAt(cluster.TypeRange, "the cluster block takes one label, its name: cluster \"<name>\" { ... }"))
	}
	out, d := attributesToValue(cluster.Body, ctx)
	diags = append(diags, d...)
	out.Range = cluster.DefRange()
	out.Fields = append([]Field{{Key: "cluster", KeyRange: cluster.LabelRanges[0], Value: NewString(cluster.Labels[0], cluster.LabelRanges[0])}}, out.Fields...)
	if out.Has("nodes") {
		diags = append(diags, errorAt(where(out, "nodes"), "write nodes as node \"<name>\" { ... } blocks"))
	}
	nodes := &Value{Kind: KindMap, Range: cluster.DefRange()}
	seen := map[string]bool{}
	for _, b := range cluster.Body.Blocks {
		if b.Type != "node" {
			diags = append(diags, errorAt(b.TypeRange, "unexpected block %q in a cluster; blocks here are node \"<name>\" { ... }", b.Type))
			continue
		}
		fields, d := hclNodeBlock(b, ctx)
		diags = append(diags, d...)
		for _, f := range fields {
			if seen[f.Key] {
				nodes.Overridden = append(nodes.Overridden, f)
				continue
			}
			seen[f.Key] = true
			nodes.Fields = append(nodes.Fields, f)
		}
	}
	if len(nodes.Fields) > 0 {
		out.Fields = append(out.Fields, Field{Key: "nodes", KeyRange: nodes.Range, Value: nodes})
	}
	return out, diags
}

// hclNodeBlock converts one node block; with for_each it yields one node per element,
// named by its `name` attribute or "<label>-<each.key>".
func hclNodeBlock(b *hclsyntax.Block, ctx *hcl.EvalContext) ([]Field, hcl.Diagnostics) {
	if len(b.Labels) != 1 {
		return nil, hcl.Diagnostics{errorAt(b.TypeRange, "a node block takes one label, its name: node \"<name>\" { ... }")}
	}
	label, labelRange := b.Labels[0], b.LabelRanges[0]
	one := func(ctx *hcl.EvalContext, name string) (Field, hcl.Diagnostics) {
		v, diags := attributesToValue(b.Body, ctx, "for_each", "name")
		v.Range = b.DefRange()
		for _, tb := range b.Body.Blocks {
			if tb.Type != "tags" || len(tb.Labels) != 0 {
				diags = append(diags, errorAt(tb.TypeRange, "unexpected block %q in a node; the only block here is tags { assign = [...] unassign = [...] }", tb.Type))
				continue
			}
			if v.Has("tags") {
				diags = append(diags, errorAt(tb.TypeRange, "a node has one tags block"))
				continue
			}
			t, d := attributesToValue(tb.Body, ctx)
			diags = append(diags, d...)
			t.Range = tb.DefRange()
			v.Fields = append(v.Fields, Field{Key: "tags", KeyRange: tb.TypeRange, Value: t})
		}
		return Field{Key: name, KeyRange: labelRange, Value: v}, diags
	}
	fe, ok := b.Body.Attributes["for_each"]
	if !ok {
		if _, has := b.Body.Attributes["name"]; has {
			return nil, hcl.Diagnostics{errorAt(b.Body.Attributes["name"].NameRange, "name is only used with for_each; the block label is the node's name")}
		}
		f, d := one(ctx, label)
		return []Field{f}, d
	}
	coll, diags := fe.Expr.Value(ctx)
	if diags.HasErrors() {
		return nil, diags
	}
	if coll.IsNull() || !coll.IsWhollyKnown() || !coll.CanIterateElements() {
		return nil, append(diags, errorAt(fe.Expr.Range(), "for_each needs a list, set or map"))
	}
	var fields []Field
	for it := coll.ElementIterator(); it.Next(); {
		k, ev := it.Element()
		if coll.Type().IsListType() || coll.Type().IsTupleType() || coll.Type().IsSetType() {
			k = ev // a list behaves like a set: each.key is the element
		}
		ks, err := ctyKeyString(k)
		if err != "" {
			diags = append(diags, errorAt(fe.Expr.Range(), "for_each: %s", err))
			continue
		}
		child := ctx.NewChild()
		child.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(ks), "value": ev})}
		name := label + "-" + ks
		if na, has := b.Body.Attributes["name"]; has {
			nv, d := na.Expr.Value(child)
			diags = append(diags, d...)
			if d.HasErrors() || nv.IsNull() || !nv.Type().Equals(cty.String) {
				diags = append(diags, errorAt(na.Expr.Range(), "name must be a string"))
				continue
			}
			name = nv.AsString()
		}
		f, d := one(child, name)
		diags = append(diags, d...)
		fields = append(fields, f)
	}
	return fields, diags
}

func ctyKeyString(k cty.Value) (string, string) {
	switch {
	case k.IsNull() || !k.IsKnown():
		return "", "keys must be known strings or numbers"
	case k.Type() == cty.String:
		return k.AsString(), ""
	case k.Type() == cty.Number:
		return k.AsBigFloat().Text('f', -1), ""
	}
	return "", fmt.Sprintf("elements must be strings or numbers, not %s", k.Type().FriendlyName())
}
