package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// quickStartStep is one command block of the README's quick start and the output
// block shown after it ("" when none is shown).
type quickStartStep struct {
	script, want string
}

// readmeQuickStart reads the fenced blocks of the README's "Quick start" section:
// each ```sh block is a step, and a plain ``` block right after it is its output.
func readmeQuickStart(t *testing.T) []quickStartStep {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	start := strings.Index(text, "\n## Quick start")
	if start < 0 {
		t.Fatal("README.md has no Quick start section")
	}
	text = text[start+1:]
	if end := strings.Index(text, "\n## "); end >= 0 {
		text = text[:end]
	}
	fence := regexp.MustCompile("(?ms)^```(sh)?\n(.*?)^```\n")
	var steps []quickStartStep
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		switch {
		case m[1] == "sh":
			steps = append(steps, quickStartStep{script: m[2]})
		case len(steps) > 0 && steps[len(steps)-1].want == "":
			steps[len(steps)-1].want = m[2]
		default:
			t.Fatalf("an output block with no command before it:\n%s", m[2])
		}
	}
	return steps
}

// matchOutput compares got with the output the README shows: a line "..." stands
// for any number of lines, a line ending in "..." for any end of that line, and
// a 12-digit hex commit id for any other.
func matchOutput(want, got string) bool {
	var re strings.Builder
	re.WriteString(`\A`)
	sha := regexp.MustCompile(`\b[0-9a-f]{12}\b`)
	for _, line := range strings.SplitAfter(want, "\n") {
		if strings.TrimSpace(line) == "..." {
			re.WriteString(`(?:.*\n)*?`)
			continue
		}
		if head, ok := strings.CutSuffix(line, "...\n"); ok { // the rest of the line
			re.WriteString(regexp.QuoteMeta(head) + `.*\n`)
			continue
		}
		parts := sha.Split(line, -1)
		for i, p := range parts {
			if i > 0 {
				re.WriteString(`[0-9a-f]{12}`)
			}
			re.WriteString(regexp.QuoteMeta(p))
		}
	}
	if !strings.HasSuffix(want, "...\n") {
		re.WriteString(`\z`)
	}
	return regexp.MustCompile(re.String()).MatchString(got)
}

// TestREADMEQuickStart runs the README's quick start, command by command, as a
// reader would paste it (bin/fuelsync is this test binary, /tmp/qs a temporary
// directory), and checks each shown output. `make build` is left out: the test
// binary is the build.
func TestREADMEQuickStart(t *testing.T) {
	for _, tool := range []string{"bash", "git"} {
		testenv.Tool(t, tool, "the quick start needs it: apt-get install "+tool)
	}
	steps := readmeQuickStart(t)
	if len(steps) < 9 {
		t.Fatalf("only %d commands in the quick start", len(steps))
	}

	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	wrapper := "#!/bin/sh\nFUELSYNC_RUN_MAIN=1 exec '" + os.Args[0] + "' \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", "fuelsync"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(dir, "scratch")
	if err := os.Mkdir(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, st := range steps {
		if strings.HasPrefix(st.script, "make ") {
			continue
		}
		script := strings.ReplaceAll(st.script, "/tmp/", scratch+"/")
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, _ := cmd.CombinedOutput()
		ran++
		got := strings.ReplaceAll(string(out), scratch+"/", "/tmp/")
		if st.want != "" && !matchOutput(st.want, got) {
			t.Errorf("README quick start:\n%s\nprints:\n%s\nthe README shows:\n%s", st.script, got, st.want)
		}
	}
	if ran < 8 {
		t.Errorf("only %d quick start commands ran", ran)
	}
}

// TestREADMEMakeBuild: the lines the README shows for `make build` are what
// make runs (make -n), the version and commit aside (shown as ...).
func TestREADMEMakeBuild(t *testing.T) {
	testenv.Tool(t, "make", "the README's make build: apt-get install make")
	var want string
	for _, st := range readmeQuickStart(t) {
		if strings.TrimSpace(st.script) == "make build" {
			want = st.want
		}
	}
	if want == "" {
		t.Fatal("the quick start shows no output of make build")
	}
	out, err := exec.Command("make", "-n", "--no-print-directory", "-C", filepath.Join("..", ".."), "build").Output()
	if err != nil {
		t.Fatalf("make -n build: %v", err)
	}
	got := regexp.MustCompile(`(main\.(version|commit))=[^\s"]+`).ReplaceAllString(string(out), "${1}=...")
	if got != want {
		t.Errorf("make -n build prints:\n%s\nthe README shows:\n%s", got, want)
	}
}
