package loader

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// MaxHCLValueSize bounds what one HCL function call may produce, measured as the
// bytes of its strings plus elemCost per element or attribute (about what cty
// allocates for one), so 32Ki elements at most. A few bytes of
// HCL can otherwise ask for gigabytes: setproduct(range(1000), range(1000),
// range(10)) or format("%500000000s", "x").
const MaxHCLValueSize = 16 << 20

// MaxHCLFileValueSize bounds the results of all the function calls of one file
// together, so that a chain of locals, each doubling the last, stops too.
const MaxHCLFileValueSize = 4 * MaxHCLValueSize

const elemCost = 512

// boundedFunctions returns fns with every function checked, for the evaluation
// of one file: the arguments of the functions whose result can be much larger
// than their arguments are checked before the call (an estimate of the result),
// and every result after it, against MaxHCLValueSize and, all calls together,
// MaxHCLFileValueSize.
func boundedFunctions(fns map[string]function.Function) map[string]function.Function {
	out := make(map[string]function.Function, len(fns))
	spent := new(int64) // evaluation of one file is sequential
	for name, f := range fns {
		out[name] = bounded(name, f, spent)
	}
	return out
}

func bounded(name string, f function.Function, spent *int64) function.Function {
	pre := preChecks[name]
	return function.New(&function.Spec{
		Description: f.Description(),
		Params:      f.Params(),
		VarParam:    f.VarParam(),
		Type:        func(args []cty.Value) (cty.Type, error) { return f.ReturnTypeForValues(args) },
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if *spent > MaxHCLFileValueSize {
				return cty.NilVal, fmt.Errorf("the function results of this file add up to more than %s, the limit", formatSize(MaxHCLFileValueSize))
			}
			if pre != nil {
				if est, ok := pre(args); ok && est > MaxHCLValueSize {
					return cty.NilVal, tooLarge(est)
				}
			}
			v, err := f.Call(args)
			if err != nil {
				return v, err
			}
			size := valueSize(v, MaxHCLValueSize)
			if size > MaxHCLValueSize {
				return cty.NilVal, tooLarge(size)
			}
			if *spent += size; *spent > MaxHCLFileValueSize {
				return cty.NilVal, fmt.Errorf("the function results of this file add up to more than %s, the limit", formatSize(MaxHCLFileValueSize))
			}
			return v, nil
		},
	})
}

func tooLarge(size int64) error {
	more := ""
	if size > 2*MaxHCLValueSize {
		more = fmt.Sprintf(" (about %s)", formatSize(size))
	}
	return fmt.Errorf("the result would be too large%s: function results are limited to %s", more, formatSize(MaxHCLValueSize))
}

// valueSize measures v as MaxHCLValueSize does, stopping once past limit.
func valueSize(v cty.Value, limit int64) int64 {
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() {
		return 0
	}
	ty := v.Type()
	switch {
	case ty == cty.String:
		return int64(len(v.AsString()))
	case ty.IsListType() || ty.IsSetType() || ty.IsTupleType() || ty.IsMapType() || ty.IsObjectType():
		var size int64
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			size += elemCost + valueSize(e, limit-size)
			if ty.IsMapType() || ty.IsObjectType() {
				size += int64(len(k.AsString()))
			}
			if size > limit {
				return size
			}
		}
		return size
	}
	return 0 // a number or a bool: its element's cost covers it
}

// A preCheck estimates the size of a call's result from its arguments, before
// the call allocates it; ok is false when it cannot tell (unknown arguments).
type preCheck func(args []cty.Value) (est int64, ok bool)

var preChecks = map[string]preCheck{
	"setproduct": func(args []cty.Value) (int64, bool) {
		n := int64(1)
		for _, a := range args {
			l, ok := length(a)
			if !ok {
				return 0, false
			}
			n = satMul(n, l)
		}
		return satMul(n, elemCost*int64(len(args)+1)), true
	},
	"format":     func(args []cty.Value) (int64, bool) { return formatEstimate(args, false) },
	"formatlist": func(args []cty.Value) (int64, bool) { return formatEstimate(args, true) },
	"indent": func(args []cty.Value) (int64, bool) {
		if len(args) != 2 || !known(args...) {
			return 0, false
		}
		n, _ := args[0].AsBigFloat().Int64()
		s := args[1].AsString()
		return satAdd(int64(len(s)), satMul(max(n, 0), int64(strings.Count(s, "\n")+1))), true
	},
	"replace": func(args []cty.Value) (int64, bool) {
		if len(args) != 3 || !known(args...) {
			return 0, false
		}
		s, sub, repl := args[0].AsString(), args[1].AsString(), args[2].AsString()
		n := int64(len(s) + 1)
		if sub != "" && !strings.HasPrefix(sub, "/") {
			n = int64(strings.Count(s, sub))
		}
		return satAdd(int64(len(s)), satMul(n, int64(len(repl)))), true
	},
	"regex_replace": func(args []cty.Value) (int64, bool) {
		if len(args) != 3 || !known(args...) {
			return 0, false
		}
		s, repl := args[0].AsString(), args[2].AsString()
		return satAdd(int64(len(s)), satMul(int64(len(s)+1), int64(len(repl)))), true
	},
}

