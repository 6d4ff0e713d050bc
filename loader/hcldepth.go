package loader

import (
	"bytes"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
)

// maxHCLDepth bounds the nesting of brackets, braces, parentheses, quotes,
// heredocs and template sequences in an HCL file, as yaml.v3 bounds YAML's:
// hclsyntax parses and evaluates recursively and overflows the stack (a fatal
// error, not a panic) on deep input. maxHCLChain bounds, in the same way, the
// operators of one expression (unary and binary operators, conditionals,
// indexes and splats), each of which is one more level of recursion.
const (
	maxHCLDepth = 10000
	maxHCLChain = 10000
)

// hclFrame is one open nesting level of the scan.
type hclFrame struct {
	kind   byte   // '{', '[', '(' (expression), 'q' quoted template, 'h' heredoc, 'i' interpolation
	marker []byte // the heredoc's closing marker
	chain  int    // the enclosing expression's operator count when this level opened
}

// checkHCLDepth scans src once, counting nesting and operators as it goes
// (nothing is allocated per token), and reports the place where the input
// opens one level too many or chains one operator too many. It is a lexer's
// approximation, erring on the side of counting more; the parser, which runs
// next, reports what is actually wrong with the syntax.
func checkHCLDepth(file string, src []byte) *hcl.Diagnostic {
	s := depthScan{file: file, src: src, lineStart: true}
	for i := 0; i < len(src); i++ {
		atLineStart := s.lineStart
		s.lineStart = src[i] == '\n'
		var d *hcl.Diagnostic
		if m := s.mode(); m == 'q' || m == 'h' {
			i, d = s.templateText(i, m, atLineStart)
		} else {
			i, d = s.code(i)
		}
		if d != nil {
			return d
		}
	}
	return nil
}

// depthScan is checkHCLDepth's state: the open levels, the current
// expression's operator count, and whether the byte read is the first of a
// line. Its steps read the byte at i and return the index of the last byte
// they consumed (the scan goes on after it) and the error, if the byte is one
// level or one operator too many.
type depthScan struct {
	file      string
	src       []byte
	stack     []hclFrame
	chain     int
	lineStart bool
}

// mode is the kind of the innermost open level.
func (s *depthScan) mode() byte {
	if len(s.stack) == 0 {
		return '{' // the file's body is a block body
	}
	return s.stack[len(s.stack)-1].kind
}

// push opens level f, reporting whether the nesting is still within bounds.
func (s *depthScan) push(f hclFrame) bool {
	f.chain = s.chain
	s.stack = append(s.stack, f)
	return len(s.stack) <= maxHCLDepth
}

// pop closes the innermost level (if any), going back to the operator count
// of the expression it was opened in.
func (s *depthScan) pop() {
	if len(s.stack) > 0 {
		s.chain = s.stack[len(s.stack)-1].chain
		s.stack = s.stack[:len(s.stack)-1]
	}
}

// endItem ends an expression: the chain restarts from its enclosing level's.
func (s *depthScan) endItem() {
	s.chain = 0
	if len(s.stack) > 0 {
		s.chain = s.stack[len(s.stack)-1].chain
	}
}

// deep is the error for the level opened at i.
func (s *depthScan) deep(i int) *hcl.Diagnostic {
	return errorAt(hcl.Range{Filename: s.file, Start: posAt(s.src, i), End: posAt(s.src, i+1)}, "HCL nesting is deeper than %d levels", maxHCLDepth)
}

// operator counts the operator at i in the current expression's chain.
func (s *depthScan) operator(i int) *hcl.Diagnostic {
	if s.chain++; s.chain > maxHCLChain {
		return errorAt(hcl.Range{Filename: s.file, Start: posAt(s.src, i), End: posAt(s.src, i+1)}, "HCL expression chains more than %d operators", maxHCLChain)
	}
	return nil
}

// templateText reads byte i of a quoted template's or a heredoc's text
// (mode m): the template's end, an escape, and the interpolations and
// directives that open an expression ($${ and %%{ are literal).
func (s *depthScan) templateText(i int, m byte, atLineStart bool) (int, *hcl.Diagnostic) {
	src, c := s.src, s.src[i]
	if m == 'h' && atLineStart {
		if last, ok := s.heredocEnd(i); ok {
			return last, nil
		}
	}
	switch {
	case m == 'q' && c == '\\':
		i++
	case m == 'q' && c == '"':
		s.pop()
	case (c == '$' || c == '%') && i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
		i += 2
	case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
		if !s.push(hclFrame{kind: 'i'}) {
			return i, s.deep(i)
		}
		i++
	}
	return i, nil
}

