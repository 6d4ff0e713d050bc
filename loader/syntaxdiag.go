package loader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	yaml "go.yaml.in/yaml/v3"
)

// This file makes syntax errors precise and few: the line that is wrong in YAML
// (yaml.v3 often reports the line where the enclosing construct starts), a plain
// word for tabs and indentation, and one error for an unterminated HCL string
// instead of one per following line.

// yamlProblemLine finds the first line at which src fails to parse with the same
// message as the whole file: the line that is wrong. yaml.v3 reports parser
// errors at the start of the construct being parsed (the mapping above an
// over-indented key), so the prefixes of the file are parsed to find where the
// problem really begins. reported is the line yaml.v3 gave; it is returned when
// the search is not conclusive.
func yamlProblemLine(li *lineIndex, msg string, reported int) int {
	if len(li.src) > maxProblemSearch {
		return reported
	}
	lines := len(li.starts)
	fails := func(n int) bool {
		end := len(li.src)
		if n < lines {
			end = li.starts[n]
		}
		dec := yaml.NewDecoder(bytes.NewReader(li.src[:end]))
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == nil || errors.Is(err, io.EOF) {
			return false
		}
		m := err.Error()
		if g := yamlErrLine().FindStringSubmatch(m); g != nil {
			m = g[2]
		}
		return strings.TrimPrefix(m, "yaml: ") == msg
	}
	// The smallest prefix that fails the same way; prefixes longer than the
	// faulty line keep failing, shorter ones parse (or fail differently).
	n := sort.Search(lines, func(i int) bool { return fails(i + 1) }) + 1
	if n > lines || !fails(n) {
		return reported
	}
	// The prefix ends at the line where the parser gave up; for an unclosed
	// flow collection that is the line that opened it, for a construct cut short
	// the reported line is earlier and already right.
	if n < reported {
		return reported
	}
	return n
}

// maxProblemSearch bounds the files whose prefixes yamlProblemLine parses (about
// log2(lines) times): hand-written files are far smaller, and a huge generated
// file keeps yaml.v3's line rather than cost seconds more.
const maxProblemSearch = 4 << 20

// lineIndent returns the leading blanks of line (1-based) and whether the line
// holds anything but blanks and a comment.
func (li *lineIndex) lineIndent(line int) (indent string, content bool) {
	text := li.src[li.starts[line-1]:li.lineEnd(line)]
	rest := bytes.TrimLeft(text, " \t")
	return string(text[:len(text)-len(rest)]), len(rest) > 0 && rest[0] != '#'
}

// yamlHint refines a YAML syntax error at line: a tab in the indentation is
// named as such, and an indentation that differs from the line above is
// pointed out. It returns the summary, the detail and the range to mark.
func yamlHint(filename string, li *lineIndex, line int, msg string) (summary, detail string, subject hcl.Range) {
	// yaml.v3 may report the line after the last one (an error at the end).
	line = max(1, min(line, len(li.starts)))
	summary = "YAML syntax error: " + msg
	subject = li.span(filename, line, 1, 0)
	indent, _ := li.lineIndent(line)
	if i := strings.IndexByte(indent, '\t'); i >= 0 || strings.Contains(msg, "tab character") {
		if i < 0 {
			// The tab is elsewhere on the line (a tab before a value's text).
			i = bytes.IndexByte(li.src[li.starts[line-1]:li.lineEnd(line)], '\t')
		}
		if i >= 0 {
			return "YAML syntax error: tabs are not allowed for indentation",
				"YAML indents with spaces only. Replace the tab with spaces, aligned with the lines it belongs with.",
				li.span(filename, line, i+1, 1)
		}
	}
	if msg == "found unexpected end of stream" {
		// libyaml's context ("while scanning a quoted scalar") is lost; the
		// usual cause is a quote that is not closed.
		text := li.src[li.starts[line-1]:li.lineEnd(line)]
		if i := bytes.IndexAny(text, `"'`); i >= 0 {
			subject = li.span(filename, line, 1+len([]rune(string(text[:i]))), 0)
			detail = "The file ends inside the value that starts here: most often a quoted string without its closing quote."
		}
		return summary, detail, subject
	}
	prev := line - 1
	for ; prev >= 1; prev-- {
		if _, content := li.lineIndent(prev); content {
			break
		}
	}
	switch {
	case prev < 1:
	case strings.HasPrefix(msg, "did not find expected key"), strings.HasPrefix(msg, "did not find expected '-' indicator"),
		strings.HasPrefix(msg, "mapping values are not allowed"), strings.HasPrefix(msg, "block sequence entries are not allowed"):
		pi, _ := li.lineIndent(prev)
		if len(pi) == len(indent) {
			break
		}
		summary += " (check the indentation)"
		detail = fmt.Sprintf("This line is indented by %s, line %d by %s. YAML nests by indentation: the keys of one mapping, "+
			"and the items of one list, start in the same column, and a nested value is indented under a key that ends with ':'.",
			spaces(len(indent)), prev, spaces(len(pi)))
		subject = li.span(filename, line, len(indent)+1, 0)
	}
	return summary, detail, subject
}

func spaces(n int) string {
	if n == 1 {
		return "1 space"
	}
	return fmt.Sprintf("%d spaces", n)
}

// firstUnterminatedString cuts the diagnostics of an HCL file at its first
// unterminated quoted string. A missing closing quote makes the lexer read the
// rest of the file inside out (every later string opens where one closes), so
// hclsyntax reports an error on nearly every following line; only the first is
// true. The others are dropped and the one kept says what to fix, at the opening
// quote.
func firstUnterminatedString(file string, src []byte, diags hcl.Diagnostics) hcl.Diagnostics {
	var first *hcl.Diagnostic
	for _, d := range diags {
		if d.Severity == hcl.DiagError && d.Subject != nil &&
			(d.Summary == "Invalid multi-line string" || d.Summary == "Unterminated template string") &&
			(first == nil || d.Subject.Start.Byte < first.Subject.Start.Byte) {
			first = d
		}
	}
	if first == nil {
		return diags
	}
	cut := first.Subject.Start.Byte
	// The opening quote: the last one that opens a string before the cut.
	open := hcl.Range{Filename: file, Start: first.Subject.Start, End: first.Subject.End}
	tokens, _ := hclsyntax.LexConfig(src, file, hcl.InitialPos)
	for _, t := range tokens {
		if t.Range.Start.Byte >= cut {
			break
		}
		if t.Type == hclsyntax.TokenOQuote {
			open = t.Range
		}
	}
	out := hcl.Diagnostics{}
	for _, d := range diags {
		if d.Subject != nil && d.Subject.Start.Byte >= open.Start.Byte {
			continue
		}
		out = append(out, d)
	}
	line := open.Start.Line
	end := open.End
	if e := bytes.IndexByte(src[open.Start.Byte:], '\n'); e >= 0 {
		text := src[open.Start.Byte : open.Start.Byte+e]
		text = bytes.TrimSuffix(text, []byte{'\r'})
		end = hcl.Pos{Line: line, Column: open.Start.Column + len([]rune(string(text))), Byte: open.Start.Byte + len(text)}
	}
	return append(out, &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Unterminated string",
		Detail: "This string has no closing quote (\") on its line. Add it; for text over several lines use a heredoc (<<EOT ... EOT). " +
			"The rest of the file is not checked until this is fixed: a missing quote turns everything after it inside out.",
		Subject: &hcl.Range{Filename: file, Start: open.Start, End: end},
	})
}