// formatVerb finds the width and precision of format verbs.
var formatVerb = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`%[-+# 0]*(\[\d+\])?(\d*|\*)(\.(\d*))?`) })

// formatEstimate bounds format and formatlist: the format's length, its widths
// and precisions, the digits of large numbers and the arguments' own sizes,
// times the length of the longest list argument for formatlist.
func formatEstimate(args []cty.Value, list bool) (int64, bool) {
	if len(args) == 0 || !known(args[0]) || args[0].Type() != cty.String {
		return 0, false
	}
	f := args[0].AsString()
	est := int64(len(f))
	for _, m := range formatVerb().FindAllStringSubmatch(f, -1) {
		for _, n := range []string{m[2], m[4]} {
			if w, err := strconv.ParseInt(n, 10, 64); err == nil {
				est = satAdd(est, w)
			} else if n != "" && n != "*" {
				return 1 << 62, true // a width too large to parse
			}
		}
	}
	rows := int64(1)
	for _, a := range args[1:] {
		a, _ = a.Unmark()
		if !a.IsKnown() || a.IsNull() {
			continue
		}
		if a.Type() == cty.Number {
			// %f of 1e100000000 writes every digit.
			if exp := a.AsBigFloat().MantExp(nil); exp > 0 {
				est = satAdd(est, int64(exp)/3)
			}
		}
		if list && (a.Type().IsListType() || a.Type().IsTupleType()) {
			if l, ok := length(a); ok {
				rows = max(rows, l)
			}
		}
		est = satAdd(est, valueSize(a, MaxHCLValueSize))
	}
	if list {
		return satMul(est, rows), true
	}
	return est, true
}

func known(vals ...cty.Value) bool {
	for _, v := range vals {
		v, _ = v.Unmark()
		if !v.IsKnown() || v.IsNull() {
			return false
		}
	}
	return true
}

func length(v cty.Value) (int64, bool) {
	v, _ = v.Unmark()
	if !v.IsKnown() || v.IsNull() || !v.CanIterateElements() {
		return 0, false
	}
	return int64(v.LengthInt()), true
}

const satMax = int64(1) << 62

func satMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > satMax/b {
		return satMax
	}
	return a * b
}

func satAdd(a, b int64) int64 { return min(a+b, satMax) }

// MaxHCLIterations bounds the iterations of the `for` expressions of one file,
// nested ones counted in full: [for a in x : [for b in y : 1]] iterates
// len(x) + len(x)*len(y) times. Like function results, for expressions can ask
// for far more than their source (three nested loops over range(1000)).
const MaxHCLIterations = 200_000

// boundForExprs makes every `for` expression under body count its iterations
// against one budget for the file.
func boundForExprs(body *hclsyntax.Body) {
	var fors []*hclsyntax.ForExpr
	hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		if fe, ok := n.(*hclsyntax.ForExpr); ok {
			fors = append(fors, fe)
		}
		return nil
	})
	left := new(int64)
	*left = MaxHCLIterations
	for _, fe := range fors {
		fe.CollExpr = countedCollection{Expression: fe.CollExpr, left: left}
	}
}

// countedCollection is the collection of a for expression, charging its length
// to the file's budget each time it is evaluated. It embeds the expression it
// wraps, so it is an hclsyntax.Expression too.
type countedCollection struct {
	hclsyntax.Expression
	left *int64
}

func (c countedCollection) Value(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	if *c.left < 0 { // spent: the loops still running stop at once
		return cty.DynamicVal, hcl.Diagnostics{c.spent()}
	}
	v, diags := c.Expression.Value(ctx)
	if n, ok := length(v); ok && !diags.HasErrors() {
		if *c.left -= n; *c.left < 0 {
			return cty.DynamicVal, append(diags, c.spent())
		}
	}
	return v, diags
}

func (c countedCollection) spent() *hcl.Diagnostic {
	r := c.Expression.Range()
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf("the for expressions of this file iterate more than %d times", MaxHCLIterations),
		Detail:   "Nested for expressions multiply: each iteration of the outer one runs the inner one in full. Iterate over less, or write the data out.",
		Subject:  &r,
	}
}
