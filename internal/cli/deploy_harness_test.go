package cli

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/internal/mapfs"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/reports"
)

// The deployment tests' harness: the mitaka release with the seven-node
// cluster of testdata/deploy/ha7.yaml in a git repository, a real serve,
// one real agent process per node (and master), puppet and every other
// task type run by a recorder that logs each start and end and fails where
// told.

// ha7Nodes are the nodes of the cluster, master included.
var ha7Nodes = []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6", "node-7", "master"}

// recorderScript logs "start|end NODE TASK UNIXMICRO [rc]" to $LOG, and fails
// a task where $WORK/fail-NODE-TASK exists.
// (bash: its clock is a builtin, so that a task costs one process).
const recorderScript = `#!/bin/bash
echo "start $NODE $FUELSYNC_TASK_ID ${EPOCHREALTIME/./}" >> "$LOG"
rc=0
[ -e "$FAILDIR/fail-$NODE-$FUELSYNC_TASK_ID" ] && rc=1
[ -e "$FAILDIR/slow-$NODE-$FUELSYNC_TASK_ID" ] && sleep 2
echo "end $NODE $FUELSYNC_TASK_ID ${EPOCHREALTIME/./} $rc" >> "$LOG"
exit $rc
`

type deployHarness struct {
	t                        *testing.T
	dir, repo, wd, root, log string
	secret, token, recorder  string
	serveArgs                []string
	serve                    *exec.Cmd
	base                     string
	client                   *api.Client
	mu                       sync.Mutex
	agents                   map[string]*exec.Cmd
	exited                   map[*exec.Cmd]chan struct{} // closed when the process ended
}

// newDeployHarness writes the repository, the secrets, the recorder and
// the failure markers (node/task, each) of a test.
func newDeployHarness(t *testing.T, fail ...string) *deployHarness {
	return newDeployHarnessWith(t, nil, fail...)
}

