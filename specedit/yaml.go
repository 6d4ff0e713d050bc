// Package specedit edits cluster specs in place (the tag and role operations of the
// CLI): a node's roles and its tags' assign and unassign lists. YAML is edited as
// text at the positions yaml.v3's node API gives, and HCL as text at the byte
// ranges hclsyntax gives, so that everything the edit does not touch — comments,
// key order, formatting — stays byte for byte.
package specedit

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/loader"
)

// Edit is one change of a node's lists: Path is ["roles"], ["tags", "assign"] or
// ["tags", "unassign"]; Set computes the new list from the current one (nil when
// the key is absent).
type Edit struct {
	Node string
	Path []string
	Set  func(current []string) []string
}

// ErrNoChange says an edit leaves the file as it is.
var ErrNoChange = errors.New("nothing to change")

// yamlFile is a YAML document being edited.
type yamlFile struct {
	src   []byte
	lines []int // byte offset of each line's start
}

func newYAMLFile(src []byte) *yamlFile {
	f := &yamlFile{src: src, lines: []int{0}}
	for i, c := range src {
		if c == '\n' {
			f.lines = append(f.lines, i+1)
		}
	}
	return f
}

// offset is the byte offset of yaml.v3's 1-based line and column (in runes).
func (f *yamlFile) offset(line, col int) int {
	off := f.lines[line-1]
	for range col - 1 {
		_, size := utf8.DecodeRune(f.src[off:])
		off += size
	}
	return off
}

func (f *yamlFile) lineEnd(line int) int {
	if line < len(f.lines) {
		return f.lines[line] - 1
	}
	return len(f.src)
}

// closing returns the offset just past the flow collection starting at off
// ('[' or '{'), skipping quoted strings.
func (f *yamlFile) closing(off int) (int, error) {
	depth := 0
	for i := off; i < len(f.src); i++ {
		switch c := f.src[i]; c {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return i + 1, nil
			}
		case '"', '\'':
			for i++; i < len(f.src) && f.src[i] != c; i++ {
				if c == '"' && f.src[i] == '\\' {
					i++
				}
			}
		case '#':
			if i > 0 && (f.src[i-1] == ' ' || f.src[i-1] == '\t') {
				for i < len(f.src) && f.src[i] != '\n' {
					i++
				}
			}
		}
	}
	return 0, fmt.Errorf("unterminated flow collection")
}

// endLine is the last line of node n's text.
func (f *yamlFile) endLine(n *yaml.Node) int {
	if n.Style&yaml.FlowStyle != 0 && (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) {
		end, err := f.closing(f.offset(n.Line, n.Column))
		if err == nil {
			return bytes.Count(f.src[:end], []byte("\n")) + 1
		}
	}
	if len(n.Content) > 0 {
		return f.endLine(n.Content[len(n.Content)-1])
	}
	if n.Kind == yaml.ScalarNode && (n.Style&(yaml.LiteralStyle|yaml.FoldedStyle)) != 0 {
		return n.Line + strings.Count(strings.TrimRight(n.Value, "\n"), "\n") + 1
	}
	return n.Line
}

// flowList writes items as a YAML flow sequence.
func flowList(items []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(scalar(it))
	}
	b.WriteByte(']')
	return b.String()
}

// scalar is s as a YAML scalar (loader.FlowScalar).
var scalar = loader.FlowScalar

func mapGet(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

func strs(n *yaml.Node) []string {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		if n.Tag == "!!null" {
			return nil
		}
		return []string{n.Value}
	}
	var out []string
	for _, c := range n.Content {
		out = append(out, c.Value)
	}
	return out
}

// EditYAML applies e to a YAML cluster spec, keeping the file's byte order mark and
// line endings (keepConventions).
func EditYAML(src []byte, e Edit) ([]byte, error) {
	return keepConventions(src, func(src []byte) ([]byte, error) { return editYAML(src, e) })
}

func editYAML(src []byte, e Edit) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 {
		return nil, errors.New("the file is empty")
	}
	_, nodes := mapGet(doc.Content[0], "nodes")
	_, node := mapGet(nodes, e.Node)
	if node == nil {
		return nil, fmt.Errorf("no node %q in the file", e.Node)
	}
	if node.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("node %s is not a mapping", e.Node)
	}
	f := newYAMLFile(src)
	// Walk the path; the first missing key is inserted with the rest as a value.
	parent := node
	var parentKey *yaml.Node // parent's key in node (tags), nil for node itself
	for i, key := range e.Path {
		k, v := mapGet(parent, key)
		if k == nil {
			items := e.Set(nil)
			if len(items) == 0 {
				return nil, ErrNoChange
			}
			value := flowList(items)
			for j := len(e.Path) - 1; j > i; j-- {
				value = "{" + e.Path[j] + ": " + value + "}"
			}
			return f.insert(parent, key, value)
		}
		if i < len(e.Path)-1 {
			if v.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("node %s: %s is not a mapping", e.Node, strings.Join(e.Path[:i+1], "."))
			}
			parent, parentKey = v, k
			continue
		}
		cur := strs(v)
		items := e.Set(slices.Clone(cur))
		if slices.Equal(items, cur) {
			return nil, ErrNoChange
		}
		if len(items) == 0 && parentKey != nil {
			return f.deleteEmptied(node, parentKey, parent, k, v)
		}
		return f.replace(k, v, items)
	}
	return nil, errors.New("empty path")
}

