package expr

import (
	"fmt"
	"unicode/utf8"
)

// Models are the named roots a model path reads: "settings", "cluster", "release",
// "version", "networking_parameters", "node_attributes", ... Values are plain Go
// data: nil, bool, int64 (int, the other integer kinds, float64 and float32 are
// accepted too), string, []any and map[string]any (other slice and map types are
// read through reflection).
type Models map[string]any

// Expr is a parsed expression. It is immutable: one Expr may be evaluated by many
// goroutines at once.
type Expr struct {
	src   string
	root  *node
	paths []*modelPath
}

// String returns the source the expression was parsed from.
func (e *Expr) String() string {
	if e == nil {
		return ""
	}
	return e.src
}

// Parse parses src. A returned error is an *Error of kind Syntax.
func Parse(src string) (*Expr, error) {
	e, err := parse(src)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// Eval evaluates e against the models m. When strict is true a model path whose
// key is missing is an error (kind Undefined); otherwise it evaluates to nil. An
// unknown model is an error in both modes. A returned error is an *Error.
//
// The result is nil, bool, int64, float64, string, or a list or mapping taken from
// the models as is.
func (e *Expr) Eval(m Models, strict bool) (any, error) {
	if e == nil || e.root == nil {
		src := ""
		if e != nil {
			src = e.src
		}
		return nil, newError(src, len(src), Syntax, "syntax error: expression was not parsed")
	}
	ev := evaluator{src: e.src, models: m, strict: strict}
	v, err := ev.eval(e.root)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Eval parses src and evaluates it against m (see Expr.Eval).
func Eval(src string, m Models, strict bool) (any, error) {
	e, err := parse(src)
	if err != nil {
		return nil, err
	}
	return e.Eval(m, strict)
}

// ModelPaths returns every model path of e in source order, duplicates included,
// written "model:dotted.path" (the optional trailing "?" is left off).
func ModelPaths(e *Expr) []string {
	if e == nil || len(e.paths) == 0 {
		return nil
	}
	out := make([]string, len(e.paths))
	for i, p := range e.paths {
		out[i] = p.text
	}
	return out
}

// ErrorKind classifies an Error.
type ErrorKind int

const (
	// Syntax: the expression does not parse (nailgun's ParseError).
	Syntax ErrorKind = iota + 1
	// UnknownModel: a model path names a model that is not in Models (nailgun's
	// KeyError).
	UnknownModel
	// Undefined: in strict mode, a model path names a key that does not exist
	// (nailgun's "Value of X is undefined" TypeError).
	Undefined
	// Type: an operation got operands it cannot work on, such as `in` on a number
	// or a model path that goes through a list or a scalar (Python's TypeError).
	Type
)

// String returns a short lower-case name of the kind.
func (k ErrorKind) String() string {
	switch k {
	case Syntax:
		return "syntax"
	case UnknownModel:
		return "unknown model"
	case Undefined:
		return "undefined"
	case Type:
		return "type"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// Error is a syntax or evaluation error with the position in the expression source.
type Error struct {
	// Offset is the 0-based byte offset into the source of the offending token:
	// the unexpected token (len(source) at the end of the input), the model path,
	// or the operator that failed.
	Offset int
	// Column is the 1-based column of Offset, counted in runes.
	Column int
	// Msg says what is wrong, without the position.
	Msg string
	// Kind classifies the error.
	Kind ErrorKind
}

// Error returns "column N: msg".
func (e *Error) Error() string {
	return fmt.Sprintf("column %d: %s", e.Column, e.Msg)
}

func newError(src string, off int, kind ErrorKind, msg string) *Error {
	if off < 0 {
		off = 0
	}
	if off > len(src) {
		off = len(src)
	}
	return &Error{
		Offset: off,
		Column: utf8.RuneCountInString(src[:off]) + 1,
		Msg:    msg,
		Kind:   kind,
	}
}
