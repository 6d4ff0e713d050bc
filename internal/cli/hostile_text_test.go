package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/base/safetext"
	"github.com/fuelsync/fuelsync/internal/testenv"
)

// hostileName is a file name a repository can hold: a newline followed by a
// GitHub Actions workflow command, an escape sequence, a bidirectional override,
// and Markdown that would render as an image, a link and HTML.
const hostileName = "x\n::error file=README.md,line=1::INJECTED\x1b[31m\u202e ![img](evil.png) [l](javascript:alert(1)) <img src=x onerror=alert(1)> `tick`.yaml"

// hostileEscaped is how the text output shows it.
const hostileEscaped = `x\n::error file=README.md,line=1::INJECTED\x1b[31m\u202e ![img](evil.png) [l](javascript:alert(1)) <img src=x onerror=alert(1)> ` + "`tick`.yaml"

// hostileRepo is the quickstart with its deployment graph read through a glob
// from a file named hostileName, with a duplicate key in it (a warning at that
// file), committed with git (go-git refuses such a name; git does not).
func hostileRepo(t *testing.T) string {
	t.Helper()
	gitBin := testenv.Tool(t, "git", "apt-get install git")
	dir := quickstartRepo(t)
	meta := filepath.Join(dir, "plugins/quickstart/metadata.yaml")
	data, err := os.ReadFile(meta)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "tasks_path: graphs/deployment.yaml", "tasks_path: 'graphs/default/*.yaml'", 1))
	if err := os.WriteFile(meta, data, 0o644); err != nil {
		t.Fatal(err)
	}
	graph, err := os.ReadFile(filepath.Join(dir, "plugins/quickstart/graphs/deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	graph = []byte(strings.Replace(string(graph), "    timeout: 3600\n", "    timeout: 3600\n    timeout: 3600\n", 1))
	if err := os.Remove(filepath.Join(dir, "plugins/quickstart/graphs/deployment.yaml")); err != nil {
		t.Fatal(err)
	}
	revWriteFile(t, dir, "plugins/quickstart/graphs/default/"+hostileName, string(graph))
	gitAll(t, gitBin, dir, "the graph in a hostile file")
	return dir
}

// gitAll commits every change of the working tree dir with the git binary.
func gitAll(t *testing.T, gitBin, dir, msg string) {
	t.Helper()
	for _, args := range [][]string{{"add", "-A"}, {"-c", "user.name=fuelsync tests", "-c", "user.email=tests@fuelsync.invalid", "commit", "-q", "-m", msg}} {
		cmd := exec.Command(gitBin, append([]string{"-C", dir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// checkSafeLines fails when a line of out holds a character a terminal or a CI
// runner would act on, or begins like a workflow command: every line must be
// its own escape (safetext.Line).
func checkSafeLines(t *testing.T, what, out string) {
	t.Helper()
	for i, line := range strings.Split(out, "\n") {
		if safetext.Line(line) != line {
			t.Errorf("%s: line %d is not safe to print: %q", what, i+1, line)
		}
	}
}

func TestHostileTextEscaped(t *testing.T) {
	dir := hostileRepo(t)
	work := t.TempDir()
	base := []string{"--repo", dir, "--workdir", work}
	hostileFile := "plugins/quickstart/graphs/default/" + hostileEscaped

	// validate: the warning at the hostile file, in text and as annotations.
	code, stdout, stderr := revRun(t, append(base, "validate")...)
	if code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, stdout, stderr)
	}
	checkSafeLines(t, "validate", stdout+stderr)
	if !strings.Contains(stderr, hostileFile+":") {
		t.Errorf("validate does not name the file, escaped:\n%s", stderr)
	}
	_, stdout, _ = revRun(t, append(base, "validate", "--format", "github")...)
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		rest, ok := strings.CutPrefix(line, "::warning ")
		if !ok || safetext.Line(rest) != rest {
			t.Errorf("validate --format github: a line that is not one annotation: %q", line)
		}
	}

	// explain: keystone is defined in the hostile file.
	code, stdout, stderr = revRun(t, append(base, "explain", "--cluster", "demo", "--node", "node-1", "keystone")...)
	if code != 0 {
		t.Fatalf("explain: exit %d\n%s%s", code, stdout, stderr)
	}
	checkSafeLines(t, "explain", stdout+stderr)
	if !strings.Contains(stdout, hostileFile+":106\n") {
		t.Errorf("explain does not name the file, escaped:\n%s", stdout)
	}

	// plan: applied, then keystone edited in the hostile file.
	if code, stdout, stderr := revRun(t, append(base, "apply", "--auto-approve")...); code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, stdout, stderr)
	}
	name := filepath.Join(dir, "plugins/quickstart/graphs/default", hostileName)
	graph, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	graph = []byte(strings.Replace(string(graph), "    timeout: 3600\n    timeout: 3600\n", "    timeout: 3600\n    timeout: 1800\n", 1))
	if err := os.WriteFile(name, graph, 0o644); err != nil {
		t.Fatal(err)
	}
	gitAll(t, "git", dir, "keystone's timeout")
	code, stdout, stderr = revRun(t, append(base, "plan")...)
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", code, stdout, stderr)
	}
	checkSafeLines(t, "plan", stdout+stderr)
	if !strings.Contains(stdout, hostileFile+":") {
		t.Errorf("plan does not name the file, escaped:\n%s", stdout)
	}

	// diff, text and Markdown.
	code, stdout, stderr = revRun(t, append(base, "diff", "--base", "HEAD~1")...)
	if code != 1 {
		t.Fatalf("diff: exit %d, want 1 (changes)\n%s%s", code, stdout, stderr)
	}
	checkSafeLines(t, "diff", stdout+stderr)
	if !strings.Contains(stdout, hostileFile) {
		t.Errorf("diff does not name the file, escaped:\n%s", stdout)
	}
	_, stdout, _ = revRun(t, append(base, "diff", "--base", "HEAD~1", "--format", "markdown")...)
	checkSafeLines(t, "diff --format markdown", stdout)
	checkInertMarkdown(t, stdout)
	if !strings.Contains(stdout, hostileEscaped) {
		t.Errorf("diff --format markdown does not name the file:\n%s", stdout)
	}

	// An invalid head: a role with a hostile name (an error that quotes it), and
	// a node with an unknown role (an error whose detail lists the known roles,
	// the hostile one among them, as it is).
	revWriteFile(t, dir, "plugins/monitoring/node_roles.yaml", `"x\n::error file=README.md,line=1::ROLE\e[31m\u202e ![i](e.png) <img src=x> [l](http://evil)": {name: X, description: Y}
monitor: {name: Monitoring, description: Metrics., has_primary: false, weight: 100}
`)
	data, err := os.ReadFile(filepath.Join(dir, "clusters/demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	revWriteFile(t, dir, "clusters/demo.yaml", strings.Replace(string(data), "roles: [monitor]", "roles: [unheard-of]", 1))
	gitAll(t, "git", dir, "a hostile role")
	code, stdout, stderr = revRun(t, append(base, "validate")...)
	if code != 1 || !strings.Contains(stderr, `Known roles: compute, controller, monitor, storage, x`) {
		t.Fatalf("validate of the hostile role: exit %d\n%s%s", code, stdout, stderr)
	}
	checkSafeLines(t, "validate of the hostile role", stdout+stderr)

	// capabilities find prints the paths of the templates it finds.
	tht := t.TempDir()
	revWriteFile(t, tht, hostileName, "heat_template_version: pike\ncapabilities:\n  deployment: puppet\n  resource_type: OS::TripleO::Services::X\nresources: {}\n")
	code, stdout, stderr = revRun(t, "capabilities", "find", "-r", "-c", "deployment=puppet", tht)
	if code != 0 || !strings.Contains(stdout, hostileEscaped) {
		t.Errorf("capabilities find: exit %d\n%s%s", code, stdout, stderr)
	}
	checkSafeLines(t, "capabilities find", stdout+stderr)
	code, stdout, stderr = revRun(t, append(base, "diff", "--base", "HEAD~1")...)
	if code != 2 {
		t.Fatalf("diff to the hostile role: exit %d, want 2\n%s%s", code, stdout, stderr)
	}
	checkSafeLines(t, "diff to the hostile role", stdout+stderr)
	_, stdout, _ = revRun(t, append(base, "diff", "--base", "HEAD~1", "--format", "markdown")...)
	checkSafeLines(t, "diff --format markdown to the hostile role", stdout)
	checkInertMarkdown(t, stdout)
	if !strings.Contains(stdout, `::ROLE\x1b[31m\u202e ![i](e.png)`) {
		t.Errorf("diff --format markdown does not show the role's error:\n%s", stdout)
	}
}

// checkInertMarkdown fails when Markdown text outside code spans, code fences
// and HTML-escaped summaries holds what GitHub renders: an image, a link, an
// HTML tag other than fuelsync's own (details, summary, code).
func checkInertMarkdown(t *testing.T, md string) {
	t.Helper()
	var outside strings.Builder
	fence := ""
	for _, line := range strings.Split(md, "\n") {
		if fence != "" {
			if strings.TrimSpace(line) == fence {
				fence = ""
			}
			continue
		}
		if m := regexp.MustCompile("^(`{3,})").FindString(line); m != "" {
			fence = m
			continue
		}
		outside.WriteString(stripCodeSpans(line) + "\n")
	}
	text := regexp.MustCompile(`</?(details|summary|code)>`).ReplaceAllString(outside.String(), "")
	for _, bad := range []string{"![", "](", "<b>", "<", "javascript:"} {
		if strings.Contains(text, bad) {
			t.Errorf("Markdown renders repository text: %q outside code spans in\n%s", bad, text)
		}
	}
}

// stripCodeSpans removes the code spans of a line of Markdown (a run of n
// backticks up to the next run of exactly n).
func stripCodeSpans(line string) string {
	var b strings.Builder
	for i := 0; i < len(line); {
		if line[i] != '`' {
			b.WriteByte(line[i])
			i++
			continue
		}
		n := 0
		for i+n < len(line) && line[i+n] == '`' {
			n++
		}
		end := -1
		for j := i + n; j < len(line); {
			if line[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(line) && line[j+m] == '`' {
				m++
			}
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 { // no closing run: the backticks are literal
			b.WriteString(line[i : i+n])
			i += n
			continue
		}
		i = end
	}
	return b.String()
}
