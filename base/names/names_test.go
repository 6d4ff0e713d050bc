package names

import (
	"regexp"
	"strings"
	"testing"
)

// TestValid: each rule of the name, a row.
func TestValid(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"node-1", true},
		{"a", true},
		{"0", true},
		{"mitaka-9.0", true},
		{"a_b.c-d", true},
		{"", false},        // empty
		{".", false},       // a dot first
		{"..", false},      // the parent
		{".hidden", false}, // a hidden file
		{"-x", false},      // a dash first (a flag)
		{"_x", false},      // an underscore first
		{"Node", false},    // upper case
		{"a/b", false},     // a separator
		{`a\b`, false},     // the other separator
		{"a b", false},     // a space
		{"é", false},       // not ASCII
		{"a\x00", false},   // NUL
		{"a\n", false},     // a newline at the end
		{strings.Repeat("a", MaxLength), true},
		{strings.Repeat("a", MaxLength+1), false},
	} {
		if got := Valid(tc.name); got != tc.ok {
			t.Errorf("Valid(%q) = %t, want %t", tc.name, got, tc.ok)
		}
	}
}

// FuzzValid: Valid is Pattern and MaxLength, as the messages say.
func FuzzValid(f *testing.F) {
	for _, s := range []string{"node-1", "", ".", "A", "a.b", "a\n", "é"} {
		f.Add(s)
	}
	re := regexp.MustCompile(Pattern)
	f.Fuzz(func(t *testing.T, s string) {
		if want := len(s) <= MaxLength && re.MatchString(s); Valid(s) != want {
			t.Errorf("Valid(%q) = %t, the pattern says %t", s, !want, want)
		}
	})
}
