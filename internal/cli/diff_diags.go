package cli

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

// diffSide is one revision of diff, for its diagnostics.
type diffSide struct {
	diags hcl.Diagnostics
	files map[string]*hcl.File
	src   *source
}

// writeDiffDiagnostics prints the diagnostics of diff's two revisions once
// each, under the revisions they are in: those of both revisions (the same
// problem at the same place; most warnings of the data), then those of the
// head only, then those of the base only.
func writeDiffDiagnostics(g *globals, base, head diffSide) {
	key := func(d *hcl.Diagnostic) string {
		k := fmt.Sprintf("%d\x00%s\x00%s", d.Severity, d.Summary, d.Detail)
		if s := d.Subject; s != nil {
			k += fmt.Sprintf("\x00%s:%d.%d-%d.%d", s.Filename, s.Start.Line, s.Start.Column, s.End.Line, s.End.Column)
		}
		return k
	}
	shown := func(d *hcl.Diagnostic) bool { return d.Severity == hcl.DiagError || !g.quiet }
	inBase := map[string]bool{}
	for _, d := range base.diags {
		inBase[key(d)] = true
	}
	inHead := map[string]bool{}
	var both, headOnly, baseOnly hcl.Diagnostics
	for _, d := range head.diags {
		k := key(d)
		if inHead[k] || !shown(d) {
			continue
		}
		inHead[k] = true
		if inBase[k] {
			both = append(both, d)
		} else {
			headOnly = append(headOnly, d)
		}
	}
	seen := map[string]bool{}
	for _, d := range base.diags {
		k := key(d)
		if inHead[k] || seen[k] || !shown(d) {
			continue
		}
		seen[k] = true
		baseOnly = append(baseOnly, d)
	}
	for _, part := range []struct {
		title string
		diags hcl.Diagnostics
		side  diffSide
	}{
		{fmt.Sprintf("In both revisions (base %.12s, head %.12s):", base.src.revision, head.src.revision), both, head},
		{fmt.Sprintf("In the head only (%.12s):", head.src.revision), headOnly, head},
		{fmt.Sprintf("In the base only (%.12s):", base.src.revision), baseOnly, base},
	} {
		if len(part.diags) == 0 {
			continue
		}
		fmt.Fprintln(g.stderr, part.title)
		g.writeDiagnostics(g.stderr, part.diags, part.side.files, part.side.src.prefix)
	}
}
