package specedit

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// EditHCL applies e to an HCL cluster spec. current is the list as the loader
// evaluated it (an HCL value may be an expression, local.controller); the new list
// is written as a literal in place of the old expression. The file's byte order
// mark and line endings are kept (keepConventions).
//
// The edit is a splice at the byte ranges hclsyntax gives: the expression it
// replaces, or the lines it adds before a block's closing brace. Everything else
// — comments, alignment, blank lines, formatting the user chose — stays byte for
// byte, and the result is parsed again before it is returned.
func EditHCL(src []byte, filename string, e Edit, current []string) ([]byte, error) {
	return keepConventions(src, func(src []byte) ([]byte, error) { return editHCL(src, filename, e, current) })
}

func editHCL(src []byte, filename string, e Edit, current []string) ([]byte, error) {
	body, err := parseHCL(src, filename)
	if err != nil {
		return nil, err
	}
	var node *hclsyntax.Block
	for _, c := range body.Blocks {
		if c.Type != "cluster" {
			continue
		}
		for _, b := range c.Body.Blocks {
			if b.Type == "node" && len(b.Labels) == 1 && b.Labels[0] == e.Node {
				node = b
			}
		}
	}
	if node == nil {
		return nil, fmt.Errorf("no node block %q in the file (a node made by for_each cannot be edited one by one)", e.Node)
	}
	if node.Body.Attributes["for_each"] != nil {
		return nil, fmt.Errorf("node %s comes from a for_each block: edit the block itself", e.Node)
	}
	items := e.Set(slices.Clone(current))
	if slices.Equal(items, current) {
		return nil, ErrNoChange
	}
	vals := make([]cty.Value, len(items))
	for i, it := range items {
		vals[i] = cty.StringVal(it)
	}
	list := cty.ListValEmpty(cty.String)
	if len(vals) > 0 {
		list = cty.TupleVal(vals)
	}

	block := node
	keys := e.Path[:len(e.Path)-1]
	for i, key := range keys {
		var next *hclsyntax.Block
		for _, b := range block.Body.Blocks {
			if b.Type == key && len(b.Labels) == 0 {
				next = b
				break
			}
		}
		if next == nil {
			if len(items) == 0 {
				return nil, ErrNoChange
			}
			// The blocks of the rest of the path, new, with the attribute inside.
			return finish(src, filename, insertInBlock(src, block, func(indent, step string) string {
				return nestedBlocks(keys[i:], e.Path[len(e.Path)-1], list, indent, step)
			}))
		}
		block = next
	}
	name := e.Path[len(e.Path)-1]
	if a := block.Body.Attributes[name]; a != nil && len(items) == 0 && block != node {
		// An emptied list goes, with the comment on its line, which was
		// about what it held; and its block when nothing else is in it.
		if len(block.Body.Attributes) == 1 && len(block.Body.Blocks) == 0 {
			return finish(src, filename, cut(src, block.TypeRange.Start.Byte, block.CloseBraceRange.End.Byte))
		}
		return finish(src, filename, cut(src, a.SrcRange.Start.Byte, a.SrcRange.End.Byte))
	}
	return finish(src, filename, setAttr(src, block, name, list))
}

// cut removes src[start:end], with the rest of its last line (a comment) and
// its lines' indentation when nothing else is before it on its first line.
func cut(src []byte, start, end int) []byte {
	from := lineStart(src, start)
	if strings.TrimSpace(string(src[from:start])) != "" {
		return splice(src, start, end, "") // something else before it on its line
	}
	return splice(src, from, lineEnd(src, end), "")
}

// SetHCLClusterAttr sets attribute name of the cluster block to val (a literal in
// place of the old expression), or removes it when val is cty.NilVal. The file's
// byte order mark and line endings are kept (keepConventions).
func SetHCLClusterAttr(src []byte, filename, name string, val cty.Value) ([]byte, error) {
	return keepConventions(src, func(src []byte) ([]byte, error) { return setHCLClusterAttr(src, filename, name, val) })
}

