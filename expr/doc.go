// Package expr is nailgun's expression language (fuel-web
// nailgun/expression), the small language of role restrictions, role limits,
// setting restrictions and legacy task conditions, for example
//
//	settings:common.libvirt_type.value == 'kvm' and not ('experimental' in version:feature_groups)
//
// The package owns the language only: lexing, parsing (with the position of every
// token kept, so errors point at a column), evaluation against named models, and
// Python truthiness. Which models exist, what they contain, when evaluation is
// strict and what a restriction or a limit means belong to the callers.
//
// # Language
//
// Literals are integers (-?[0-9]+), strings in single or double quotes (no escapes,
// no newline inside), true, false and null. A model path model:key.key... reads
// models[model][key][key]...; the model name is the ASCII word characters before
// the colon (it may be empty), the keys are made of word characters, '-' and '.',
// and a trailing '?' makes that one path non-strict. Operators, lowest precedence
// first, all left-associative: or; and; == and !=; in and not. `not` binds tighter
// than every binary operator, so `not a == b` is `(not a) == b` and `not a in b` is
// `(not a) in b` (in Python both would negate the whole comparison); real data
// writes `not (...)`. `a == b == c` is `(a == b) == c`, not a chained comparison.
//
// Keywords are matched as prefixes, in nailgun's lexer order: at each position a
// number, a string, true, false and null are tried first, then a model path, then
// and, not, or, in, ==, != and the parentheses. So "nottrue" is `not true` and
// "null_x:y" is `null` followed by the path `_x:y`, while "notes:a" is the path
// of model "notes".
//
// # Semantics
//
// Values are Python's: `and` and `or` return an operand and do not evaluate the
// right one when the left decides (`false and cluster:missing == 1` is false even in
// strict mode); `not` gives a bool by truthiness (Truthy); `==` and `!=` are Python
// equality, `in` is Python membership: an element of a list, a key of a mapping, a
// substring of a string, and a Type error for anything else on the right (null
// included) or for a list or mapping looked up in a mapping.
//
// A model path names a model of Models: an unknown model is an UnknownModel error
// in every mode. A missing key is an Undefined error in strict mode ("value of
// cluster:x is undefined") and null otherwise. Reading a key of something that is
// not a mapping — a list, a string, a number, null — is a Type error in every mode,
// as Python's subscript raises TypeError there, which nailgun does not catch.
//
// # Differences from nailgun
//
// Deliberate, where Python's behaviour is an accident or cannot carry over:
//
//   - A character no token starts with is a syntax error. nailgun's lexer builds a
//     LexError but never raises it and skips the character, so "!settings:a" meant
//     `settings:a` there.
//   - An unterminated string is a syntax error (nailgun skipped the quote).
//   - Integers must fit in int64; a larger literal is a syntax error.
//   - Parentheses and `not` may nest at most 1000 deep, and the syntax tree may be
//     at most 1000 deep (a chain of and or of or counts as one level): more is a
//     syntax error. Comparing values nested deeper than 10000 levels (only cyclic
//     model data does that) is a Type error. Python would raise RecursionError.
//   - Model data is plain Go data: a path reads mapping keys only, never object
//     attributes (nailgun's first versions used getattr).
//   - Error messages are fuelsync's own; the kinds map nailgun's exceptions:
//     ParseError is Syntax, the KeyError of an unknown model is UnknownModel, the
//     "Value of X is undefined" TypeError is Undefined, Python's own TypeErrors are
//     Type.
//
// Equality follows Python (nailgun), not JavaScript (fuel-ui, which used ===):
// true == 1, false == 0 and 1 == 1.0 are true; 123 == "123" and null == false are
// false; lists and mappings compare by content. Integer kinds are compared as
// int64, floats exactly against integers.
//
// The '?' suffix of model paths is from nailgun's last version of the lexer; older
// nailgun and fuel-ui do not know it.
package expr
