package specedit

import (
	"bytes"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// MapEdit sets or deletes one entry of a YAML mapping: the mapping at Path from the
// document's root (created, with the entry, when its last key is missing), or the
// mapping that holds the key written at AtLine:AtCol.
type MapEdit struct {
	Path          []string
	AtLine, AtCol int
	Key           string
	// Value is the entry's new value as YAML flow text; "" deletes the entry.
	Value string
}

// EditYAMLMap applies e, keeping the file's byte order mark and line endings
// (keepConventions).
func EditYAMLMap(src []byte, e MapEdit) ([]byte, error) {
	return keepConventions(src, func(src []byte) ([]byte, error) { return editYAMLMap(src, e) })
}

func editYAMLMap(src []byte, e MapEdit) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the document is not a mapping")
	}
	f := newYAMLFile(src)
	var m, mKey *yaml.Node // the mapping, and the key it is the value of
	if e.AtLine > 0 {
		m = holder(doc.Content[0], e.AtLine, e.AtCol)
		if m == nil {
			return nil, fmt.Errorf("no mapping key at %d:%d", e.AtLine, e.AtCol)
		}
	} else {
		m = doc.Content[0]
		for i, key := range e.Path {
			_, v := mapGet(m, key)
			if v == nil || v.Kind == yaml.ScalarNode && v.Tag == "!!null" {
				if e.Value == "" {
					return nil, ErrNoChange
				}
				value := "{" + scalar(e.Key) + ": " + e.Value + "}"
				for j := len(e.Path) - 1; j > i; j-- {
					value = "{" + scalar(e.Path[j]) + ": " + value + "}"
				}
				if v != nil { // `tags:` with nothing after it
					k, _ := mapGet(m, key)
					return f.replaceValue(k, v, value)
				}
				return f.insert(m, key, value)
			}
			if v.Kind != yaml.MappingNode {
				return nil, fmt.Errorf("%s is not a mapping", key)
			}
			mKey, _ = mapGet(m, key)
			m = v
		}
	}
	k, v := mapGet(m, e.Key)
	switch {
	case k == nil && e.Value == "":
		return nil, ErrNoChange
	case k == nil:
		return f.insert(m, scalar(e.Key), e.Value)
	case e.Value != "":
		return f.replaceValue(k, v, e.Value)
	}
	if len(m.Content) == 2 && m.Style&yaml.FlowStyle == 0 && mKey != nil {
		return f.replaceValue(mKey, m, "{}") // the only entry: an empty mapping
	}
	return f.deleteEntry(m, k, v)
}

// holder finds the mapping with a key written at line:col.
func holder(n *yaml.Node, line, col int) *yaml.Node {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Line == line && n.Content[i].Column == col {
				return n
			}
		}
	}
	for _, c := range n.Content {
		if h := holder(c, line, col); h != nil {
			return h
		}
	}
	return nil
}

// valueSpan is the byte span of a value written inline (flow or scalar).
func (f *yamlFile) valueSpan(v *yaml.Node) (int, int, error) {
	start := f.offset(v.Line, v.Column)
	switch {
	case v.Style&yaml.FlowStyle != 0 && (v.Kind == yaml.MappingNode || v.Kind == yaml.SequenceNode):
		end, err := f.closing(start)
		return start, end, err
	case v.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0:
		end, err := f.closing2(start)
		return start, end, err
	case v.Kind == yaml.ScalarNode && v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0:
		return start, start + len(v.Value), nil
	}
	return 0, 0, errors.New("a block value")
}

// replaceValue writes value (flow text) as k's value.
func (f *yamlFile) replaceValue(k, v *yaml.Node, value string) ([]byte, error) {
	var out bytes.Buffer
	if start, end, err := f.valueSpan(v); err == nil && !(v.Kind == yaml.ScalarNode && v.Tag == "!!null" && v.Value == "") {
		out.Write(f.src[:start])
		out.WriteString(value)
		out.Write(f.src[end:])
		return out.Bytes(), nil
	}
	// A block value (or nothing after the key): from the key's colon to the
	// value's last line.
	colon := f.offset(k.Line, k.Column) + len(k.Value)
	for colon < len(f.src) && f.src[colon] != ':' {
		colon++
	}
	end := f.lineEnd(k.Line)
	if !(v.Kind == yaml.ScalarNode && v.Tag == "!!null") {
		end = f.lineEnd(f.endLine(v))
	}
	out.Write(f.src[:colon+1])
	out.WriteString(" " + value)
	out.Write(f.src[end:])
	return out.Bytes(), nil
}

// deleteEntry removes k: v from mapping m.
func (f *yamlFile) deleteEntry(m, k, v *yaml.Node) ([]byte, error) {
	var out bytes.Buffer
	if m.Style&yaml.FlowStyle != 0 {
		start := f.offset(k.Line, k.Column)
		_, end, err := f.valueSpan(v)
		if err != nil {
			return nil, err
		}
		// Take the separator after the entry, or the one before it when it is last.
		if rest := bytes.TrimLeft(f.src[end:], " "); len(rest) > 0 && rest[0] == ',' {
			end = len(f.src) - len(rest) + 1
			for end < len(f.src) && f.src[end] == ' ' {
				end++
			}
		} else {
			for start > 0 && (f.src[start-1] == ' ' || f.src[start-1] == ',') {
				start--
			}
		}
		out.Write(f.src[:start])
		out.Write(f.src[end:])
		return out.Bytes(), nil
	}
	if len(m.Content) == 2 {
		return nil, errors.New("it is the mapping's only entry: delete the whole key by hand")
	}
	start := f.lines[k.Line-1]
	end := f.lineEnd(f.endLine(v))
	if end < len(f.src) {
		end++ // the newline
	}
	out.Write(f.src[:start])
	out.Write(f.src[end:])
	return out.Bytes(), nil
}
