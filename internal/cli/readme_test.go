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
