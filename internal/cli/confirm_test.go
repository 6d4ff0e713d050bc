//go:build linux

package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/state"
)

// Issue 28, item 11: a cancelled interactive apply left a lock file, in a
// work directory it had made. Asked on a terminal (the stdin hooks), apply
// answered anything but yes exits 1, saying it was cancelled, after showing
// the plan, and leaves nothing: no work directory. Answered yes, it applies.
func TestApplyCancelledLeavesNothing(t *testing.T) {
	oldStdin, oldTerminal := stdin, stdinIsTerminal
	t.Cleanup(func() { stdin, stdinIsTerminal = oldStdin, oldTerminal })
	stdinIsTerminal = func() bool { return true }
	repo, err := filepath.Abs(filepath.Join("..", "..", "examples", "quickstart"))
	if err != nil {
		t.Fatal(err)
	}
	wd := filepath.Join(t.TempDir(), "wd")
	apply := func(answer string) (int, string, string) {
		stdin = strings.NewReader(answer)
		var out, errb bytes.Buffer
		code := run([]string{"fuelsync", "--repo", repo, "--workdir", wd, "apply"}, &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, answer := range []string{"no\n", "y\n", "\n", ""} {
		code, out, errs := apply(answer)
		if code != 1 || !strings.Contains(errs, "apply cancelled; nothing was changed") {
			t.Errorf("answer %q: exit %d, stderr:\n%s", answer, code, errs)
		}
		if !strings.Contains(out, "+ node-1 (controller): provision + deploy") || !strings.Contains(out, "Apply these changes to "+wd+"?") {
			t.Errorf("answer %q: the plan and the question are not shown:\n%s", answer, out)
		}
		if _, err := os.Lstat(wd); !os.IsNotExist(err) {
			entries, _ := os.ReadDir(wd)
			t.Fatalf("answer %q: the cancelled apply left %s (%v): %v", answer, wd, err, entries)
		}
	}
	if code, out, errs := apply("yes\n"); code != 0 {
		t.Fatalf("answer yes: exit %d\n%s%s", code, out, errs)
	}
	if st, err := state.Open(wd).ReadState(); err != nil || st.Serial != 1 {
		t.Errorf("after yes: serial %d, %v; want 1", st.Serial, err)
	}
}