func setHCLClusterAttr(src []byte, filename, name string, val cty.Value) ([]byte, error) {
	body, err := parseHCL(src, filename)
	if err != nil {
		return nil, err
	}
	for _, c := range body.Blocks {
		if c.Type != "cluster" {
			continue
		}
		if val == cty.NilVal {
			a := c.Body.Attributes[name]
			if a == nil {
				return src, nil
			}
			return finish(src, filename, cut(src, a.SrcRange.Start.Byte, a.SrcRange.End.Byte))
		}
		return finish(src, filename, setAttr(src, c, name, val))
	}
	return nil, fmt.Errorf("no cluster block in %s", filename)
}

// parseHCL parses src as the loader does.
func parseHCL(src []byte, filename string) (*hclsyntax.Body, error) {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	body, ok := f.Body.(*hclsyntax.Body)
	if !ok {
		return nil, fmt.Errorf("%s: not HCL native syntax", filename)
	}
	return body, nil
}

// finish checks that the edited text still parses: an edit never writes a file
// the loader would refuse.
func finish(src []byte, filename string, out []byte) ([]byte, error) {
	if bytes.Equal(out, src) {
		return nil, errors.New("the edit changed nothing")
	}
	if _, diags := hclsyntax.ParseConfig(out, filename, hcl.InitialPos); diags.HasErrors() {
		return nil, fmt.Errorf("the edit would leave %s unreadable (%s); edit it by hand", filename, diags.Error())
	}
	return out, nil
}

// setAttr replaces the expression of attribute name of block with the literal
// val, or adds the attribute at the end of the block (addAttr).
func setAttr(src []byte, block *hclsyntax.Block, name string, val cty.Value) []byte {
	if a := block.Body.Attributes[name]; a != nil {
		r := a.Expr.Range()
		indent := string(src[lineStart(src, a.SrcRange.Start.Byte):a.SrcRange.Start.Byte])
		if strings.TrimSpace(indent) != "" {
			indent = ""
		}
		return splice(src, r.Start.Byte, r.End.Byte, literal(val, indent, stepOf(src, block)))
	}
	return addAttr(src, block, name, val)
}

// addAttr adds name = val as the last line of block. Its equals sign lines up
// with those of the one-line attributes just above it when theirs line up (as
// hclwrite and terraform fmt align them); when the new name is the longest,
// theirs move to its column. A block written on one line is opened up.
func addAttr(src []byte, block *hclsyntax.Block, name string, val cty.Value) []byte {
	step := stepOf(src, block)
	outer := indentAt(src, block.TypeRange.Start.Byte)
	inner := outer + step
	key := attrName(name)
	lit := literal(val, inner, step)
	open, close := block.OpenBraceRange.End.Byte, block.CloseBraceRange.Start.Byte
	if block.OpenBraceRange.Start.Line == block.CloseBraceRange.Start.Line {
		// A one-line block holds one attribute at most.
		var b strings.Builder
		b.WriteString("\n")
		width := len(key)
		for _, a := range block.Body.Attributes {
			width = max(width, len(a.Name))
		}
		for _, a := range block.Body.Attributes {
			r := a.Expr.Range()
			b.WriteString(inner + pad(a.Name, width, strings.Contains(lit, "\n")) + " = " + string(src[r.Start.Byte:r.End.Byte]) + "\n")
		}
		b.WriteString(inner + pad(key, width, strings.Contains(lit, "\n")) + " = " + lit + "\n" + outer)
		return splice(src, open, close, b.String())
	}
	at := lineStart(src, close)
	if strings.TrimSpace(string(src[at:close])) != "" {
		// Something before the brace on its line: the new line goes after it.
		return splice(src, close, close, "\n"+inner+key+" = "+lit+"\n"+outer)
	}
	line := inner + key + " = " + lit + "\n"
	chain := chainAbove(src, block, at)
	if len(chain) == 0 || strings.Contains(lit, "\n") {
		return splice(src, at, at, line)
	}
	col := eqColumn(src, chain[0])
	for _, a := range chain[1:] {
		if eqColumn(src, a) != col {
			return splice(src, at, at, line) // not aligned: neither is the new line
		}
	}
	target := max(col, len(inner)+len(key)+1)
	out := splice(src, at, at, inner+key+strings.Repeat(" ", target-len(inner)-len(key))+"= "+lit+"\n")
	if target > col {
		// chain is in the order of the lines, last first: splice from the end.
		for _, a := range chain {
			nameEnd := a.NameRange.End.Byte - lineStart(src, a.NameRange.End.Byte)
			out = splice(out, a.NameRange.End.Byte, a.EqualsRange.Start.Byte, strings.Repeat(" ", target-nameEnd))
		}
	}
	return out
}

