package testenv

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a test would have ended.
type recorder struct {
	testing.TB
	ended string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended = "fail: " + fmt.Sprintf(format, args...)
}
func (r *recorder) Skip(args ...any) { r.ended = "skip: " + fmt.Sprint(args...) }

// A missing tool skips the test, or fails it when CI=true.
func TestMissingTool(t *testing.T) {
	const missing = "fuelsync-no-such-tool"
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		Tool(r, missing, "apt-get install it")
		want := map[string]string{"": "skip: ", "true": "fail: "}[ci]
		if !strings.HasPrefix(r.ended, want) || !strings.Contains(r.ended, missing+" is not installed (apt-get install it)") {
			t.Errorf("CI=%q: Tool ended the test with %q, want %q…", ci, r.ended, want)
		}
		r = &recorder{TB: t}
		if _, ok := Have(r, missing, "apt-get install it"); ok || (ci == "true") != strings.HasPrefix(r.ended, "fail: ") || (ci == "" && r.ended != "") {
			t.Errorf("CI=%q: Have: %v, ended %q", ci, ok, r.ended)
		}
	}
	r := &recorder{TB: t}
	if p := Tool(r, "sh", "a shell"); p == "" || r.ended != "" {
		t.Errorf("sh: %q, ended %q", p, r.ended)
	}
}

// ShortMinimize sets -fuzzminimizetime when the command line does not.
func TestShortMinimize(t *testing.T) {
	fl := flag.Lookup("test.fuzzminimizetime")
	given := false
	flag.Visit(func(v *flag.Flag) { given = given || v == fl })
	if given {
		t.Skip("-fuzzminimizetime is on the command line")
	}
	if fl.Value.String() != "1m0s" {
		t.Fatalf("the default is %s", fl.Value)
	}
	ShortMinimize(t, "50x")
	if fl.Value.String() != "50x" {
		t.Errorf("after ShortMinimize(50x): %s", fl.Value)
	}
	ShortMinimize(t, "1s") // now set, as if on the command line: left as it is
	if fl.Value.String() != "50x" {
		t.Errorf("a value already set was changed: %s", fl.Value)
	}
}
