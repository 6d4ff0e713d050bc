package render

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
)

func errorAt(r hcl.Range, summary string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf(summary, args...), Subject: &r}
}

func warnAt(r hcl.Range, summary string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: fmt.Sprintf(summary, args...), Subject: &r}
}

func withDetail(d *hcl.Diagnostic, detail string, args ...any) *hcl.Diagnostic {
	d.Detail = fmt.Sprintf(detail, args...)
	return d
}

// at returns "file:line" of r, for details that name a second place.
func at(r hcl.Range) string {
	if r.Filename == "" {
		return "(unknown)"
	}
	return fmt.Sprintf("%s:%d", r.Filename, r.Start.Line)
}
