package loader

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2"
)

// errorAt returns an error diagnostic whose subject is r.
func errorAt(r hcl.Range, summary string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf(summary, args...), Subject: rangePtr(r)}
}

// warnAt returns a warning diagnostic whose subject is r.
func warnAt(r hcl.Range, summary string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: fmt.Sprintf(summary, args...), Subject: rangePtr(r)}
}

// withDetail sets the detail of d and returns it.
func withDetail(d *hcl.Diagnostic, detail string) *hcl.Diagnostic {
	d.Detail = detail
	return d
}

// fileRange is the range of a whole file, for problems that have no better place.
func fileRange(name string) hcl.Range {
	return hcl.Range{Filename: name, Start: hcl.Pos{Line: 1, Column: 1}, End: hcl.Pos{Line: 1, Column: 1}}
}

// SortDiagnostics orders diagnostics deterministically: those without a source first,
// then by file, position, severity (errors first) and text. Duplicates (same
// severity, place and text) are dropped.
func SortDiagnostics(diags hcl.Diagnostics) hcl.Diagnostics {
	sort.SliceStable(diags, func(i, j int) bool { return diagLess(diags[i], diags[j]) })
	out := diags[:0]
	for i, d := range diags {
		if i > 0 && diagEqual(diags[i-1], d) {
			continue
		}
		out = append(out, d)
	}
	return out
}

func diagLess(a, b *hcl.Diagnostic) bool {
	if (a.Subject == nil) != (b.Subject == nil) {
		return a.Subject == nil
	}
	if a.Subject != nil {
		sa, sb := a.Subject, b.Subject
		if sa.Filename != sb.Filename {
			return sa.Filename < sb.Filename
		}
		if sa.Start.Line != sb.Start.Line {
			return sa.Start.Line < sb.Start.Line
		}
		if sa.Start.Column != sb.Start.Column {
			return sa.Start.Column < sb.Start.Column
		}
	}
	if a.Severity != b.Severity {
		return a.Severity == hcl.DiagError
	}
	if a.Summary != b.Summary {
		return a.Summary < b.Summary
	}
	return a.Detail < b.Detail
}

func diagEqual(a, b *hcl.Diagnostic) bool {
	if a.Severity != b.Severity || a.Summary != b.Summary || a.Detail != b.Detail {
		return false
	}
	if (a.Subject == nil) != (b.Subject == nil) {
		return false
	}
	return a.Subject == nil || *a.Subject == *b.Subject
}

// Counts returns the number of errors and warnings in diags.
func Counts(diags hcl.Diagnostics) (errors, warnings int) {
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errors++
		} else {
			warnings++
		}
	}
	return errors, warnings
}
