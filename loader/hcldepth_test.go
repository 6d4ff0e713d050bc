package loader

import (
	"strings"
	"testing"
)

// The depth check counts nesting and operator chains while scanning, without
// materialising tokens, and stops the inputs that would overflow the parser's
// or the evaluator's stack (a fatal error, not a recoverable panic).
func TestHCLDepthCheck(t *testing.T) {
	n := maxHCLDepth + 1
	tests := map[string]struct {
		src      string
		line     int
		col      int
		summary  string
		accepted bool
	}{
		"brackets":             {src: "a = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n", line: 1, col: 4 + n, summary: "HCL nesting is deeper than 10000 levels"},
		"braces on later line": {src: "x = 1\n\na = " + strings.Repeat("{a=", n) + "1" + strings.Repeat("}", n) + "\n", line: 3, col: 4 + 3*(n-1) + 1, summary: "HCL nesting is deeper than 10000 levels"},
		"interpolations":       {src: "a = " + strings.Repeat(`"${`, n/2+1) + "1" + strings.Repeat(`}"`, n/2+1) + "\n", line: 1, summary: "HCL nesting is deeper than 10000 levels"},
		"directives":           {src: "a = " + strings.Repeat(`"%{`, n/2+1) + "1" + strings.Repeat(`}"`, n/2+1) + "\n", line: 1, summary: "HCL nesting is deeper than 10000 levels"},
		"after a heredoc":      {src: "a = <<EOT\n  x\n  EOT\nb = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n", line: 4, col: 4 + n, summary: "HCL nesting is deeper than 10000 levels"},
		"unary not":            {src: "a = " + strings.Repeat("!", n) + "true\n", line: 1, col: 4 + n, summary: "HCL expression chains more than 10000 operators"},
		"unary minus":          {src: "a = " + strings.Repeat("- ", n) + "1\n", line: 1, summary: "HCL expression chains more than 10000 operators"},
		"splats":               {src: "a = x" + strings.Repeat("[*]", n) + "\n", line: 1, summary: "HCL expression chains more than 10000 operators"},
		"sums":                 {src: "a = (" + strings.Repeat("1 +\n", n) + "1)\n", line: n, summary: "HCL expression chains more than 10000 operators"},
		"conditionals":         {src: "a = " + strings.Repeat("true ? 1 : ", n/2+1) + "1\n", line: 1, summary: "HCL expression chains more than 10000 operators"},
		// Many short expressions are fine, however many there are in all.
		"many attributes": {src: strings.Repeat("a = -1 + 2 * (3 - 4) ? x[0] : !y\n", 5000), accepted: true},
		"long list":       {src: "a = [" + strings.Repeat("-1, ", 3*n) + "]\n", accepted: true},
		"long object":     {src: "a = {\n" + strings.Repeat("  k = -1 * 2\n", 3*n) + "}\n", accepted: true},
		"comments and strings": {src: "# " + strings.Repeat("[", n) + "\n// " + strings.Repeat("(", n) + "\n/* " + strings.Repeat("{", n) + " */\n" +
			"a = \"" + strings.Repeat("[!-", n) + "\\\"\"\nb = \"$${" + strings.Repeat("(", 10) + "\"\n", accepted: true},
		"escaped quote": {src: "a = \"\\\"" + strings.Repeat("[", n) + "\"\n", accepted: true},
		"heredoc":       {src: "a = <<-EOT\n  " + strings.Repeat("[(-!", n) + "\n  ${x}\n  EOT\nb = 1\n", accepted: true},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			d := checkHCLDepth("f.hcl", []byte(tt.src))
			if tt.accepted {
				if d != nil {
					t.Fatalf("refused: %v", d)
				}
				return
			}
			if d == nil {
				t.Fatal("accepted")
			}
			if d.Summary != tt.summary || d.Subject.Start.Line != tt.line || (tt.col != 0 && d.Subject.Start.Column != tt.col) {
				t.Errorf("got %s: %s, want line %d column %d: %s", d.Subject, d.Summary, tt.line, tt.col, tt.summary)
			}
		})
	}
}

// The check allocates nothing per token: scanning a 4 MiB file costs next to
// nothing beyond the file (the token list it used to build cost ~100 bytes per
// input byte).
func TestHCLDepthCheckDoesNotMaterialiseTokens(t *testing.T) {
	src := []byte(strings.Repeat("a = [[1, 2], {b = \"${x}\"}, -3 + 4]\n", 4<<20/36))
	if d := checkHCLDepth("f.hcl", src); d != nil {
		t.Fatal(d)
	}
	if got := allocated(func() { checkHCLDepth("f.hcl", src) }); got > 64<<10 {
		t.Errorf("the check allocated %d bytes for a %d-byte file", got, len(src))
	}
}

// Every input that would overflow the stack is refused before parsing; what
// passes parses without crashing (the parser runs on it here).
func TestHCLDepthCheckBeforeParse(t *testing.T) {
	for _, src := range []string{
		"a = " + strings.Repeat("!", 200000) + "true\n",
		"a = x" + strings.Repeat("[*]", 200000) + "\n",
		"a = " + strings.Repeat("(", 200000) + "1" + strings.Repeat(")", 200000) + "\n",
	} {
		if _, diags := parseHCL("f.hcl", []byte(src)); !diags.HasErrors() {
			t.Errorf("%.20s...: accepted", src)
		}
	}
}
