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

// scan matches one token at i, which is not a blank and not the end, trying the
// rules in nailgun's order.
func (l *lexer) scan(i int) (token, *Error) {
	if tok, ok, err := l.scanNumber(i); ok {
		return tok, err
	}
	if c := l.src[i]; c == '"' || c == '\'' {
		return l.scanString(i)
	}
	rest := l.src[i:]
	if tok, ok := matchWord(rest, i, constants); ok {
		return tok, nil
	}
	if tok, ok := l.scanPath(i); ok {
		return tok, nil
	}
	if tok, ok := matchWord(rest, i, operators); ok {
		return tok, nil
	}
	r, size := utf8.DecodeRuneInString(rest)
	if r == utf8.RuneError && size <= 1 {
		return token{}, l.errorf(i, "illegal byte %#02x", l.src[i])
	}
	return token{}, l.errorf(i, "illegal character %q", r)
}

// scanNumber is NUMBER, -?\d+: ok is false when there is none at i; err is set
// when it is out of the range of int64.
func (l *lexer) scanNumber(i int) (tok token, ok bool, err *Error) {
	s := l.src
	j := i
	if s[i] == '-' {
		j++
	}
	if j >= len(s) || !isDigit(s[j]) {
		return token{}, false, nil
	}
	k := j + 1
	for k < len(s) && isDigit(s[k]) {
		k++
	}
	n, perr := strconv.ParseInt(s[i:k], 10, 64)
	if perr != nil {
		return token{}, true, l.errorf(i, "integer %s is out of range", s[i:k])
	}
	return token{kind: tNumber, pos: i, end: k, num: n}, true, nil
}

// scanString is STRING at the quote at i: the shortest run of characters other
// than a newline, then the same quote. No escapes.
func (l *lexer) scanString(i int) (token, *Error) {
	s, c := l.src, l.src[i]
	for k := i + 1; k < len(s) && s[k] != '\n'; k++ {
		if s[k] == c {
			return token{kind: tString, pos: i, end: k + 1, str: s[i+1 : k]}, nil
		}
	}
	return token{}, l.errorf(i, "unterminated string starting with %c", c)
}

// scanPath is MODELPATH, \w*?:[\w.\-]+\?? — the word characters before the colon
// are the model name (possibly empty). ok is false when there is none at i.
func (l *lexer) scanPath(i int) (token, bool) {
	s := l.src
	k := i
	for k < len(s) && isWord(s[k]) {
		k++
	}
	if k == len(s) || s[k] != ':' {
		return token{}, false
	}
	m := k + 1
	for m < len(s) && isPathChar(s[m]) {
		m++
	}
	if m == k+1 {
		return token{}, false
	}
	tok := token{kind: tPath, pos: i, end: m}
	if m < len(s) && s[m] == '?' {
		tok.end = m + 1
		tok.optional = true
	}
	return tok, true
}

// word is a rule matching fixed text (a keyword is not a whole word: see lexer).
type word struct {
	text string
	kind tokKind
}

// constants are the rules TRUE, FALSE and NULL, tried before MODELPATH; operators
// the rules tried after it, in nailgun's order.
var (
	constants = []word{{"true", tTrue}, {"false", tFalse}, {"null", tNull}}
	operators = []word{{"and", tAnd}, {"not", tNot}, {"or", tOr}, {"in", tIn}, {"==", tEq}, {"!=", tNe}, {"(", tLParen}, {")", tRParen}}
)

// matchWord returns the token of the first of words that rest, the source from
// offset i, starts with.
func matchWord(rest string, i int, words []word) (token, bool) {
	for _, w := range words {
		if strings.HasPrefix(rest, w.text) {
			return token{kind: w.kind, pos: i, end: i + len(w.text)}, true
		}
	}
	return token{}, false
}
