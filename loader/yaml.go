package loader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	yaml "go.yaml.in/yaml/v3"
)

// maxAliasExpansion bounds how many nodes a YAML document may expand to through
// aliases, relative to the nodes it really contains: a "billion laughs" document is
// an error, not an out-of-memory crash. Real Fuel data re-uses anchors a handful of
// times; the fixture expands by less than 2x.
const (
	aliasExpansionFloor = 100_000
	aliasExpansionRatio = 20
)

// lineIndex maps 1-based line and column (counted in characters, as libyaml does)
// to byte offsets.
type lineIndex struct {
	src    []byte
	starts []int
	// ascii[i] reports whether line i+1 is pure ASCII, so that a column is a byte
	// offset there (almost every line of real data).
	ascii []bool
}

func newLineIndex(src []byte) *lineIndex {
	n := bytes.Count(src, []byte{'\n'}) + 1
	li := &lineIndex{src: src, starts: make([]int, 1, n), ascii: make([]bool, 0, n)}
	ascii := true
	for i, b := range src {
		switch {
		case b == '\n':
			li.starts = append(li.starts, i+1)
			li.ascii = append(li.ascii, ascii)
			ascii = true
		case b >= utf8.RuneSelf:
			ascii = false
		}
	}
	li.ascii = append(li.ascii, ascii)
	return li
}

// pos returns the hcl.Pos of a 1-based line and character column.
func (li *lineIndex) pos(line, col int) hcl.Pos {
	if line < 1 {
		line = 1
	}
	if line > len(li.starts) {
		line = len(li.starts)
	}
	if col < 1 {
		col = 1
	}
	off := li.starts[line-1]
	end := li.lineEnd(line)
	if li.ascii[line-1] {
		return hcl.Pos{Line: line, Column: col, Byte: min(off+col-1, end)}
	}
	for c := 1; c < col && off < end; c++ {
		_, size := utf8.DecodeRune(li.src[off:end])
		off += size
	}
	return hcl.Pos{Line: line, Column: col, Byte: off}
}

// lineEnd returns the byte offset of the end of line (before its newline).
func (li *lineIndex) lineEnd(line int) int {
	if line < len(li.starts) {
		e := li.starts[line] - 1
		if e > 0 && li.src[e-1] == '\r' {
			e--
		}
		return e
	}
	return len(li.src)
}

// span returns the range starting at (line, col) covering width characters, clamped
// to the end of that line; width <= 0 means "to the end of the line".
func (li *lineIndex) span(filename string, line, col, width int) hcl.Range {
	start := li.pos(line, col)
	end := start
	lineEnd := li.lineEnd(start.Line)
	if li.ascii[start.Line-1] && width > 0 && start.Byte+width <= lineEnd {
		end.Byte += width
		end.Column += width
		return hcl.Range{Filename: filename, Start: start, End: end}
	}
	for n := 0; (width <= 0 || n < width) && end.Byte < lineEnd; n++ {
		_, size := utf8.DecodeRune(li.src[end.Byte:lineEnd])
		end.Byte += size
		end.Column++
	}
	if end.Byte == start.Byte && width != 0 {
		// An empty range still marks one column, so a snippet shows where.
		end.Column++
	}
	return hcl.Range{Filename: filename, Start: start, End: end}
}

// yamlParserErrors are the messages of libyaml's parser (parserc.go), which yaml.v3
// numbers from 0; scanner errors are numbered from 1.
var yamlParserErrors = []string{"did not find expected", "found duplicate %", "found incompatible YAML document", "found undefined tag handle"}

var yamlErrLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): (.*)$`) })

// DecodeYAML decodes one YAML (or JSON) document into a Value tree. An empty file
// decodes to null. Duplicate keys keep the last value and warn; `!!pairs` becomes a
// list of [key, value] lists; `<<` merge keys are honoured; alias expansion is
// bounded. A file with several documents uses the first and warns.
func DecodeYAML(filename string, src []byte) (*Value, hcl.Diagnostics) {
	li := newLineIndex(src)
	dec := yaml.NewDecoder(bytes.NewReader(src))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return &Value{Kind: KindNull, Range: li.span(filename, 1, 1, 0)}, nil
		}
		return nil, hcl.Diagnostics{yamlSyntaxDiag(filename, li, err)}
	}
	d := &yamlDecoder{file: filename, li: li, anchors: map[*yaml.Node]*Value{}, sizes: map[*yaml.Node]int{}}
	v := d.value(&doc)
	if d.expanded > aliasExpansionFloor && d.expanded > aliasExpansionRatio*d.physical {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("YAML aliases expand to %d nodes (the file has %d): refusing to expand it", d.expanded, d.physical),
			Detail:   "Anchors and aliases that nest and repeat grow exponentially (a \"billion laughs\" document). Write the data out, or re-use anchors less deeply.",
			Subject:  rangePtr(li.span(filename, 1, 1, 0)),
		}}
	}
	var next yaml.Node
	if err := dec.Decode(&next); err == nil {
		d.diags = append(d.diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "the file holds several YAML documents; only the first is read",
			Subject:  rangePtr(li.span(filename, next.Line, next.Column, 3)),
		})
	} else if !errors.Is(err, io.EOF) {
		d.diags = append(d.diags, yamlSyntaxDiag(filename, li, err))
	}
	return v, d.diags
}

func yamlSyntaxDiag(filename string, li *lineIndex, err error) *hcl.Diagnostic {
	msg := err.Error()
	line := 1
	if m := yamlErrLine().FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
		// yaml.v3 reports parser errors (as opposed to scanner errors) with a 0-based
		// line: the start of the construct being parsed.
		for _, p := range yamlParserErrors {
			if strings.HasPrefix(msg, p) {
				line++
				break
			}
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
		if l, col, width, ok := locateYAMLProblem(li.src, msg); ok {
			return &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "YAML syntax error: " + msg,
				Subject:  rangePtr(li.span(filename, l, col, width)),
			}
		}
	}
	line = yamlProblemLine(li, msg, line)
	summary, detail, subject := yamlHint(filename, li, line, msg)
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: &subject}
}

var reUnknownAnchor = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^unknown anchor '(.*)' referenced$`) })

// yamlPrintable is libyaml's is_printable: what a YAML stream may contain.
func yamlPrintable(r rune) bool {
	return r == 0x09 || r == 0x0a || r == 0x0d || (r >= 0x20 && r <= 0x7e) || r == 0x85 ||
		(r >= 0xa0 && r <= 0xd7ff) || (r >= 0xe000 && r <= 0xfffd) || (r >= 0x10000 && r <= 0x10ffff)
}

// locateYAMLProblem finds the place of the errors yaml.v3 reports without a line:
// reader errors (bad UTF-8, control characters) and unknown aliases. It returns a
// 1-based line and character column, and the width to mark.
func locateYAMLProblem(src []byte, msg string) (line, col, width int, ok bool) {
	off := -1
	width = 1
	switch {
	case strings.Contains(msg, "UTF-8"):
		for i := 0; i < len(src); {
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size <= 1 {
				off = i
				break
			}
			i += size
		}
	case msg == "control characters are not allowed":
		for i := 0; i < len(src); {
			r, size := utf8.DecodeRune(src[i:])
			if !yamlPrintable(r) && !(i == 0 && r == 0xfeff) {
				off = i
				break
			}
			i += size
		}
	default:
		m := reUnknownAnchor().FindStringSubmatch(msg)
		if m == nil {
			return 0, 0, 0, false
		}
		re := regexp.MustCompile(`(?m)(?:^|[\s\[{,:])(\*` + regexp.QuoteMeta(m[1]) + `)(?:$|[\s\]},])`)
		if loc := re.FindSubmatchIndex(src); loc != nil {
			off = loc[2]
			width = utf8.RuneCountInString(m[1]) + 1
		}
	}
	if off < 0 {
		return 0, 0, 0, false
	}
	start := bytes.LastIndexByte(src[:off], '\n') + 1
	return 1 + bytes.Count(src[:off], []byte{'\n'}), 1 + utf8.RuneCount(src[start:off]), width, true
}

type yamlDecoder struct {
	file     string
	li       *lineIndex
	anchors  map[*yaml.Node]*Value
	sizes    map[*yaml.Node]int
	physical int // nodes written in the file
	expanded int // nodes after expanding aliases
	diags    hcl.Diagnostics
}

func (d *yamlDecoder) rng(n *yaml.Node, width int) hcl.Range {
	return d.li.span(d.file, n.Line, n.Column, width)
}

func (d *yamlDecoder) errorf(n *yaml.Node, format string, args ...any) {
	d.diags = append(d.diags, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf(format, args...),
		Subject:  rangePtr(d.rng(n, 1)),
	})
}