// insert adds key: value to mapping m.
func (f *yamlFile) insert(m *yaml.Node, key, value string) ([]byte, error) {
	var out bytes.Buffer
	if m.Style&yaml.FlowStyle != 0 {
		end, err := f.closing(f.offset(m.Line, m.Column))
		if err != nil {
			return nil, err
		}
		sep := ", "
		if len(m.Content) == 0 {
			sep = ""
		}
		// Before the closing brace, after any spaces before it.
		at := end - 1
		for at > 0 && f.src[at-1] == ' ' {
			at--
		}
		out.Write(f.src[:at])
		out.WriteString(sep + key + ": " + value)
		out.Write(f.src[at:])
		return out.Bytes(), nil
	}
	if len(m.Content) == 0 {
		return nil, errors.New("cannot add to an empty block mapping")
	}
	first := m.Content[0]
	indent := string(f.src[f.lines[first.Line-1]:f.offset(first.Line, first.Column)])
	if strings.TrimLeft(indent, " ") != "" {
		indent = strings.Repeat(" ", first.Column-1)
	}
	at := f.lineEnd(f.endLine(m.Content[len(m.Content)-1]))
	out.Write(f.src[:at])
	if at == len(f.src) && (at == 0 || f.src[at-1] != '\n') {
		out.WriteString("\n" + indent + key + ": " + value + "\n")
		return out.Bytes(), nil
	}
	out.WriteString("\n" + indent + key + ": " + value)
	out.Write(f.src[at:])
	return out.Bytes(), nil
}

// replace writes items as the value v of key k, in v's style.
func (f *yamlFile) replace(k, v *yaml.Node, items []string) ([]byte, error) {
	var out bytes.Buffer
	switch {
	case v.Kind == yaml.SequenceNode && v.Style&yaml.FlowStyle != 0, v.Kind == yaml.ScalarNode && v.Tag != "!!null":
		start := f.offset(v.Line, v.Column)
		end := start
		if v.Kind == yaml.SequenceNode {
			var err error
			if end, err = f.closing(start); err != nil {
				return nil, err
			}
		} else {
			end = start + len(v.Value)
			if v.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
				if end, err := f.closing2(start); err == nil {
					out.Write(f.src[:start])
					out.WriteString(flowList(items))
					out.Write(f.src[end:])
					return out.Bytes(), nil
				}
			}
		}
		out.Write(f.src[:start])
		out.WriteString(flowList(items))
		out.Write(f.src[end:])
	case v.Kind == yaml.SequenceNode && len(v.Content) > 0 && len(items) > 0:
		// A block sequence: rewrite its item lines with the first item's prefix.
		first := v.Content[0]
		prefix := string(f.src[f.lines[first.Line-1]:f.offset(first.Line, first.Column)])
		startOff := f.lines[first.Line-1]
		endOff := f.lineEnd(f.endLine(v))
		out.Write(f.src[:startOff])
		for i, it := range items {
			if i > 0 {
				out.WriteByte('\n')
			}
			out.WriteString(prefix + scalar(it))
		}
		out.Write(f.src[endOff:])
	default:
		// null, or a block sequence emptied: the value after the key, on its line.
		start := f.offset(k.Line, k.Column) + len(k.Value)
		for start < len(f.src) && f.src[start] != ':' {
			start++
		}
		endOff := f.lineEnd(f.endLine(v))
		if v.Tag == "!!null" {
			endOff = f.lineEnd(k.Line)
		}
		out.Write(f.src[:start+1])
		out.WriteString(" " + flowList(items))
		out.Write(f.src[endOff:])
	}
	return out.Bytes(), nil
}

// deleteEmptied removes the entry k: v of mapping m (tags), whose list an
// edit emptied, and m itself from node when nothing else is in it: an empty
// list says nothing, and the comment on its line was about what it held.
func (f *yamlFile) deleteEmptied(node, mKey, m, k, v *yaml.Node) ([]byte, error) {
	if len(m.Content) == 2 {
		if out, err := f.deleteEntry(node, mKey, m); err == nil {
			return out, nil
		}
	} else if out, err := f.deleteEntry(m, k, v); err == nil {
		return out, nil
	}
	return f.replace(k, v, nil) // a layout deleteEntry does not take: keep it, emptied
}

// closing2 returns the offset past the quoted scalar starting at off.
func (f *yamlFile) closing2(off int) (int, error) {
	q := f.src[off]
	for i := off + 1; i < len(f.src); i++ {
		if q == '"' && f.src[i] == '\\' {
			i++
			continue
		}
		if f.src[i] == q {
			if q == '\'' && i+1 < len(f.src) && f.src[i+1] == '\'' {
				i++
				continue
			}
			return i + 1, nil
		}
	}
	return 0, errors.New("unterminated quoted scalar")
}
