package expr

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tNumber
	tString
	tTrue
	tFalse
	tNull
	tAnd
	tOr
	tNot
	tIn
	tEq
	tNe
	tLParen
	tRParen
	tPath
)

// token is one lexeme; pos and end are byte offsets into the source.
type token struct {
	kind     tokKind
	pos, end int
	num      int64  // tNumber
	str      string // tString: the text between the quotes
	optional bool   // tPath: written with a trailing '?'
}

// lexer produces tokens on demand. Its rules follow nailgun's PLY lexer, which
// tries, at each position after skipping blanks, the function rules in the order
// they are written (NUMBER, STRING, TRUE, FALSE, NULL) and then the string rules by
// decreasing regexp length (MODELPATH, AND, NOT, then OR, IN, ==, !=, parentheses),
// taking the first that matches. Keywords are therefore not whole words:
// "nottrue" is `not true`, "nullx:y" is `null x:y`, while "notx:y" is a model path
// (MODELPATH is tried before NOT).
type lexer struct {
	src string
	pos int
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isWord is Python 2's ASCII \w.
func isWord(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

func isPathChar(c byte) bool { return isWord(c) || c == '.' || c == '-' }

func (l *lexer) errorf(off int, format string, args ...any) *Error {
	return newError(l.src, off, Syntax, "syntax error: "+fmt.Sprintf(format, args...))
}

func (l *lexer) next() (token, *Error) {
	s := l.src
	i := l.pos
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	if i >= len(s) {
		l.pos = len(s)
		return token{kind: tEOF, pos: len(s), end: len(s)}, nil
	}
	tok, err := l.scan(i)
	if err != nil {
		return token{}, err
	}
	l.pos = tok.end
	return tok, nil
}

// scan matches one token at i, which is not a blank and not the end.
func (l *lexer) scan(i int) (token, *Error) {
	s := l.src
	c := s[i]

	// NUMBER: -?\d+
	j := i
	if c == '-' {
		j++
	}
	if j < len(s) && isDigit(s[j]) {
		k := j + 1
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		n, err := strconv.ParseInt(s[i:k], 10, 64)
		if err != nil {
			return token{}, l.errorf(i, "integer %s is out of range", s[i:k])
		}
		return token{kind: tNumber, pos: i, end: k, num: n}, nil
	}

	// STRING: a quote, the shortest run of characters other than a newline, the
	// same quote. No escapes.
	if c == '"' || c == '\'' {
		for k := i + 1; k < len(s) && s[k] != '\n'; k++ {
			if s[k] == c {
				return token{kind: tString, pos: i, end: k + 1, str: s[i+1 : k]}, nil
			}
		}
		return token{}, l.errorf(i, "unterminated string starting with %c", c)
	}

	rest := s[i:]
	switch {
	case strings.HasPrefix(rest, "true"):
		return token{kind: tTrue, pos: i, end: i + 4}, nil
	case strings.HasPrefix(rest, "false"):
		return token{kind: tFalse, pos: i, end: i + 5}, nil
	case strings.HasPrefix(rest, "null"):
		return token{kind: tNull, pos: i, end: i + 4}, nil
	}

	// MODELPATH: \w*?:[\w.\-]+\?? — the word characters before the colon are the
	// model name (possibly empty).
	k := i
	for k < len(s) && isWord(s[k]) {
		k++
	}
	if k < len(s) && s[k] == ':' {
		m := k + 1
		for m < len(s) && isPathChar(s[m]) {
			m++
		}
		if m > k+1 {
			tok := token{kind: tPath, pos: i, end: m}
			if m < len(s) && s[m] == '?' {
				tok.end = m + 1
				tok.optional = true
			}
			return tok, nil
		}
	}

	switch {
	case strings.HasPrefix(rest, "and"):
		return token{kind: tAnd, pos: i, end: i + 3}, nil
	case strings.HasPrefix(rest, "not"):
		return token{kind: tNot, pos: i, end: i + 3}, nil
	case strings.HasPrefix(rest, "or"):
		return token{kind: tOr, pos: i, end: i + 2}, nil
	case strings.HasPrefix(rest, "in"):
		return token{kind: tIn, pos: i, end: i + 2}, nil
	case strings.HasPrefix(rest, "=="):
		return token{kind: tEq, pos: i, end: i + 2}, nil
	case strings.HasPrefix(rest, "!="):
		return token{kind: tNe, pos: i, end: i + 2}, nil
	case c == '(':
		return token{kind: tLParen, pos: i, end: i + 1}, nil
	case c == ')':
		return token{kind: tRParen, pos: i, end: i + 1}, nil
	}

	r, size := utf8.DecodeRuneInString(rest)
	if r == utf8.RuneError && size <= 1 {
		return token{}, l.errorf(i, "illegal byte %#02x", c)
	}
	return token{}, l.errorf(i, "illegal character %q", r)
}
