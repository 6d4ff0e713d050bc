//go:build linux

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// newcomer is where the README's reader stands after the quick start: a fresh
// git clone of this repository (clone, with bin/fuelsync and
// bin/fuelsync-server, which are this test binary), and tmp, the directory that
// stands for /tmp (the quick start made tmp/qs, a git repository of two
// commits, and tmp/qs-work, its work directory, serial 1).
type newcomer struct {
	clone, tmp string
}

// tmpPath matches /tmp as a directory of a command line or an output.
var tmpPath = regexp.MustCompile(`(^|[^\w./-])/tmp\b`)

// moveTmp puts /tmp of s in tmp.
func (n newcomer) moveTmp(s string) string {
	return tmpPath.ReplaceAllString(s, "${1}"+n.tmp)
}

// env is the environment the reader's commands run in: bin/ of the clone first
// on PATH, no colour, a HOME of its own and no system git configuration.
func (n newcomer) env() []string {
	return append(os.Environ(), "PATH="+filepath.Join(n.clone, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"),
		"NO_COLOR=1", "GIT_CONFIG_NOSYSTEM=1", "HOME="+filepath.Dir(n.tmp))
}

// afterQuickStart clones this repository into a scratch directory, as the
// README's reader does (the working tree's changes to tracked files and its
// untracked files copied over, so that what is tested is what is here), and
// runs the README's quick start in it, each shown output checked. make build
// is left out: this test binary is the build.
func afterQuickStart(t *testing.T) newcomer {
	t.Helper()
	for _, tool := range []string{"bash", "git"} {
		testenv.Tool(t, tool, "the quick start needs it: apt-get install "+tool)
	}
	src, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", src, "rev-parse", "--git-dir").Run(); err != nil {
		testenv.Unavailable(t, "%s is not a git clone: the quick start runs in a clone of it", src)
	}
	scratch := t.TempDir()
	n := newcomer{clone: filepath.Join(scratch, "fuelsync"), tmp: filepath.Join(scratch, "tmp")}
	if out, err := exec.Command("git", "clone", "-q", src, n.clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	overlayWorkingTree(t, src, n.clone)
	bin := filepath.Join(n.clone, "bin")
	for _, d := range []string{bin, n.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeBinaries(t, bin)
	steps := readmeQuickStart(t)
	if len(steps) < 9 {
		t.Fatalf("only %d commands in the quick start", len(steps))
	}
	ran := 0
	ports := freePorts{} // serve's documented port moved to a free one
	for _, st := range steps {
		if strings.HasPrefix(st.script, "make ") {
			continue
		}
		cmd := exec.Command("bash", "-c", ports.move(t, n.moveTmp(st.script)))
		cmd.Dir, cmd.Env = n.clone, n.env()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out, _ := cmd.CombinedOutput()
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the step left running, if it failed
		ran++
		got := strings.ReplaceAll(string(out), n.tmp+"/", "/tmp/")
		for doc, real := range ports {
			got = strings.ReplaceAll(got, real, doc)
		}
		if st.want != "" && !matchOutput(st.want, got) {
			t.Errorf("README quick start:\n%s\nprints:\n%s\nthe README shows:\n%s", st.script, got, st.want)
		}
	}
	if ran < 8 {
		t.Errorf("only %d quick start commands ran", ran)
	}
	return n
}

// overlayWorkingTree copies into clone what src's working tree has that its
// HEAD has not: changed and untracked files (ignored ones aside), and removes
// what it removed.
func overlayWorkingTree(t *testing.T, src, clone string) {
	t.Helper()
	list := func(args ...string) []string {
		out, err := exec.Command("git", append([]string{"-C", src}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %s: %v", strings.Join(args, " "), err)
		}
		return strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	}
	paths := append(list("diff", "--name-only", "-z", "HEAD"), list("ls-files", "-z", "--others", "--exclude-standard")...)
	for _, p := range paths {
		if p == "" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, p))
		dst := filepath.Join(clone, p)
		switch {
		case os.IsNotExist(err):
			os.Remove(dst)
			continue
		case err != nil:
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(src, p))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestREADMEQuickStart runs the README's quick start, command by command, as a
// reader would paste it in a fresh clone (bin/fuelsync is this test binary,
// /tmp a temporary directory), and checks each shown output.
func TestREADMEQuickStart(t *testing.T) {
	t.Parallel()
	afterQuickStart(t)
}
