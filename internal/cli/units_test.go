//go:build linux

package cli

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// unitService is what the test takes of a systemd unit's [Service] section.
type unitService struct {
	name                string
	environmentFile     string
	credentials         [][2]string // LoadCredential=NAME:PATH
	stateDir, directory string      // StateDirectory, WorkingDirectory
	execStart           []string    // ExecStart's words, its lines joined
}

// readUnitService reads deploy/systemd/NAME.
func readUnitService(t *testing.T, name string) unitService {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "deploy", "systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	u := unitService{name: name}
	text := strings.ReplaceAll(string(data), "\\\n", " ") // continuation lines
	for _, line := range strings.Split(text, "\n") {
		key, value, ok := strings.Cut(line, "=")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		switch key {
		case "EnvironmentFile":
			u.environmentFile = value
		case "LoadCredential":
			n, p, _ := strings.Cut(value, ":")
			u.credentials = append(u.credentials, [2]string{n, p})
		case "StateDirectory":
			u.stateDir = value
		case "WorkingDirectory":
			u.directory = value
		case "ExecStart":
			u.execStart = strings.Fields(value)
		}
	}
	if len(u.execStart) == 0 || u.environmentFile == "" || u.stateDir == "" {
		t.Fatalf("%s: no ExecStart, EnvironmentFile or StateDirectory", name)
	}
	return u
}

// unitPaths moves the paths the units name into root: /usr/local/bin/ is
// bin, /etc/, /var/lib/ and /usr/local/lib/ are directories of root.
func unitPaths(root, bin, s string) string {
	s = strings.ReplaceAll(s, "/usr/local/bin/", bin+"/")
	return regexp.MustCompile(`(^|[\s=:])(/etc/|/var/lib/|/usr/local/lib/)`).ReplaceAllString(s, "${1}"+root+"${2}")
}

