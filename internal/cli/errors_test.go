package cli

import "testing"

// TestFormatOf: the --format of a command line is the last one given before
// "--", written --format F, --format=F or -format F.
func TestFormatOf(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fuelsync", "validate"}, ""},
		{[]string{"fuelsync", "--format", "json", "validate"}, "json"},
		{[]string{"fuelsync", "validate", "--format=json"}, "json"},
		{[]string{"fuelsync", "validate", "-format", "json"}, "json"},
		{[]string{"fuelsync", "--format", "json", "validate", "--format", "text"}, "text"},
		{[]string{"fuelsync", "--format", "text", "validate", "--format=json"}, "json"},
		{[]string{"fuelsync", "tags", "assign", "--", "--format", "json"}, ""},
		{[]string{"fuelsync", "validate", "--format"}, ""},
		{[]string{"fuelsync", "validate", "--formats", "json"}, ""},
		{[]string{"fuelsync", "validate", "format", "json"}, ""},
	} {
		if got := formatOf(tc.args); got != tc.want {
			t.Errorf("formatOf(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
