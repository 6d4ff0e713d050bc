package expr

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxNesting bounds both the nesting of parentheses and `not` while parsing and
// the depth of the syntax tree, so neither the parser nor the evaluator can
// recurse without bound.
const maxNesting = 1000

type opKind uint8

const (
	nLit  opKind = iota // val
	nPath               // path
	nNot                // kids[0]
	nAnd                // kids[0] and kids[1] and ... (left-associative chain)
	nOr                 // kids[0] or kids[1] or ...
	nEq                 // kids[0] == kids[1]
	nNe                 // kids[0] != kids[1]
	nIn                 // kids[0] in kids[1]
)

// node is a syntax tree node. pos is the byte offset of its token: the literal,
// the model path, or the operator.
type node struct {
	op    opKind
	pos   int
	depth int // 0 for a leaf
	val   any
	path  *modelPath
	kids  []*node
}

// modelPath is model:key1.key2... as written.
type modelPath struct {
	text     string   // "model:key1.key2", without the '?'
	model    string   // "model"
	keys     []string // key1, key2, ...
	optional bool     // written with a trailing '?': never strict
}

type parser struct {
	lx    lexer
	tok   token
	nest  int
	paths []*modelPath
}

func parse(src string) (*Expr, *Error) {
	p := parser{lx: lexer{src: src}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	root, err := p.parseBinary(1)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.unexpected()
	}
	return &Expr{src: src, root: root, paths: p.paths}, nil
}

func (p *parser) advance() *Error {
	t, err := p.lx.next()
	if err != nil {
		return err
	}
	p.tok = t
	return nil
}

func (p *parser) errorf(off int, format string, args ...any) *Error {
	return newError(p.lx.src, off, Syntax, "syntax error: "+fmt.Sprintf(format, args...))
}

// unexpected reports the current token.
func (p *parser) unexpected() *Error {
	t := p.tok
	if t.kind == tEOF {
		return p.errorf(t.pos, "unexpected end of expression")
	}
	text := p.lx.src[t.pos:t.end]
	if utf8.RuneCountInString(text) > 40 {
		r := []rune(text)
		text = string(r[:37]) + "..."
	}
	return p.errorf(t.pos, "unexpected '%s'", text)
}

// binaryPrec is the precedence of a binary operator token, 0 for any other
// token. nailgun's table, lowest first: or; and; == !=; in and not, all
// left-associative.
func binaryPrec(k tokKind) int {
	switch k {
	case tOr:
		return 1
	case tAnd:
		return 2
	case tEq, tNe:
		return 3
	case tIn:
		return 4
	}
	return 0
}

// parseBinary parses operators of precedence minPrec and higher by precedence
// climbing; operands are unary expressions.
func (p *parser) parseBinary(minPrec int) (*node, *Error) {
	left, err := p.parseUnary()
	if err != nil {
		return nil, err
	}
	for {
		prec := binaryPrec(p.tok.kind)
		if prec == 0 || prec < minPrec {
			return left, nil
		}
		op := p.tok
		if err := p.advance(); err != nil {
			return nil, err
		}
		right, err := p.parseBinary(prec + 1) // left-associative
		if err != nil {
			return nil, err
		}
		if left, err = p.combine(op, left, right); err != nil {
			return nil, err
		}
	}
}

func (p *parser) combine(op token, left, right *node) (*node, *Error) {
	var kind opKind
	switch op.kind {
	case tOr:
		kind = nOr
	case tAnd:
		kind = nAnd
	case tEq:
		kind = nEq
	case tNe:
		kind = nNe
	default:
		kind = nIn
	}
	depth := max(left.depth, right.depth) + 1
	if (kind == nAnd || kind == nOr) && left.op == kind {
		// a and b and c is one chain: its value is the same and evaluating it
		// does not recurse once per operand.
		left.kids = append(left.kids, right)
		left.depth = max(left.depth, right.depth+1)
		if left.depth > maxNesting {
			return nil, p.tooDeep(op.pos)
		}
		return left, nil
	}
	if depth > maxNesting {
		return nil, p.tooDeep(op.pos)
	}
	return &node{op: kind, pos: op.pos, depth: depth, kids: []*node{left, right}}, nil
}

func (p *parser) tooDeep(off int) *Error {
	return p.errorf(off, "expression nested too deeply (more than %d levels)", maxNesting)
}

// parseUnary parses `not` operand, a parenthesised expression or an operand.
// The operand of `not` is itself a unary expression: `not` binds tighter than
// every binary operator, so `not a == b` is `(not a) == b` and `not a in b` is
// `(not a) in b`, as in nailgun (unlike Python).
func (p *parser) parseUnary() (*node, *Error) {
	t := p.tok
	switch t.kind {
	case tNot:
		if p.nest++; p.nest > maxNesting {
			return nil, p.tooDeep(t.pos)
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.parseUnary()
		if err != nil {
			return nil, err
		}
		p.nest--
		if x.depth+1 > maxNesting {
			return nil, p.tooDeep(t.pos)
		}
		return &node{op: nNot, pos: t.pos, depth: x.depth + 1, kids: []*node{x}}, nil
	case tLParen:
		if p.nest++; p.nest > maxNesting {
			return nil, p.tooDeep(t.pos)
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		x, err := p.parseBinary(1)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tRParen {
			if p.tok.kind == tEOF {
				return nil, p.errorf(p.tok.pos, "missing ')' to close the '(' at column %d", utf8.RuneCountInString(p.lx.src[:t.pos])+1)
			}
			return nil, p.unexpected()
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		p.nest--
		return x, nil
	case tNumber:
		return p.leaf(&node{op: nLit, pos: t.pos, val: t.num})
	case tString:
		return p.leaf(&node{op: nLit, pos: t.pos, val: t.str})
	case tTrue:
		return p.leaf(&node{op: nLit, pos: t.pos, val: true})
	case tFalse:
		return p.leaf(&node{op: nLit, pos: t.pos, val: false})
	case tNull:
		return p.leaf(&node{op: nLit, pos: t.pos, val: nil})
	case tPath:
		text := p.lx.src[t.pos:t.end]
		if t.optional {
			text = text[:len(text)-1]
		}
		model, attr, _ := strings.Cut(text, ":")
		mp := &modelPath{text: text, model: model, keys: strings.Split(attr, "."), optional: t.optional}
		p.paths = append(p.paths, mp)
		return p.leaf(&node{op: nPath, pos: t.pos, path: mp})
	}
	return nil, p.unexpected()
}

func (p *parser) leaf(n *node) (*node, *Error) {
	if err := p.advance(); err != nil {
		return nil, err
	}
	return n, nil
}
