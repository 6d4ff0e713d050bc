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
	var stack []hclFrame
	chain := 0
	lineStart := true
	mode := func() byte {
		if len(stack) == 0 {
			return '{' // the file's body is a block body
		}
		return stack[len(stack)-1].kind
	}
	push := func(f hclFrame) bool {
		f.chain = chain
		stack = append(stack, f)
		return len(stack) <= maxHCLDepth
	}
	pop := func() {
		if len(stack) > 0 {
			chain = stack[len(stack)-1].chain
			stack = stack[:len(stack)-1]
		}
	}
	// endItem ends an expression: the chain restarts from its enclosing level's.
	endItem := func() {
		chain = 0
		if len(stack) > 0 {
			chain = stack[len(stack)-1].chain
		}
	}
	deep := func(i int) *hcl.Diagnostic {
		return errorAt(hcl.Range{Filename: file, Start: posAt(src, i), End: posAt(src, i+1)}, "HCL nesting is deeper than %d levels", maxHCLDepth)
	}
	long := func(i int) *hcl.Diagnostic {
		return errorAt(hcl.Range{Filename: file, Start: posAt(src, i), End: posAt(src, i+1)}, "HCL expression chains more than %d operators", maxHCLChain)
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		atLineStart := lineStart
		lineStart = c == '\n'
		switch m := mode(); m {
		case 'q', 'h': // template text
			if m == 'h' && atLineStart {
				end := bytes.IndexByte(src[i:], '\n')
				if end < 0 {
					end = len(src) - i
				}
				if bytes.Equal(bytes.TrimSpace(src[i:i+end]), stack[len(stack)-1].marker) {
					pop()
					i += end - 1 // the newline is read next, as the end of the heredoc
					continue
				}
			}
			switch {
			case m == 'q' && c == '\\':
				i++
			case m == 'q' && c == '"':
				pop()
			case (c == '$' || c == '%') && i+2 < len(src) && src[i+1] == c && src[i+2] == '{':
				i += 2 // $${ and %%{ are literal
			case (c == '$' || c == '%') && i+1 < len(src) && src[i+1] == '{':
				if !push(hclFrame{kind: 'i'}) {
					return deep(i)
				}
				i++
			}
			continue
		}
		// Expression or block body.
		switch c {
		case '#':
			i = skipLine(src, i)
			lineStart = true
			continue
		case '/':
			if i+1 < len(src) && src[i+1] == '/' {
				i = skipLine(src, i)
				lineStart = true
				continue
			}
			if i+1 < len(src) && src[i+1] == '*' {
				end := bytes.Index(src[i+2:], []byte("*/"))
				if end < 0 {
					return nil // unterminated: the parser says so
				}
				i += end + 3
				continue
			}
		case '"':
			if !push(hclFrame{kind: 'q'}) {
				return deep(i)
			}
			continue
		case '{', '[', '(':
			if !push(hclFrame{kind: c}) {
				return deep(i)
			}
			if c == '[' { // an index or a splat is an operator on what precedes it
				if chain++; chain > maxHCLChain {
					return long(i)
				}
				stack[len(stack)-1].chain = chain
			}
			continue
		case '}', ']', ')':
			pop()
			continue
		case ',':
			endItem()
			continue
		case '\n':
			if m := mode(); m == '{' {
				endItem()
			}
			continue
		case '<':
			if i+1 < len(src) && src[i+1] == '<' {
				if marker, next, ok := heredocStart(src, i); ok {
					if !push(hclFrame{kind: 'h', marker: marker}) {
						return deep(i)
					}
					i = next - 1
					lineStart = true
					continue
				}
			}
		case '=':
			if i+1 < len(src) && src[i+1] == '=' {
				break // ==
			}
			if i > 0 && (src[i-1] == '!' || src[i-1] == '<' || src[i-1] == '>') {
				continue // counted with its first character
			}
			continue // an assignment or =>
		}
		switch c {
		case '!', '-', '+', '*', '/', '%', '?', ':', '<', '>', '&', '|', '=':
			if chain++; chain > maxHCLChain {
				return long(i)
			}
		}
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