// chainAbove are the attributes of block on the lines just above offset at (a
// line's start), each on one line, up to the first line that is not one: the
// lines hclwrite aligns with a line added at at. The last line comes first.
func chainAbove(src []byte, block *hclsyntax.Block, at int) []*hclsyntax.Attribute {
	byLine := map[int]*hclsyntax.Attribute{}
	for _, a := range block.Body.Attributes {
		if a.SrcRange.Start.Line == a.SrcRange.End.Line {
			byLine[lineStart(src, a.SrcRange.Start.Byte)] = a
		}
	}
	var chain []*hclsyntax.Attribute
	for at > 0 {
		ls := lineStart(src, at-1)
		a := byLine[ls]
		if a == nil || strings.TrimSpace(string(src[ls:a.SrcRange.Start.Byte])) != "" {
			break
		}
		chain = append(chain, a)
		at = ls
	}
	return chain
}

// eqColumn is the offset of a's equals sign in its line.
func eqColumn(src []byte, a *hclsyntax.Attribute) int {
	return a.EqualsRange.Start.Byte - lineStart(src, a.EqualsRange.Start.Byte)
}

// pad pads name to width unless the value is on several lines (which hclwrite
// does not align).
func pad(name string, width int, multiline bool) string {
	if multiline {
		return name
	}
	return name + strings.Repeat(" ", width-len(name))
}

// insertInBlock adds the lines text(indent, step) gives before block's closing
// brace; indent is the indentation of the block's content, step one level's. A
// block written on one line is opened up first.
func insertInBlock(src []byte, block *hclsyntax.Block, text func(indent, step string) string) []byte {
	step := stepOf(src, block)
	outer := indentAt(src, block.TypeRange.Start.Byte)
	inner := outer + step
	open, close := block.OpenBraceRange.End.Byte, block.CloseBraceRange.Start.Byte
	if block.OpenBraceRange.Start.Line == block.CloseBraceRange.Start.Line {
		var b strings.Builder
		b.WriteString("\n")
		if inside := strings.TrimSpace(string(src[open:close])); inside != "" {
			b.WriteString(inner + inside + "\n")
		}
		b.WriteString(text(inner, step))
		b.WriteString(outer)
		return splice(src, open, close, b.String())
	}
	at := lineStart(src, close)
	if strings.TrimSpace(string(src[at:close])) != "" {
		// Something before the brace on its line: the new lines go after it.
		return splice(src, close, close, "\n"+text(inner, step)+outer)
	}
	return splice(src, at, at, text(inner, step))
}

// nestedBlocks writes blocks keys[0] { keys[1] { … name = val } }.
func nestedBlocks(keys []string, name string, val cty.Value, indent, step string) string {
	if len(keys) == 0 {
		return indent + attrName(name) + " = " + literal(val, indent, step) + "\n"
	}
	return indent + keys[0] + " {\n" + nestedBlocks(keys[1:], name, val, indent+step, step) + indent + "}\n"
}