// newDeployHarnessWith is newDeployHarness with more files in the
// repository (fuelsync.yaml's deploy: manual, say).
func newDeployHarnessWith(t *testing.T, extra map[string]string, fail ...string) *deployHarness {
	t.Helper()
	testenv.Tool(t, "bash", "apt-get install bash")
	dir := t.TempDir()
	h := &deployHarness{t: t, dir: dir, repo: filepath.Join(dir, "repo"), wd: filepath.Join(dir, "wd"), root: filepath.Join(dir, "root"),
		log: filepath.Join(dir, "calls.log"), secret: filepath.Join(dir, "secret"), token: filepath.Join(dir, "token"),
		recorder: filepath.Join(dir, "record"), agents: map[string]*exec.Cmd{}, exited: map[*exec.Cmd]chan struct{}{}}
	files, err := mapfs.Read(filepath.Join("..", "..", "examples", "fuel-mitaka"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range files {
		if strings.HasPrefix(name, "clusters/") {
			delete(files, name)
		}
	}
	spec, err := os.ReadFile(filepath.Join("testdata", "deploy", "ha7.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files["clusters/ha7.yaml"] = &fstest.MapFile{Data: spec}
	for name, data := range extra {
		files[name] = &fstest.MapFile{Data: []byte(data)}
	}
	if err := repogen.WriteDir(files, h.repo); err != nil {
		t.Fatal(err)
	}
	if _, err := gitCommit(h.repo, "mitaka, seven nodes"); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{h.secret: "s3cret\n", h.token: "tok\n", h.recorder: recorderScript} {
		if err := os.WriteFile(name, []byte(data), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fail {
		node, task, _ := strings.Cut(f, "/")
		if err := os.WriteFile(filepath.Join(dir, "fail-"+node+"-"+task), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(h.root, 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

// slow makes node/task take two seconds.
func (h *deployHarness) slow(key string) {
	node, task, _ := strings.Cut(key, "/")
	if err := os.WriteFile(filepath.Join(h.dir, "slow-"+node+"-"+task), nil, 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// running says whether node/task runs in run.
func running(run *api.Run, key string) bool {
	node, task, _ := strings.Cut(key, "/")
	for _, n := range run.Nodes {
		for _, tk := range n.Tasks {
			if n.Name == node && tk.ID == task {
				return tk.Status == api.TaskRunning
			}
		}
	}
	return false
}

// startServe starts serve (again), with extra flags.
func (h *deployHarness) startServe(extra ...string) {
	t := h.t
	t.Helper()
	args := append([]string{"--repo", h.repo, "--workdir", h.wd, "serve", "--listen", "127.0.0.1:0", "--interval", "1h",
		"--log-format", "json", "--agent-secret-file", h.secret, "--api-token-file", h.token, "--agent-heartbeat", "1s"}, extra...)
	if h.base != "" {
		u, _ := url.Parse(h.base)
		args[slices.Index(args, "127.0.0.1:0")] = u.Host // the same address: the agents come back
	}
	cmd := fuelsyncCmd(args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	h.serve = cmd
	h.base = "http://" + serveAddr(t, stderr, 30*time.Second, nil, func() { cmd.Wait(); close(exited) })
	h.exited[cmd] = exited
	u, _ := url.Parse(h.base)
	h.client = &api.Client{Base: u, Token: "tok"}
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
}

// startRun starts a run, once serve applied the cluster.
func (h *deployHarness) startRun(req *api.StartRun) *api.Run {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		run, err := h.client.StartRun(context.Background(), "ha7", req)
		if err == nil {
			return run
		}
		if code := api.Code(err); (code != 404 && code != 503) || time.Now().After(deadline) {
			h.t.Fatalf("starting a run: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killServe SIGKILLs serve and waits for it to go.
func (h *deployHarness) killServe() {
	h.serve.Process.Kill()
	<-h.exited[h.serve]
}

// startAgent starts node's agent.
func (h *deployHarness) startAgent(node string) *exec.Cmd {
	t := h.t
	tok := filepath.Join(h.dir, node+".token")
	if err := os.WriteFile(tok, []byte(reports.Token([]byte("s3cret"), "ha7", node)), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"agent", "--server", h.base, "--cluster", "ha7", "--node", node, "--token-file", tok,
		"--state-dir", filepath.Join(h.dir, "agents", node), "--wait", "5s", "--root", h.root, "--puppet", h.recorder}
	for _, typ := range []string{"shell", "upload_file", "copy_files", "sync", "reboot"} {
		args = append(args, "--exec", typ+"="+h.recorder)
	}
	cmd := fuelsyncCmd(args...)
	cmd.Env = append(cmd.Env, "NODE="+node, "LOG="+h.log, "FAILDIR="+h.dir)
	logf, err := os.Create(filepath.Join(h.dir, "agent-"+node+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(exited) }()
	h.mu.Lock()
	h.agents[node] = cmd
	h.exited[cmd] = exited
	h.mu.Unlock()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	return cmd
}

// killAgent SIGKILLs node's agent and waits for it to go.
func (h *deployHarness) killAgent(node string) {
	h.mu.Lock()
	cmd := h.agents[node]
	h.mu.Unlock()
	cmd.Process.Kill()
	<-h.exited[cmd]
}

// waitRun waits for run id to end (or for what until says), and returns it.
func (h *deployHarness) waitRun(id string, timeout time.Duration, until func(*api.Run) bool) *api.Run {
	t := h.t
	t.Helper()
	if until == nil {
		until = func(r *api.Run) bool { return r.Status != api.RunRunning && r.Status != api.RunStopping }
	}
	deadline := time.Now().Add(timeout)
	var last *api.Run
	var err error
	for time.Now().Before(deadline) {
		last, err = h.client.Run(context.Background(), "ha7", id)
		if err == nil && until(last) {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("run %s of ha7: after %v: %v; last: %s %v, stopped %q\n%s", id, timeout, err, last.Status, last.Counts, last.Reason, h.agentLogs())
	}
	t.Fatalf("run %s of ha7: after %v: %v\n%s", id, timeout, err, h.agentLogs())
	return nil
}

// agentLogs are the end of every agent's log (for a failure's message).
func (h *deployHarness) agentLogs() string {
	var b strings.Builder
	for _, n := range ha7Nodes {
		data, _ := os.ReadFile(filepath.Join(h.dir, "agent-"+n+".log"))
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		fmt.Fprintf(&b, "== %s\n%s\n", n, strings.Join(lines[max(0, len(lines)-5):], "\n"))
	}
	return b.String()
}

// call is a task's run as the recorder logged it: its first start and last
// end (retries in between), and how many starts.
type call struct {
	start, end int64
	starts     int
	failed     bool
}

// calls reads the recorder's log: node/task → its call.
func (h *deployHarness) calls() map[string]*call {
	t := h.t
	f, err := os.Open(h.log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*call{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 {
			t.Fatalf("recorder log: %q", sc.Text())
		}
		key := fs[1] + "/" + fs[2]
		ts, _ := strconv.ParseInt(fs[3], 10, 64)
		c := out[key]
		if c == nil {
			c = &call{start: ts}
			out[key] = c
		}
		switch fs[0] {
		case "start":
			c.starts++
		case "end":
			c.end, c.failed = ts, len(fs) > 4 && fs[4] != "0"
		}
	}
	return out
}
