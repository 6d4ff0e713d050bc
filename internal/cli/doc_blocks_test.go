//go:build linux

package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// A doc page's fenced blocks are of four kinds, by their language:
//
//   - sh or bash: commands, run in order by TestDocBlocks, unless the line
//     before the fence is <!-- not run: REASON --> (a reason is required:
//     which test covers it instead, or what it needs that a test machine has
//     not);
//   - no language, right after an sh block (blank lines between at most):
//     that block's output, which its run must print (matchOutput: "..."
//     stands for any lines);
//   - any other language (text, yaml, json, hcl, nginx, ini): data, not run;
//   - no language anywhere else: refused, so that no command hides in a
//     block that is neither run nor marked. Indented code blocks are refused
//     too: fence them.

// docBlock is one fenced block of a page.
type docBlock struct {
	lang, body string
	line       int    // of the opening fence
	notRun     string // the reason of a <!-- not run: … --> marker
	want       string // for a shell block: the output block after it
}

// shellBlock says a block's language is one TestDocBlocks runs.
func shellBlock(lang string) bool { return lang == "sh" || lang == "bash" }

var (
	fenceLine  = regexp.MustCompile("^( *)```([a-z]*)\\s*$")
	notRunLine = regexp.MustCompile(`^\s*<!-- not run: (.*?)\s*-->\s*$`)
	listItem   = regexp.MustCompile(`^(\s*)([-*]|\d+\.) `)
)

// docBlocks reads the fenced blocks of a page, with the problems that break
// the rules above (each "line N: …").
func docBlocks(text string) ([]docBlock, []string) {
	lines := strings.Split(text, "\n")
	var blocks []docBlock
	var problems []string
	lastShell := -1 // index in blocks of the sh block an output block may follow
	for i := 0; i < len(lines); i++ {
		m := fenceLine.FindStringSubmatch(lines[i])
		if m == nil {
			if p := indentedCode(lines, i); p != "" {
				problems = append(problems, fmt.Sprintf("line %d: %s", i+1, p))
			}
			if strings.TrimSpace(lines[i]) != "" {
				lastShell = -1
			}
			continue
		}
		indent, lang := m[1], m[2]
		end := i + 1
		for end < len(lines) && lines[end] != indent+"```" {
			end++
		}
		if end == len(lines) {
			problems = append(problems, fmt.Sprintf("line %d: a fence that is not closed", i+1))
			break
		}
		var body strings.Builder
		for _, l := range lines[i+1 : end] {
			body.WriteString(strings.TrimPrefix(l, indent) + "\n")
		}
		b := docBlock{lang: lang, body: body.String(), line: i + 1}
		if i > 0 {
			if nr := notRunLine.FindStringSubmatch(lines[i-1]); nr != nil {
				b.notRun = nr[1]
				if b.notRun == "" || !shellBlock(lang) {
					problems = append(problems, fmt.Sprintf("line %d: a not-run marker needs a reason and an sh block", i+1))
				}
			}
		}
		switch {
		case lang == "" && lastShell >= 0 && blocks[lastShell].want == "":
			blocks[lastShell].want = b.body
		case lang == "":
			problems = append(problems, fmt.Sprintf("line %d: a block without a language that is not the output of an sh block: give it one (sh to run it; text, yaml, json, … for data)", i+1))
		}
		blocks = append(blocks, b)
		lastShell = -1
		if shellBlock(lang) {
			lastShell = len(blocks) - 1
		}
		i = end
	}
	return blocks, problems
}

// indentedCode says why line i of lines starts an indented code block
// (Markdown's four spaces past the text it follows, after a blank line), or "".
func indentedCode(lines []string, i int) string {
	if i == 0 || strings.TrimSpace(lines[i-1]) != "" || strings.TrimSpace(lines[i]) == "" {
		return ""
	}
	j := i - 1
	for j >= 0 && strings.TrimSpace(lines[j]) == "" {
		j--
	}
	if j < 0 {
		return ""
	}
	base := len(lines[j]) - len(strings.TrimLeft(lines[j], " "))
	if m := listItem.FindStringSubmatch(lines[j]); m != nil {
		base = len(m[0])
	}
	if len(lines[i])-len(strings.TrimLeft(lines[i], " ")) >= base+4 {
		return "an indented code block: fence it, with a language"
	}
	return ""
}

// docPages are the pages whose blocks TestDocBlocks runs: docs/ and the
// examples' READMEs.
func docPages(t *testing.T) []string {
	t.Helper()
	var pages []string
	for _, glob := range []string{"docs/*.md", "examples/*/README.md"} {
		m, err := filepath.Glob(filepath.Join("..", "..", glob))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, m...)
	}
	if len(pages) < 20 {
		t.Fatalf("%d doc pages", len(pages))
	}
	return pages
}

// TestDocBlocksMarked: every fenced block of every doc page is run, marked
// not run with a reason, the output of the block before it, or data with a
// language; no indented code block.
func TestDocBlocksMarked(t *testing.T) {
	shell := 0
	for _, page := range docPages(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks, problems := docBlocks(string(src))
		for _, p := range problems {
			t.Errorf("%s: %s", strings.TrimPrefix(page, "../../"), p)
		}
		for _, b := range blocks {
			if shellBlock(b.lang) && b.notRun == "" {
				shell++
			}
		}
	}
	if shell < 15 {
		t.Errorf("only %d blocks to run in the doc pages", shell)
	}
}

