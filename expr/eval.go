package expr

import (
	"fmt"
	"strings"
)

type evaluator struct {
	src    string
	models Models
	strict bool
}

func (ev *evaluator) errorf(off int, kind ErrorKind, format string, args ...any) *Error {
	return newError(ev.src, off, kind, fmt.Sprintf(format, args...))
}

// eval evaluates n. Values it returns are normalised by classify.
func (ev *evaluator) eval(n *node) (any, *Error) {
	switch n.op {
	case nLit:
		return n.val, nil
	case nPath:
		return ev.resolve(n)
	case nNot:
		v, err := ev.eval(n.kids[0])
		if err != nil {
			return nil, err
		}
		return !Truthy(v), nil
	case nAnd, nOr:
		// Python's and/or: the first operand that decides, else the last one;
		// the operands after it are not evaluated.
		var v any
		for _, k := range n.kids {
			var err *Error
			if v, err = ev.eval(k); err != nil {
				return nil, err
			}
			if Truthy(v) == (n.op == nOr) {
				return v, nil
			}
		}
		return v, nil
	}

	// Binary operators evaluate both operands, left first.
	a, err := ev.eval(n.kids[0])
	if err != nil {
		return nil, err
	}
	b, err := ev.eval(n.kids[1])
	if err != nil {
		return nil, err
	}
	switch n.op {
	case nEq, nNe:
		eq, cerr := equal(a, b, 0)
		if cerr != nil {
			return nil, ev.errorf(n.pos, Type, "%v", cerr)
		}
		return eq == (n.op == nEq), nil
	default:
		return ev.in(n, a, b)
	}
}

// in is Python's `a in b`: membership in a list, a key of a mapping, a substring
// of a string.
func (ev *evaluator) in(n *node, a, b any) (any, *Error) {
	ka, a := classify(a)
	kb, b := classify(b)
	switch kb {
	case kList:
		found := false
		var cerr error
		listEach(b, func(e any) bool {
			found, cerr = equal(a, e, 0)
			return !found && cerr == nil
		})
		if cerr != nil {
			return nil, ev.errorf(n.pos, Type, "%v", cerr)
		}
		return found, nil
	case kMap:
		if ka == kList || ka == kMap {
			return nil, ev.errorf(n.pos, Type, "'in' cannot look for %s among the keys of a mapping", article(typeName(ka, a)))
		}
		return mapHas(b, ka, a), nil
	case kString:
		if ka != kString {
			return nil, ev.errorf(n.pos, Type, "'in' a string needs a string on the left, not %s", typeName(ka, a))
		}
		return strings.Contains(b.(string), a.(string)), nil
	}
	return nil, ev.errorf(n.pos, Type, "'in' needs a list, a mapping or a string on the right, not %s", typeName(kb, b))
}

// resolve reads a model path: models[model][key1][key2]...
func (ev *evaluator) resolve(n *node) (any, *Error) {
	p := n.path
	cur, ok := ev.models[p.model]
	if !ok {
		return nil, ev.errorf(n.pos, UnknownModel, "unknown model %q", p.model)
	}
	for i, key := range p.keys {
		k, x := classify(cur)
		if k != kMap {
			return nil, ev.errorf(n.pos, Type, "cannot read %s: %s is %s, not a mapping",
				p.text, p.prefix(i), article(typeName(k, x)))
		}
		v, found := mapGet(x, key)
		if !found {
			if ev.strict && !p.optional {
				where := fmt.Sprintf("%s has no key %q", p.prefix(i), key)
				if i == 0 {
					where = fmt.Sprintf("model %q has no key %q", p.model, key)
				}
				return nil, ev.errorf(n.pos, Undefined, "value of %s is undefined: %s", p.text, where)
			}
			return nil, nil
		}
		cur = v
	}
	_, v := classify(cur)
	return v, nil
}

// prefix is the path up to, not including, key i.
func (p *modelPath) prefix(i int) string {
	if i == 0 {
		return "model " + p.model
	}
	return p.model + ":" + strings.Join(p.keys[:i], ".")
}

func article(name string) string {
	switch name {
	case "null":
		return name
	case "int":
		return "an int"
	}
	return "a " + name
}
