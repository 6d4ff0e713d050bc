//go:build linux

package cli

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// helpOrder is the order TestHelpExamples runs the help pages' examples in, as
// a newcomer meets them: reads before edits, serve before the pages that talk
// to it (status --server, approve --server, agent-token, agent, deploy,
// trigger); the agent's runs the run serve starts after the apply, deploy's
// and retry's runs of node-1 are ended by its agent, deploy stop stops one.
var helpOrder = []string{"version", "validate", "components", "render", "explain", "tags", "tags list", "roles", "roles list",
	"plan", "apply", "diff", "completion", "capabilities", "capabilities find", "capabilities summary",
	"tags assign", "tags unassign", "tags create", "tags update", "tags delete", "roles assign", "roles unassign",
	"plugin check", "plugin create", "plugin", "state", "state show", "state pull", "state push",
	"watch", "serve", "status", "approve", "wait", "agent-token", "agent",
	"deploy", "deploy stop", "deploy retry", "deploy status", "trigger"}

// TestHelpExamples runs the examples of every help page, as printed, where
// they are documented to run: with bash, from the root of a fresh clone of
// this repository after the README's quick start (afterQuickStart: /tmp is a
// scratch directory, bin/ of the clone first on PATH), the pages in
// helpOrder. Each must exit 0 (diff: 1, changes). The daemons (watch, serve,
// an agent without --once) are started, seen at work (a reconcile; serve
// ready; a run reported) and stopped with SIGINT, which must end them with
// status 0; serve runs on until the last page, for the pages that talk to it.
// 127.0.0.1:8080 is a free port. Before approve --server, the test waits until
// serve says the cluster awaits approval, as the page says to.
func TestHelpExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every help example in a clone, serve and an agent among them")
	}
	t.Parallel()
	testenv.Tool(t, "openssl", "serve's help page makes its secrets with it: apt-get install openssl")
	for path := range helpTable {
		if !slices.Contains(helpOrder, path) {
			t.Errorf("help page %q is not in helpOrder", path)
		}
	}
	r := &exampleRunner{n: afterQuickStart(t), ports: freePorts{}}
	defer r.stopServe(t)
	for _, path := range helpOrder {
		var out bytes.Buffer
		if code := run(append([]string{"fuelsync", "help"}, strings.Fields(path)...), &out, io.Discard); code != 0 {
			t.Fatalf("fuelsync help %s: exit %d", path, code)
		}
		_, examples, ok := strings.Cut(out.String(), "\nEXAMPLES:\n")
		if !ok {
			t.Errorf("fuelsync help %s: no examples", path)
			continue
		}
		examples, _, _ = strings.Cut(examples, "\n\n")
		for _, line := range strings.Split(examples, "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				r.run(t, path, line)
			}
		}
	}
	if r.ran < 60 {
		t.Errorf("ran %d examples", r.ran)
	}
}

// exampleRunner runs help examples in a newcomer's clone.
type exampleRunner struct {
	n     newcomer
	ports freePorts
	ran   int
	serve *daemon // the serve of serve's page, until the end
}

// script is line as it runs here: /tmp and the documented ports moved.
func (r *exampleRunner) script(t *testing.T, line string) string {
	return r.ports.move(t, r.n.moveTmp(line))
}

