//go:build linux

package cli

import (
	"bytes"
	"context"
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

// docBlock is one ```sh block of a page and the plain ``` block right after
// it, its output ("" when none is shown).
type docBlock struct {
	script, want string
	line         int
}

// docShellBlocks reads the ```sh blocks of a Markdown page, each with the output
// block that follows it directly (nothing but blank lines between). Blocks of
// other languages, and plain blocks that follow no sh block, are not run.
func docShellBlocks(t *testing.T, text string) []docBlock {
	t.Helper()
	fence := regexp.MustCompile("(?ms)^```([a-z]*)\n(.*?)^```\n")
	var blocks []docBlock
	prevEnd := -1
	for _, m := range fence.FindAllStringSubmatchIndex(text, -1) {
		lang, body := text[m[2]:m[3]], text[m[4]:m[5]]
		switch {
		case lang == "sh":
			blocks = append(blocks, docBlock{script: body, line: strings.Count(text[:m[0]], "\n") + 1})
		case lang == "" && len(blocks) > 0 && prevEnd >= 0 && strings.TrimSpace(text[prevEnd:m[0]]) == "" && blocks[len(blocks)-1].want == "":
			blocks[len(blocks)-1].want = body
		}
		prevEnd = -1
		if lang == "sh" {
			prevEnd = m[1]
		}
	}
	return blocks
}

// TestProductionDoc runs the shell blocks of docs/production.md, in order, as an
// operator would paste them on one machine: fuelsync and fuelsync-server are
// this test binary, /srv, /etc/fuelsync, /var/lib/fuelsync, /backup and /tmp
// are directories of a scratch directory, and every 127.0.0.1 port is a free
// one. Each block must exit 0, and print the output block shown after it. The
// processes a block starts in the background (serve, etcd) are stopped with
// its process group.
func TestProductionDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("starts serve, etcd and three replicas")
	}
	for tool, pkg := range map[string]string{"bash": "bash", "git": "git", "curl": "curl", "jq": "jq", "openssl": "openssl",
		"etcd": "etcd-server", "etcdctl": "etcd-client", "rsync": "rsync"} {
		testenv.Tool(t, tool, "docs/production.md runs it: apt-get install "+pkg)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "docs", "production.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := docShellBlocks(t, string(src))
	if len(blocks) < 6 {
		t.Fatalf("only %d sh blocks in docs/production.md", len(blocks))
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]string{"fuelsync": "1", ServerBinary: "server"} {
		wrapper := "#!/bin/sh\nFUELSYNC_RUN_MAIN=" + mode + " exec '" + os.Args[0] + "' \"$@\"\n"
		if err := os.WriteFile(filepath.Join(bin, name), []byte(wrapper), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(examples, filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	scratch := filepath.Join(dir, "root")
	moves := []string{"/var/lib/fuelsync", "/etc/fuelsync", "/backup", "/srv", "/tmp"}
	for _, m := range moves {
		if err := os.MkdirAll(scratch+m, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ports := map[string]string{}
	portRE := regexp.MustCompile(`127\.0\.0\.1:(\d+)`)
	pathRE := regexp.MustCompile(`(^|[^\w/.])(/var/lib/fuelsync|/etc/fuelsync|/backup|/srv|/tmp)\b`)
	rewrite := func(s string) string {
		s = pathRE.ReplaceAllString(s, "${1}"+scratch+"${2}")
		return portRE.ReplaceAllStringFunc(s, func(hostPort string) string {
			if p, ok := ports[hostPort]; ok {
				return p
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			p := ln.Addr().String()
			ln.Close()
			ports[hostPort] = p
			return p
		})
	}
	unrewrite := func(s string) string {
		s = strings.ReplaceAll(s, scratch, "")
		for doc, real := range ports {
			s = strings.ReplaceAll(s, real, doc)
		}
		return s
	}

	for _, b := range blocks {
		script := rewrite(b.script)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-eo", "pipefail", "-c", script)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
			"NO_COLOR=1", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		cmd.WaitDelay = 10 * time.Second
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		err := cmd.Run()
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what it left running
		}
		cancel()
		got := unrewrite(out.String())
		if err != nil {
			t.Fatalf("docs/production.md:%d: %v after %v\n%s\nprints:\n%s", b.line, err, time.Since(start).Round(time.Millisecond), b.script, got)
		}
		if b.want != "" && !matchOutput(b.want, got) {
			t.Errorf("docs/production.md:%d:\n%s\nprints:\n%s\nthe page shows:\n%s", b.line, b.script, got, b.want)
		}
		t.Logf("docs/production.md:%d: %v", b.line, time.Since(start).Round(time.Millisecond))
	}
	if len(ports) == 0 {
		t.Error("no port was replaced: the page's serve example is gone?")
	}
}
