package loader

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxBranchName is the longest branch name accepted, in bytes (git sets no
// limit; a name from a repository or a remote is bounded here).
const MaxBranchName = 255

// CheckBranchName reports why name cannot be a branch that fuelsync reads or
// writes (--branch, --publish-branch, publish_branch in fuelsync.yaml, a
// remote's HEAD): nil when it can. A leading refs/heads/ is the branch's full
// name and is left out. The rest is checked as `git check-ref-format --branch`
// checks it, and three more things are refused: HEAD and @ (every git command
// would read them as the checked-out commit, and a branch named HEAD makes git
// warn that HEAD is ambiguous), a name longer than MaxBranchName bytes, and
// bytes that are not UTF-8.
//
// git's rules: no component (between slashes) begins with "." or ends with
// ".lock" (a branch main.lock is the lock file of main: git refuses every
// later update of main); no "..", no "@{", no control character, space, ~, ^,
// :, ?, *, [ or \; the name does not begin with - or /, does not end with /
// or ., and has no empty component (//).
func CheckBranchName(name string) error {
	short := strings.TrimPrefix(name, "refs/heads/")
	bad := func(why string) error { return fmt.Errorf("%q is not a branch name: %s", name, why) }
	switch {
	case short == "":
		return bad("it is empty")
	case len(short) > MaxBranchName:
		return bad(fmt.Sprintf("it is longer than %d bytes", MaxBranchName))
	case !utf8.ValidString(short):
		return bad("it is not UTF-8")
	case short == "HEAD" || short == "@":
		return bad(short + " names the checked-out commit in git, not a branch")
	case short[0] == '-':
		return bad("it begins with -")
	case short[0] == '/':
		return bad("it begins with /")
	case strings.HasSuffix(short, "/"):
		return bad("it ends with /")
	case strings.HasSuffix(short, "."):
		return bad("it ends with .")
	case strings.Contains(short, "//"):
		return bad("it has an empty component (//)")
	case strings.Contains(short, ".."):
		return bad("it contains ..")
	case strings.Contains(short, "@{"):
		return bad("it contains @{")
	}
	for i := 0; i < len(short); i++ {
		c := short[i]
		if c < 0x20 || c == 0x7f {
			return bad("it contains a control character")
		}
		if strings.IndexByte(" ~^:?*[\\", c) >= 0 {
			return bad(fmt.Sprintf("it contains %q", string(c)))
		}
	}
	for _, comp := range strings.Split(short, "/") {
		if strings.HasPrefix(comp, ".") {
			return bad(fmt.Sprintf("its component %q begins with .", comp))
		}
		if strings.HasSuffix(comp, ".lock") {
			return bad(fmt.Sprintf("its component %q ends with .lock, the suffix of git's lock files", comp))
		}
	}
	return nil
}