func (r *exampleRunner) run(t *testing.T, page, line string) {
	t.Helper()
	r.ran++
	words := strings.Fields(line)
	script := r.script(t, line)
	if words[0] == "fuelsync" {
		switch {
		case words[1] == "serve":
			if d := r.startDaemon(t, page, line, script, nil); d != nil {
				r.serve = d
			}
			return
		case words[1] == "watch":
			if d := r.startDaemon(t, page, line, script, regexp.MustCompile(`msg=reconcile `)); d != nil {
				d.stop(t)
			}
			return
		case words[1] == "agent" && !slices.Contains(words, "--once"):
			if d := r.startDaemon(t, page, line, script, regexp.MustCompile(`msg="agent: reported" .*status=succeeded`)); d != nil {
				d.stop(t)
			}
			return
		case words[1] == "approve" && slices.Contains(words, "--server"):
			r.waitAwaiting(t, script)
		}
	}
	want := 0
	if len(words) > 1 && words[0] == "fuelsync" && words[1] == "diff" {
		want = 1 // changes
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir, cmd.Env = r.n.clone, r.n.env()
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != want {
		t.Errorf("%s (from fuelsync help %s): exit %d (%v), want %d\n%s", line, page, code, err, want, out)
	}
}

// daemon is a watch, serve or agent of an example, running.
type daemon struct {
	line string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// startDaemon starts script in the background and waits until it logs a line
// matching seen (nil: for serve, until its /readyz answers 200); nil when it
// ended or did not get there within a minute.
func (r *exampleRunner) startDaemon(t *testing.T, page, line, script string, seen *regexp.Regexp) *daemon {
	t.Helper()
	d := &daemon{line: line, cmd: exec.Command("bash", "-c", "exec "+script), log: &syncBuffer{}, done: make(chan struct{})}
	d.cmd.Dir, d.cmd.Env = r.n.clone, r.n.env()
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() { syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL); <-d.done })
	ready := func() bool { return seen != nil && seen.MatchString(d.log.String()) }
	if seen == nil {
		addr := listenAddr(script)
		ready = func() bool { code, _ := httpGet("http://" + addr + "/readyz"); return code == 200 }
	}
	deadline := time.Now().Add(time.Minute)
	for !ready() {
		select {
		case <-d.done:
			t.Errorf("%s (from fuelsync help %s): ended at once, exit %d\n%s", line, page, d.cmd.ProcessState.ExitCode(), d.log.String())
			return nil
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Errorf("%s (from fuelsync help %s): not at work within a minute\n%s", line, page, d.log.String())
			return nil
		}
	}
	return d
}

// stop sends SIGINT; the daemon must end with status 0 within 30 s.
func (d *daemon) stop(t *testing.T) {
	t.Helper()
	d.cmd.Process.Signal(os.Interrupt)
	select {
	case <-d.done:
		if code := d.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("%s: exit %d after SIGINT\n%s", d.line, code, d.log.String())
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s: still running 30 s after SIGINT\n%s", d.line, d.log.String())
	}
}

func (r *exampleRunner) stopServe(t *testing.T) {
	if r.serve != nil {
		r.serve.stop(t)
	}
}

// waitAwaiting waits until the serve of script's --server says the cluster of
// its --cluster awaits approval (read with its --api-token-file).
func (r *exampleRunner) waitAwaiting(t *testing.T, script string) {
	t.Helper()
	flag := func(name string) string {
		m := regexp.MustCompile(`--` + name + `[ =](\S+)`).FindStringSubmatch(script)
		if m == nil {
			t.Fatalf("%s: no --%s", script, name)
		}
		return m[1]
	}
	file := flag("api-token-file")
	if !filepath.IsAbs(file) {
		file = filepath.Join(r.n.clone, file)
	}
	token, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	url := flag("server") + "/api/v1/clusters/" + flag("cluster")
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.Contains(body, []byte(`"status": "awaiting_approval"`)) {
				return
			}
		}
		if time.Now().After(deadline) {
			log := ""
			if r.serve != nil {
				log = r.serve.log.String()
			}
			t.Fatalf("%s: serve does not say the cluster awaits approval within a minute\n%s", script, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// listenAddr is the --listen of a serve command line.
func listenAddr(script string) string {
	if m := regexp.MustCompile(`--listen[ =](\S+)`).FindStringSubmatch(script); m != nil {
		return m[1]
	}
	return "127.0.0.1:8080"
}

// syncBuffer is a bytes.Buffer safe for a process's output and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
