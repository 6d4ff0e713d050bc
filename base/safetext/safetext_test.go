package safetext

import (
	"strings"
	"testing"
	"unicode"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"node-1 (controller)", "node-1 (controller)"},
		{"tab\tstays", "tab\tstays"},
		{"x\n::error file=README.md,line=1::INJECTED", `x\n::error file=README.md,line=1::INJECTED`},
		{"::error::at the start", `\x3a:error::at the start`},
		{"  ::warning::after blanks", `  \x3a:warning::after blanks`},
		{"##[error]azure", `\x23#[error]azure`},
		{"##vso[task.setvariable]x", `\x23#vso[task.setvariable]x`},
		{"a::b is not at the start", "a::b is not at the start"},
		{"red \x1b[31mRED\x1b[0m", `red \x1b[31mRED\x1b[0m`},
		{"bell\a, cr\r, del\x7f", `bell\x07, cr\r, del\x7f`},
		{"c1 \u009b31m", `c1 \u009b31m`},
		{"bidi \u202eevil\u202c \u2066x\u2069 \u200f", `bidi \u202eevil\u202c \u2066x\u2069 \u200f`},
		{"sep\u2028x\u2029", `sep\u2028x\u2029`},
		{"zero\u200bwidth \ufeffbom", `zero\u200bwidth \ufeffbom`},
		{"bad utf-8 \xff\x9b", `bad utf-8 \xff\x9b`},
		{"ünïcödé 日本", "ünïcödé 日本"},
	} {
		if got := Line(tc.in); got != tc.want {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestLines(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"first\n\nsecond", "first\n\nsecond"},
		{"Known roles: a, x\n::error file=README.md::INJECTED.", "Known roles: a, x\n\\x3a:error file=README.md::INJECTED."},
		{"a\n  ##[group]b\n", "a\n  \\x23#[group]b\n"},
		{"esc \x1b]8;;http://x\x1b\\link", `esc \x1b]8;;http://x\x1b\link`},
		{"crlf\r\nline", `crlf\r` + "\nline"},
	} {
		if got := Lines(tc.in); got != tc.want {
			t.Errorf("Lines(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Whatever the input, what Line returns is one line of printable text (tabs
// and spaces aside) that does not begin like a workflow command, and Lines keeps
// exactly the newlines it was given.
func FuzzLine(f *testing.F) {
	for _, s := range []string{"", "plain", "x\n::error::y", "\x1b[2J", "\u202e", "\xff", "  ##[x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		line := Line(s)
		for _, r := range line {
			if r != '\t' && (r < 0x20 || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)) {
				t.Fatalf("Line(%q) = %q holds %U", s, line, r)
			}
		}
		if isCommandStart(strings.TrimLeft(line, " \t")) {
			t.Fatalf("Line(%q) = %q begins like a workflow command", s, line)
		}
		lines := Lines(s)
		if strings.Count(lines, "\n") != strings.Count(s, "\n") {
			t.Fatalf("Lines(%q) = %q: the newlines changed", s, lines)
		}
		for _, l := range strings.Split(lines, "\n") {
			if l != Line(l) {
				t.Fatalf("Lines(%q): line %q is not escaped", s, l)
			}
		}
	})
}

func TestThousandsAndCut(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 2000000: "2,000,000", -12345: "-12,345"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{{"keystone", 8, "keystone"}, {"keystone", 5, "keys…"}, {"äöüß", 3, "äö…"}, {"ab", 0, "…"}} {
		if got := Cut(c.s, c.n); got != c.want {
			t.Errorf("Cut(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