// treeSize counts the nodes under n with aliases expanded, memoised per node so that
// counting itself stays linear.
func (d *yamlDecoder) treeSize(n *yaml.Node) int {
	if s, ok := d.sizes[n]; ok {
		return s
	}
	d.sizes[n] = 1 // guards against a (malformed) recursive alias
	s := 1
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		s = d.treeSize(n.Alias)
	}
	for _, c := range n.Content {
		s += d.treeSize(c)
		if s > math.MaxInt32 {
			break
		}
	}
	d.sizes[n] = s
	return s
}

func (d *yamlDecoder) value(n *yaml.Node) *Value {
	d.physical++
	d.expanded++
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return &Value{Kind: KindNull, Range: d.rng(n, 0)}
		}
		return d.value(n.Content[0])
	case yaml.AliasNode:
		if n.Alias == nil {
			d.errorf(n, "unknown YAML alias *%s", n.Value)
			return &Value{Kind: KindNull, Range: d.rng(n, 0)}
		}
		d.expanded += d.treeSize(n.Alias) - 1
		if v, ok := d.anchors[n.Alias]; ok {
			return v
		}
		d.errorf(n, "YAML alias *%s refers to its own anchor", n.Value)
		return &Value{Kind: KindNull, Range: d.rng(n, 0)}
	}
	var v *Value
	switch n.Kind {
	case yaml.ScalarNode:
		v = d.scalar(n)
	case yaml.SequenceNode:
		v = &Value{Kind: KindList, Range: d.rng(n, 1)}
		v.Items = make([]*Value, 0, len(n.Content))
		for _, c := range n.Content {
			v.Items = append(v.Items, d.value(c))
		}
		if n.ShortTag() == "!!pairs" || n.ShortTag() == "!!omap" {
			d.pairs(n, v)
		}
	case yaml.MappingNode:
		v = &Value{Kind: KindMap, Range: d.rng(n, 1)}
		d.mapping(n, v)
	default:
		v = &Value{Kind: KindNull, Range: d.rng(n, 0)}
	}
	// An anchor becomes visible to aliases only once its node is complete, so an
	// alias inside its own anchor is an error rather than a cyclic tree.
	if n.Anchor != "" {
		d.anchors[n] = v
	}
	return v
}

// pairs turns a list of single-key mappings (YAML's !!pairs) into a list of
// [key, value] lists, keeping the order.
func (d *yamlDecoder) pairs(n *yaml.Node, v *Value) {
	v.Tag = "!!pairs"
	for i, it := range v.Items {
		if it.Kind != KindMap || len(it.Fields) != 1 {
			d.errorf(n.Content[i], "each item of a !!pairs list must be a mapping with one key")
			continue
		}
		f := it.Fields[0]
		v.Items[i] = &Value{Kind: KindList, Range: it.Range, Items: []*Value{NewString(f.Key, f.KeyRange), f.Value}}
	}
}

func (d *yamlDecoder) mapping(n *yaml.Node, v *Value) {
	v.Fields = make([]Field, 0, len(n.Content)/2)
	index := make(map[string]int, len(n.Content)/2)
	var merges []*Value
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if kn.Kind == yaml.AliasNode && kn.Alias != nil {
			kn = kn.Alias
		}
		if kn.Kind != yaml.ScalarNode {
			d.errorf(kn, "mapping keys must be scalars, not a %s", nodeKindName(kn))
			continue
		}
		if kn.ShortTag() == "!!merge" {
			merges = append(merges, d.value(vn))
			continue
		}
		d.physical++
		d.expanded++
		key := kn.Value
		f := Field{Key: key, KeyRange: d.rng(kn, utf8.RuneCountInString(key)), Value: d.value(vn)}
		if j, dup := index[key]; dup {
			first := v.Fields[j].KeyRange
			d.diags = append(d.diags, &hcl.Diagnostic{
				Severity: hcl.DiagWarning,
				Summary:  fmt.Sprintf(duplicateKeySummary, key, first.Start.Line),
				Detail:   "PyYAML, which Fuel used, keeps the last value of a repeated key; so does fuelsync. Remove one of them.",
				Subject:  rangePtr(f.KeyRange),
			})
			v.Overridden = append(v.Overridden, v.Fields[j])
			v.Fields[j] = f
			continue
		}
		index[key] = len(v.Fields)
		v.Fields = append(v.Fields, f)
	}
	// `<<: *base` and `<<: [*a, *b]`: keys not written here come from the merged
	// mappings, earlier ones first.
	for _, m := range merges {
		srcs := []*Value{m}
		if m.Kind == KindList {
			srcs = m.Items
		}
		for _, s := range srcs {
			if s.Kind != KindMap {
				d.diags = append(d.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "a YAML merge key (<<) needs a mapping or a list of mappings", Subject: rangePtr(s.Range)})
				continue
			}
			for _, f := range s.Fields {
				if _, ok := index[f.Key]; !ok {
					index[f.Key] = len(v.Fields)
					v.Fields = append(v.Fields, f)
				}
			}
		}
	}
}