// heredocEnd closes the heredoc when the line starting at i is its marker,
// returning the index before the line's newline (read next, as the end of the
// heredoc).
func (s *depthScan) heredocEnd(i int) (int, bool) {
	end := bytes.IndexByte(s.src[i:], '\n')
	if end < 0 {
		end = len(s.src) - i
	}
	if !bytes.Equal(bytes.TrimSpace(s.src[i:i+end]), s.stack[len(s.stack)-1].marker) {
		return i, false
	}
	s.pop()
	return i + end - 1, true
}

// code reads byte i of an expression or a block body: comments, levels
// opening and closing, the ends of expressions, and operators.
func (s *depthScan) code(i int) (int, *hcl.Diagnostic) {
	src, c := s.src, s.src[i]
	switch c {
	case '#', '/':
		if last, ok := s.comment(i); ok {
			return last, nil
		}
	case '"', '{', '[', '(':
		return i, s.open(i)
	case '}', ']', ')':
		s.pop()
		return i, nil
	case ',':
		s.endItem()
		return i, nil
	case '\n':
		if s.mode() == '{' {
			s.endItem()
		}
		return i, nil
	case '<':
		if marker, next, ok := heredocStart(src, i); ok {
			if !s.push(hclFrame{kind: 'h', marker: marker}) {
				return i, s.deep(i)
			}
			s.lineStart = true
			return next - 1, nil
		}
	case '=':
		if i+1 >= len(src) || src[i+1] != '=' {
			// An assignment or =>, or the end of !=, <= or >=, counted with
			// its first character.
			return i, nil
		}
	}
	switch c {
	case '!', '-', '+', '*', '/', '%', '?', ':', '<', '>', '&', '|', '=':
		return i, s.operator(i)
	}
	return i, nil
}

// comment skips the comment at i (#, // or /* */), returning the index after
// which the scan goes on; ok is false where no comment starts at i. An
// unterminated /* ends the scan: the parser reports it.
func (s *depthScan) comment(i int) (last int, ok bool) {
	src := s.src
	switch {
	case src[i] == '#', src[i] == '/' && i+1 < len(src) && src[i+1] == '/':
		s.lineStart = true
		return skipLine(src, i), true
	case src[i] == '/' && i+1 < len(src) && src[i+1] == '*':
		end := bytes.Index(src[i+2:], []byte("*/"))
		if end < 0 {
			return len(src), true
		}
		return i + end + 3, true
	}
	return i, false
}

// open opens the level the byte at i starts: a quoted template, a brace, a
// bracket or a parenthesis. A bracket (an index or a splat) is also an
// operator on what precedes it.
func (s *depthScan) open(i int) *hcl.Diagnostic {
	kind := s.src[i]
	if kind == '"' {
		kind = 'q'
	}
	if !s.push(hclFrame{kind: kind}) {
		return s.deep(i)
	}
	if kind == '[' {
		if d := s.operator(i); d != nil {
			return d
		}
		s.stack[len(s.stack)-1].chain = s.chain
	}
	return nil
}

// skipLine returns the index of the newline that ends the line holding i (or the
// last index).
func skipLine(src []byte, i int) int {
	if end := bytes.IndexByte(src[i:], '\n'); end >= 0 {
		return i + end
	}
	return len(src) - 1
}

// heredocStart reads `<<MARKER` or `<<-MARKER` and the newline after it at i,
// returning the marker and the index after the newline.
func heredocStart(src []byte, i int) ([]byte, int, bool) {
	if i+1 >= len(src) || src[i+1] != '<' {
		return nil, 0, false
	}
	j := i + 2
	if j < len(src) && src[j] == '-' {
		j++
	}
	start := j
	for j < len(src) && (src[j] == '_' || src[j] == '-' || src[j] >= '0' && src[j] <= '9' || src[j] >= 'a' && src[j] <= 'z' || src[j] >= 'A' && src[j] <= 'Z') {
		j++
	}
	if j == start {
		return nil, 0, false
	}
	marker := src[start:j]
	if j < len(src) && src[j] == '\r' {
		j++
	}
	if j >= len(src) || src[j] != '\n' {
		return nil, 0, false
	}
	return marker, j + 1, true
}

// posAt is the position of byte offset off in src.
func posAt(src []byte, off int) hcl.Pos {
	off = min(off, len(src))
	line := 1 + bytes.Count(src[:off], []byte("\n"))
	ls := bytes.LastIndexByte(src[:off], '\n') + 1
	return hcl.Pos{Line: line, Column: 1 + utf8.RuneCount(src[ls:off]), Byte: off}
}