// stepOf is one level of indentation as the file writes it: the difference
// between block's own indentation and its first item's, two spaces when that
// says nothing.
func stepOf(src []byte, block *hclsyntax.Block) string {
	outer := indentAt(src, block.TypeRange.Start.Byte)
	first := -1
	for _, a := range block.Body.Attributes {
		if first < 0 || a.SrcRange.Start.Byte < first {
			first = a.SrcRange.Start.Byte
		}
	}
	for _, b := range block.Body.Blocks {
		if first < 0 || b.TypeRange.Start.Byte < first {
			first = b.TypeRange.Start.Byte
		}
	}
	if first >= 0 && lineStart(src, first) != lineStart(src, block.TypeRange.Start.Byte) {
		if inner := indentAt(src, first); len(inner) > len(outer) && strings.HasPrefix(inner, outer) {
			return inner[len(outer):]
		}
	}
	return "  "
}

// indentAt is the whitespace that starts the line of offset.
func indentAt(src []byte, offset int) string {
	start := lineStart(src, offset)
	end := start
	for end < len(src) && (src[end] == ' ' || src[end] == '\t') {
		end++
	}
	return string(src[start:end])
}

func lineStart(src []byte, offset int) int {
	return bytes.LastIndexByte(src[:offset], '\n') + 1
}

// lineEnd is the offset just past the line break of the line of offset (the end
// of src without one).
func lineEnd(src []byte, offset int) int {
	if i := bytes.IndexByte(src[offset:], '\n'); i >= 0 {
		return offset + i + 1
	}
	return len(src)
}

func splice(src []byte, start, end int, text string) []byte {
	out := make([]byte, 0, len(src)-(end-start)+len(text))
	out = append(out, src[:start]...)
	out = append(out, text...)
	return append(out, src[end:]...)
}

// attrName is name as an object key or attribute name: an identifier as it is,
// anything else quoted.
func attrName(name string) string {
	if hclsyntax.ValidIdentifier(name) {
		return name
	}
	return QuoteHCL(name)
}

// literal writes val as an HCL literal, as hclwrite formats one: lists on one
// line, objects one attribute a line with their equals signs aligned; indent is
// the indentation of the line val starts on.
func literal(val cty.Value, indent, step string) string {
	switch {
	case val.IsNull():
		return "null"
	case !val.IsKnown():
		return "null"
	}
	ty := val.Type()
	switch {
	case ty == cty.String:
		return QuoteHCL(val.AsString())
	case ty == cty.Bool:
		if val.True() {
			return "true"
		}
		return "false"
	case ty == cty.Number:
		return val.AsBigFloat().Text('f', -1)
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType():
		var parts []string
		for it := val.ElementIterator(); it.Next(); {
			_, v := it.Element()
			parts = append(parts, literal(v, indent, step))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case ty.IsMapType() || ty.IsObjectType():
		if val.LengthInt() == 0 {
			return "{}"
		}
		type kv struct{ k, v string }
		var items []kv
		for it := val.ElementIterator(); it.Next(); {
			k, v := it.Element()
			items = append(items, kv{attrName(k.AsString()), literal(v, indent+step, step)})
		}
		// Runs of one-line items align their equals signs; an item on several
		// lines ends a run and is not aligned (hclwrite's rule).
		var b strings.Builder
		b.WriteString("{\n")
		for i := 0; i < len(items); {
			j, width := i, 0
			for j < len(items) && !strings.Contains(items[j].v, "\n") {
				width = max(width, len(items[j].k))
				j++
			}
			for _, it := range items[i:j] {
				b.WriteString(indent + step + pad(it.k, width, false) + " = " + it.v + "\n")
			}
			if j < len(items) {
				b.WriteString(indent + step + items[j].k + " = " + items[j].v + "\n")
				j++
			}
			i = j
		}
		b.WriteString(indent + "}")
		return b.String()
	}
	return "null"
}

// QuoteHCL writes s as an HCL quoted string: \", \\, \n, \r, \t and \uNNNN
// for other control characters (the escapes HCL has), and the template
// sequences ${ and %{ doubled so that they stay text.
func QuoteHCL(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '$', '%':
			b.WriteRune(r)
			if i+1 < len(s) && s[i+1] == '{' {
				b.WriteRune(r)
			}
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
