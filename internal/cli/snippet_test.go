package cli

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// A diagnostic on a very long line (a generated flow mapping) shows a window of
// the line around the problem, not the line, and its marker is under the
// problem; names quoted in the message are cut too.
func TestSnippetCutsLongLines(t *testing.T) {
	t.Parallel() // a load of a 400 KB line, on its own data
	var line strings.Builder
	line.WriteString("nodes: {")
	for i := range 20000 {
		if i == 10000 {
			line.WriteString("Bad_" + strings.Repeat("x", 500) + ": {roles: [controller]}, ")
		}
		line.WriteString("n" + strings.Repeat("0", 5) + string(rune('a'+i%26)) + ": {id: " + "1" + strings.Repeat("0", 6) + "}, ")
	}
	line.WriteString("}")
	src := "release: r-1.0\n" + line.String() + "\n"
	fsys := fstest.MapFS{"clusters/c.yaml": {Data: []byte(src)}}
	repo, diags := loader.Load(fsys, loader.Options{})
	var bad []*hclDiag
	for _, d := range diags {
		if strings.HasPrefix(d.Summary, "cluster c: invalid node name") || strings.HasPrefix(d.Summary, "invalid node name") {
			bad = append(bad, d)
		}
	}
	if len(bad) != 1 {
		t.Fatalf("want one invalid node name diagnostic, got %v", diags)
	}
	var out bytes.Buffer
	writeDiagnosticsText(&out, bad, repo.Sources.Files(), "", false)
	if out.Len() > 1200 {
		t.Errorf("%d bytes written for one diagnostic on a %d-byte line:\n%.2000s", out.Len(), len(src), out.String())
	}
	lines := strings.Split(out.String(), "\n")
	var code, marker string
	for i, l := range lines {
		if strings.HasPrefix(l, "  2 | ") && i+1 < len(lines) {
			code, marker = l, lines[i+1]
		}
	}
	if !strings.HasPrefix(code, "  2 | ...") || !strings.HasSuffix(code, "...") {
		t.Errorf("the line is not cut on both sides: %q", code)
	}
	at := strings.Index(marker, "^")
	if at < 0 || !strings.HasPrefix(code[at:], "Bad_xxx") {
		t.Errorf("the marker is not under the name:\n%s\n%s", code, marker)
	}
	if !strings.Contains(out.String(), `"Bad_xxxxxxxx`) || !strings.Contains(out.String(), "... (504 bytes)") {
		t.Errorf("the name is not quoted short: %s", lines[0])
	}
}

// Short lines are shown whole, as before.
func TestSnippetShortLine(t *testing.T) {
	var out bytes.Buffer
	writeSnippet(&out, []byte("a: 1\nnodes: {Bad: {}}\n"), hclRange(2, 9, 12))
	want := "  2 | nodes: {Bad: {}}\n    |         ^^^\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

type hclDiag = hcl.Diagnostic

func hclRange(line, from, to int) hcl.Range {
	return hcl.Range{Filename: "f", Start: hcl.Pos{Line: line, Column: from}, End: hcl.Pos{Line: line, Column: to}}
}