// docMoved are the system directories the doc pages' commands use, moved into
// a scratch directory of each page.
var docMoved = []string{"/var/lib/fuelsync", "/etc/fuelsync", "/backup", "/srv", "/tmp"}

// TestDocBlocks runs the shell blocks of every doc page, in order, as a reader
// would paste them on one machine in a fresh clone after the README's quick
// start (afterQuickStart; each page in a copy of that clone and of its /tmp):
// fuelsync and fuelsync-server are this test binary (bin/ of the clone, first
// on PATH), /srv, /etc/fuelsync, /var/lib/fuelsync, /backup and /tmp are
// directories of a scratch directory of the page, and every 127.0.0.1 port is
// a free one. Each block must exit 0 and print the output block shown after
// it. What a block starts in the background (serve, etcd) runs on for the
// page's next blocks, and is stopped with the page.
func TestDocBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every doc page's commands: serve, etcd, replicas")
	}
	t.Parallel() // and its pages: they mostly wait on what they start
	for tool, pkg := range map[string]string{"curl": "curl", "jq": "jq", "openssl": "openssl",
		"etcd": "etcd-server", "etcdctl": "etcd-client", "rsync": "rsync"} {
		testenv.Tool(t, tool, "the doc pages run it: apt-get install "+pkg)
	}
	n := afterQuickStart(t)
	for _, page := range docPages(t) {
		src, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		blocks, _ := docBlocks(string(src)) // TestDocBlocksMarked reports the problems
		name := strings.TrimPrefix(page, "../../")
		var run []docBlock
		for _, b := range blocks {
			if shellBlock(b.lang) && b.notRun == "" {
				run = append(run, b)
			}
		}
		if len(run) > 0 {
			t.Run(strings.ReplaceAll(name, "/", "_"), func(t *testing.T) {
				t.Parallel()
				runDocPage(t, n, name, run)
			})
		}
	}
}

// runDocPage runs a page's blocks in a copy of n.
func runDocPage(t *testing.T, n newcomer, name string, blocks []docBlock) {
	scratch := t.TempDir()
	page := newcomer{clone: filepath.Join(scratch, "fuelsync"), tmp: filepath.Join(scratch, "tmp")}
	for _, c := range [][2]string{{n.clone, page.clone}, {n.tmp, page.tmp}} {
		if out, err := exec.Command("cp", "-a", c[0], c[1]).CombinedOutput(); err != nil {
			t.Fatalf("cp -a: %v\n%s", err, out)
		}
	}
	for _, d := range docMoved {
		if err := os.MkdirAll(scratch+d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m := &docMover{root: scratch, ports: freePorts{}}
	var groups []int // the process groups of the blocks, stopped with the page
	t.Cleanup(func() {
		for _, g := range groups {
			syscall.Kill(-g, syscall.SIGKILL)
		}
	})
	for _, b := range blocks {
		out, err := os.CreateTemp(scratch, "out")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-eo", "pipefail", "-c", m.move(t, b.body))
		cmd.Dir, cmd.Env = page.clone, page.env()
		cmd.Stdout, cmd.Stderr = out, out // a file: what runs on in the background holds no pipe
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		start := time.Now()
		err = cmd.Run()
		cancel()
		if cmd.Process != nil {
			groups = append(groups, cmd.Process.Pid)
		}
		data, _ := os.ReadFile(out.Name())
		out.Close()
		got := m.back(string(data))
		if err != nil {
			t.Fatalf("%s:%d: %v after %v\n%s\nprints:\n%s", name, b.line, err, time.Since(start).Round(time.Millisecond), b.body, got)
		}
		if b.want != "" && !matchOutput(b.want, got) {
			t.Errorf("%s:%d:\n%s\nprints:\n%s\nthe page shows:\n%s", name, b.line, b.body, got, b.want)
		}
		t.Logf("%s:%d: %v", name, b.line, time.Since(start).Round(time.Millisecond))
	}
}

// docMover moves a page's system directories into root and its ports to free
// ones, and back in what the commands print.
type docMover struct {
	root  string
	ports freePorts
}

var docPathRE = regexp.MustCompile(`(^|[^\w/.-])(/var/lib/fuelsync|/etc/fuelsync|/backup|/srv|/tmp)\b`)

func (m *docMover) move(t *testing.T, s string) string {
	return m.ports.move(t, docPathRE.ReplaceAllString(s, "${1}"+m.root+"${2}"))
}

// freePorts maps the 127.0.0.1 addresses a page or help example documents to
// free ones, the same each time.
type freePorts map[string]string

var loopbackAddr = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// move replaces the documented addresses of s.
func (p freePorts) move(t *testing.T, s string) string {
	return loopbackAddr.ReplaceAllStringFunc(s, func(doc string) string {
		if a, ok := p[doc]; ok {
			return a
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		p[doc] = ln.Addr().String()
		return p[doc]
	})
}

func (m *docMover) back(s string) string {
	s = strings.ReplaceAll(s, m.root, "")
	for doc, real := range m.ports {
		s = strings.ReplaceAll(s, real, doc)
	}
	return s
}
