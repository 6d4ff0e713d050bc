package components

import (
	"fmt"
	"testing"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/hashicorp/hcl/v2"
)

// decode reads a components.yaml-style list into loader Components, positioned in
// file, as the loader's checkComponents builds them.
func decode(t *testing.T, file, src string) []*loader.Component {
	t.Helper()
	v, diags := loader.DecodeYAML(file, []byte(src))
	if diags.HasErrors() {
		t.Fatalf("decoding %s: %v", file, diags)
	}
	if !v.IsList() {
		t.Fatalf("%s: want a list, got a %s", file, v.Kind)
	}
	out := make([]*loader.Component, 0, len(v.Items))
	for _, it := range v.Items {
		n := it.Get("name")
		out = append(out, &loader.Component{Name: n.String(), Data: it, Range: n.Range})
	}
	return out
}

// refs reads a YAML list of names into positioned refs, as a cluster's
// `components:` is loaded.
func refs(t *testing.T, file, src string) []loader.Ref {
	t.Helper()
	v, diags := loader.DecodeYAML(file, []byte(src))
	if diags.HasErrors() {
		t.Fatalf("decoding %s: %v", file, diags)
	}
	var out []loader.Ref
	for _, it := range v.Items {
		out = append(out, loader.Ref{Name: it.String(), Range: it.Range})
	}
	return out
}

// names turns names into refs without positions.
func names(ns ...string) []loader.Ref {
	out := make([]loader.Ref, len(ns))
	for i, n := range ns {
		out[i] = loader.Ref{Name: n}
	}
	return out
}

// pos is "file:line:column" of r, or "" for the zero range.
func pos(r hcl.Range) string {
	if r.Filename == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", r.Filename, r.Start.Line, r.Start.Column)
}

// messages returns the messages of problems.
func messages(probs []Problem) []string {
	var out []string
	for _, p := range probs {
		out = append(out, p.Message)
	}
	return out
}

// diagLines renders diagnostics as "severity file:line:col: summary".
func diagLines(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		where := ""
		if d.Subject != nil {
			where = pos(*d.Subject)
		}
		out = append(out, fmt.Sprintf("%s %s: %s", sev, where, d.Summary))
	}
	return out
}