// command is what systemd would start for u: ExecStart with the variables
// of its EnvironmentFile and %d (the directory of its credentials, copied
// there as LoadCredential says) replaced, in its WorkingDirectory, with the
// environment systemd gives it (STATE_DIRECTORY, CREDENTIALS_DIRECTORY).
func (u unitService) command(t *testing.T, root, bin string) *exec.Cmd {
	t.Helper()
	env := map[string]string{}
	data, err := os.ReadFile(unitPaths(root, bin, u.environmentFile))
	if err != nil {
		t.Fatalf("%s: EnvironmentFile: %v", u.name, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	creds := filepath.Join(root, "run", "credentials", u.name)
	if err := os.MkdirAll(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, c := range u.credentials {
		data, err := os.ReadFile(unitPaths(root, bin, c[1]))
		if err != nil {
			t.Fatalf("%s: LoadCredential=%s:%s: %v", u.name, c[0], c[1], err)
		}
		if err := os.WriteFile(filepath.Join(creds, c[0]), data, 0o400); err != nil {
			t.Fatal(err)
		}
	}
	var args []string
	for _, w := range u.execStart {
		if v, ok := strings.CutPrefix(w, "$"); ok && !strings.HasPrefix(v, "{") {
			args = append(args, strings.Fields(env[v])...) // $VAR: its words, as systemd splits it
			continue
		}
		w = regexp.MustCompile(`\$\{(\w+)\}`).ReplaceAllStringFunc(w, func(v string) string { return env[v[2:len(v)-1]] })
		args = append(args, unitPaths(root, bin, strings.ReplaceAll(w, "%d", creds)))
	}
	state := filepath.Join(root, "var", "lib", u.stateDir)
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = unitPaths(root, bin, u.directory)
	cmd.Env = append(os.Environ(), "STATE_DIRECTORY="+state, "CREDENTIALS_DIRECTORY="+creds, "NO_COLOR=1")
	return cmd
}

// TestShippedUnitsTogether brings up the command lines of the shipped units,
// deploy/systemd/fuelsync-serve.service and fuelsync-agent.service, as their
// ExecStart say, with the files docs/production.md and docs/agent.md have the
// operator create (the secrets and token in /etc/fuelsync, serve.env,
// agent.env, the node's token made with serve's agent secret): serve
// reconciles, and the agent's report is accepted. /etc, /var/lib and
// /usr/local are directories of a scratch directory; fuelsync and
// fuelsync-server are this test binary.
func TestShippedUnitsTogether(t *testing.T) {
	if testing.Short() {
		t.Skip("runs serve and an agent")
	}
	t.Parallel()
	root := t.TempDir()
	bin := filepath.Join(root, "usr", "local", "bin")
	etc := filepath.Join(root, "etc", "fuelsync")
	for _, d := range []string{bin, etc} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeBinaries(t, bin)
	// docs/production.md: openssl rand -hex 32 > /etc/fuelsync/… and serve.env.
	for _, name := range []string{"webhook-secret", "api-token", "agent-secret"} {
		b := make([]byte, 32)
		rand.Read(b)
		if err := os.WriteFile(filepath.Join(etc, name), []byte(hex.EncodeToString(b)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	repo := quickstartRepo(t)
	if err := os.WriteFile(filepath.Join(etc, "serve.env"), []byte("FUELSYNC_REPO="+repo+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	serve := readUnitService(t, "fuelsync-serve.service").command(t, root, bin)
	for i, a := range serve.Args {
		if a == "--listen" { // a free port instead of 8080
			serve.Args[i+1] = "127.0.0.1:0"
		}
	}
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { serve.Process.Kill(); serve.Wait() })
	var log strings.Builder
	var mu sync.Mutex
	base := "http://" + serveAddr(t, stderr, 30*time.Second, func(l string) { mu.Lock(); log.WriteString(l + "\n"); mu.Unlock() }, nil)
	serveLog := func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
	waitFor(t, 60*time.Second, "serve ready", serveLog, func() bool { code, _ := httpGet(base + "/readyz"); return code == 200 })
	shippedAgentReports(t, root, bin, base, serveLog)
}

// shippedAgentReports brings up fuelsync-agent.service's command line for
// node-1 of demo against serve at base, as docs/agent.md installs it: the
// node's token made with fuelsync agent-token where serve's agent secret is,
// agent.env naming serve, the node and the agent's flags. It waits until
// the agent ran a task of the run serve started and serve accepted its
// report.
func shippedAgentReports(t *testing.T, root, bin, base string, serveLog func() string) {
	t.Helper()
	etc := filepath.Join(root, "etc", "fuelsync")
	token, err := exec.Command(filepath.Join(bin, "fuelsync"), "agent-token", "--cluster", "demo", "--node", "node-1",
		"--agent-secret-file", filepath.Join(etc, "agent-secret")).Output()
	if err != nil {
		t.Fatalf("agent-token: %v", err)
	}
	if err := os.WriteFile(filepath.Join(etc, "agent-token"), token, 0o600); err != nil {
		t.Fatal(err)
	}
	// echo plays puppet, and shell tasks print a word, as in the README.
	env := "FUELSYNC_SERVER=" + base + "\nFUELSYNC_CLUSTER=demo\nFUELSYNC_NODE=node-1\nFUELSYNC_AGENT_FLAGS=--puppet echo --exec shell=echo\n"
	if err := os.WriteFile(filepath.Join(etc, "agent.env"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := readUnitService(t, "fuelsync-agent.service").command(t, root, bin)
	var out strings.Builder
	var mu sync.Mutex
	pr, pw := io.Pipe()
	agent.Stdout, agent.Stderr = pw, pw
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			mu.Lock()
			out.WriteString(sc.Text() + "\n")
			mu.Unlock()
		}
	}()
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { agent.Process.Kill(); agent.Wait(); pw.Close() })
	logs := func() string {
		mu.Lock()
		defer mu.Unlock()
		return "the agent's log:\n" + out.String() + "serve's log:\n" + serveLog()
	}
	// The run serve started after the apply gives node-1 its first tasks
	// (the rest wait for the other controllers, which have no agent here).
	waitFor(t, 60*time.Second, "a task of node-1 run and its report accepted", logs, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return regexp.MustCompile(`msg="agent: reported" run=\d+ task=\S+ status=succeeded`).MatchString(out.String())
	})
}

// waitFor polls cond every 100 ms until it holds, or fails the test after
// limit with what and logs().
func waitFor(t *testing.T, limit time.Duration, what string, logs func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v\n%s", what, limit, logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
