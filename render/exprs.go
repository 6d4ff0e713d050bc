package render

import (
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/fuelsync/fuelsync/expr"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/hashicorp/hcl/v2"
)

// KnownModels are the roots an expression may read.
var KnownModels = []string{"cluster", "networking_parameters", "node_attributes", "release", "settings", "version"}

func knownModel(name string) bool {
	for _, m := range KnownModels {
		if m == name {
			return true
		}
	}
	return false
}

// parseCondition parses an expression written as the scalar v. Syntax errors and
// unknown models are reported at their column inside v; the result is nil then.
func (b *builder) parseCondition(v *loader.Value, what string) *expr.Expr {
	if e, ok := b.exprs[v]; ok {
		return e
	}
	e, err := expr.Parse(v.Text)
	if err != nil {
		b.dataDiag(exprErrorDiag(v, err, what))
		b.exprs[v] = nil
		return nil
	}
	for _, p := range expr.ModelPaths(e) {
		model, _, _ := strings.Cut(p, ":")
		if knownModel(model) {
			continue
		}
		off := strings.Index(v.Text, p)
		b.dataDiag(withDetail(errorAt(columnRange(v, max(off, 0), len(p)), "%s: unknown model %q in %q", what, model, v.Text),
			"Expressions read the models %s, written model:path.to.key.", strings.Join(KnownModels, ", ")))
		b.exprs[v] = nil
		return nil
	}
	b.exprs[v] = e
	return e
}

// exprErrorDiag turns a parse or evaluation error into a diagnostic at its column.
func exprErrorDiag(v *loader.Value, err error, what string) *hcl.Diagnostic {
	var ee *expr.Error
	if errors.As(err, &ee) {
		return errorAt(columnRange(v, ee.Offset, 1), "%s: %s in %q", what, ee.Msg, v.Text)
	}
	return errorAt(v.Range, "%s: %v in %q", what, err, v.Text)
}

// columnRange is the range of n bytes at byte offset off inside the scalar v, when
// the scalar is written on one line (quoted or plain); else the scalar's start.
func columnRange(v *loader.Value, off, n int) hcl.Range {
	r := v.Range
	if r.Start.Line != r.End.Line || off < 0 || off > len(v.Text) {
		return r
	}
	width := r.End.Column - r.Start.Column
	chars := utf8.RuneCountInString(v.Text)
	lead := 0
	switch width {
	case chars:
	case chars + 2:
		lead = 1 // quoted
	default:
		return r // escapes or a block scalar: the text is not written as is
	}
	col := r.Start.Column + lead + utf8.RuneCountInString(v.Text[:off])
	end := col + max(1, utf8.RuneCountInString(v.Text[off:min(len(v.Text), off+n)]))
	return hcl.Range{
		Filename: r.Filename,
		Start:    hcl.Pos{Line: r.Start.Line, Column: col, Byte: r.Start.Byte + lead + off},
		End:      hcl.Pos{Line: r.Start.Line, Column: end, Byte: r.Start.Byte + lead + off + n},
	}
}

// evalCondition evaluates a restriction's condition against the cluster's models.
func (m *Model) evalCondition(r *Restriction) (bool, error) {
	if r.Expr == nil {
		return false, nil
	}
	v, err := r.Expr.Eval(m.Models, r.Strict)
	if err != nil {
		return false, err
	}
	return expr.Truthy(v), nil
}
