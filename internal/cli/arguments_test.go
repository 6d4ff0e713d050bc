package cli

import (
	"bytes"
	"testing"
)

// TestOutputFormatRefused: a --format a command does not print is refused
// before it runs, in one message saying what it prints, with the exit code of
// the command's usage errors (2 where 1 means something else: diff,
// capabilities); capabilities summary's own --format (json by default) the
// same way; serve and watch name --log-format besides.
func TestOutputFormatRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"render", "--format", "xml"}, 1, `render prints text or json, not "xml"`},
		{[]string{"--format", "yaml", "validate"}, 1, `validate prints text, json or github, not "yaml"`},
		{[]string{"diff", "--base", "HEAD", "--format", "github"}, 2, `diff prints text, json or markdown, not "github"`},
		{[]string{"capabilities", "find", "--format", "markdown", "."}, 2, `capabilities find prints text or json, not "markdown"`},
		{[]string{"capabilities", "summary", "-f", "x.yaml", "--format", "xml"}, 2, `capabilities summary prints json or text, not "xml"`},
		{[]string{"deploy", "status", "--cluster", "demo", "--format", "markdown"}, 1, `deploy status prints text or json, not "markdown"`},
		{[]string{"serve", "--format", "markdown"}, 1, `serve prints text, not "markdown"; its log is text or json with --log-format`},
	} {
		stdout, stderr := new(bytes.Buffer), new(bytes.Buffer)
		code := run(append([]string{"fuelsync"}, tc.args...), stdout, stderr)
		if want := "fuelsync: " + tc.want + "\n"; code != tc.code || stderr.String() != want || stdout.Len() > 0 {
			t.Errorf("%v: exit %d, stderr %q, stdout %q; want exit %d, %q", tc.args, code, stderr, stdout, tc.code, want)
		}
	}
}
