// Package testenv says what a test does when the machine lacks something it
// needs (a tool: etcd, strace, Graphviz's dot, chromium, git, a shell; or a
// facility: a pseudo-terminal, ptrace). On a developer's machine the test is
// skipped, saying why; in CI (the CI environment variable is "true", as GitHub
// Actions, GitLab CI and most others set it) it fails, so that CI cannot pass
// by skipping what it was meant to check.
package testenv

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// InCI reports whether the tests run in CI (CI=true).
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable ends t because something it needs is missing: a skip, or in CI a
// failure. The message says what is missing and how to get it.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("%s (CI=true: a missing requirement fails the test instead of skipping it)", msg)
		return
	}
	t.Skip(msg)
}

// Tool returns the path of the program name, or ends t (Unavailable) when it
// is not on PATH. install says how to get it ("apt-get install graphviz").
func Tool(t testing.TB, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, "%s is not installed (%s): %v", name, install, err)
	}
	return p
}

// Have reports whether the program name is on PATH, for a test that checks
// more when it is there. In CI it must be: a missing one fails t.
func Have(t testing.TB, name, install string) (string, bool) {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if InCI() {
			t.Fatalf("%s is not installed (%s): %v (CI=true: every check must run)", name, install, err)
		}
		return "", false
	}
	return p, true
}

// ShortMinimize sets how long the fuzzing engine minimizes each input that
// finds new coverage (or fails) to d ("1s", "50x": a time, or a number of
// candidates for each string or byte slice of the input), unless
// -fuzzminimizetime is on the command line. Go's default is 60 s an input, and
// minimizing is quadratic in the input's length: on the kilobyte inputs of the
// loader's and the model's targets every new input took the full minute, during
// which the worker ran no new input (FuzzCheck: 72 executions in 85 s).
// Minimizing only makes the inputs kept in the corpus, and a failing input,
// smaller; it checks nothing more.
func ShortMinimize(f testing.TB, d string) {
	fl := flag.Lookup("test.fuzzminimizetime")
	if fl == nil {
		return
	}
	given := false
	flag.Visit(func(v *flag.Flag) { given = given || v == fl })
	if !given {
		if err := flag.Set(fl.Name, d); err != nil {
			f.Fatalf("-fuzzminimizetime=%s: %v", d, err)
		}
	}
}