// duplicateKeySummary is the decoder's warning about a key written twice. A
// checker that reports a repeated key as an error of its own (a node defined
// twice) drops this warning with dropDuplicateKeyWarnings, so the user does not
// read both "an error" and "the last one wins".
const duplicateKeySummary = "duplicate key %q (first at line %d): the last one wins"

// dropDuplicateKeyWarnings returns diags without the decoder's duplicate-key
// warnings at the given key ranges. diags itself is not modified (it may be
// shared through the cache).
func dropDuplicateKeyWarnings(diags hcl.Diagnostics, at []hcl.Range) hcl.Diagnostics {
	if len(at) == 0 {
		return diags
	}
	out := make(hcl.Diagnostics, 0, len(diags))
	for _, d := range diags {
		if d.Severity == hcl.DiagWarning && d.Subject != nil && strings.HasPrefix(d.Summary, "duplicate key ") &&
			slices.Contains(at, *d.Subject) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func nodeKindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "node"
}

func (d *yamlDecoder) scalar(n *yaml.Node) *Value {
	width := utf8.RuneCountInString(n.Value)
	switch n.Style {
	case yaml.DoubleQuotedStyle, yaml.SingleQuotedStyle:
		width += 2
	case yaml.LiteralStyle, yaml.FoldedStyle:
		width = 1
	}
	if strings.ContainsRune(n.Value, '\n') {
		width = 0
	}
	v := &Value{Kind: KindString, Text: n.Value, Range: d.rng(n, width)}
	switch n.ShortTag() {
	case "!!null":
		v.Kind = KindNull
	case "!!bool":
		if b, err := strconv.ParseBool(strings.ToLower(n.Value)); err == nil {
			v.Kind, v.Bool = KindBool, b
		}
	case "!!int":
		s := strings.ReplaceAll(n.Value, "_", "")
		if strings.HasPrefix(s, "0o") || strings.HasPrefix(s, "-0o") || strings.HasPrefix(s, "+0o") {
			s = strings.Replace(s, "0o", "0", 1)
		}
		if i, err := strconv.ParseInt(s, 0, 64); err == nil {
			v.Kind, v.Int = KindInt, i
		} else if f, err := strconv.ParseFloat(s, 64); err == nil {
			v.Kind, v.Float = KindFloat, f
		}
	case "!!float":
		if f, ok := parseYAMLFloat(n.Value); ok {
			v.Kind, v.Float = KindFloat, f
		}
	}
	return v
}

func parseYAMLFloat(s string) (float64, bool) {
	switch strings.ToLower(s) {
	case ".inf", "+.inf":
		return math.Inf(1), true
	case "-.inf":
		return math.Inf(-1), true
	case ".nan":
		return math.NaN(), true
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	return f, err == nil
}

func rangePtr(r hcl.Range) *hcl.Range { return &r }

// FlowScalar is s written as a YAML scalar that reads back as the string s in any
// context, a flow collection included: plain when yaml.v3 reads it back so (and it
// is not a YAML 1.1 boolean such as yes, for other tools' sake), else
// single-quoted. The writers of YAML text (spec edits, scaffolds) use it.
func FlowScalar(s string) string {
	if slices.Contains([]string{"yes", "no", "on", "off", "y", "n"}, strings.ToLower(s)) {
		return "'" + s + "'"
	}
	// Plain when it reads back as the same string both in a flow list and as a
	// block mapping's value (x: is a scalar in one, a mapping in the other).
	plain := func(doc string, value func(*yaml.Node) *yaml.Node) bool {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil || len(n.Content) != 1 {
			return false
		}
		v := value(n.Content[0])
		return v != nil && v.Kind == yaml.ScalarNode && v.Tag == "!!str" && v.Value == s && v.Style == 0
	}
	only := func(n *yaml.Node, size int) *yaml.Node {
		if len(n.Content) != size {
			return nil
		}
		return n.Content[size-1]
	}
	if plain("["+s+"]", func(n *yaml.Node) *yaml.Node { return only(n, 1) }) &&
		plain("k: "+s+"\n", func(n *yaml.Node) *yaml.Node { return only(n, 2) }) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
