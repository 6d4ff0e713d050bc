package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLightBinaryDeps: the fuelsync binary links neither etcd's client (nor
// the gRPC and protobuf it brings) nor the Prometheus client, whose inits
// double its start-up; fuelsync-server links both.
func TestLightBinaryDeps(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	deps := func(pkg string) []string { return goListDeps(t, pkg) }
	heavy := []string{"go.etcd.io/", "google.golang.org/grpc", "google.golang.org/protobuf", "github.com/prometheus/"}
	for _, dep := range deps("./cmd/fuelsync") {
		for _, h := range heavy {
			if strings.HasPrefix(dep, h) {
				t.Errorf("cmd/fuelsync links %s", dep)
			}
		}
	}
	server := strings.Join(deps("./cmd/fuelsync-server"), "\n")
	for _, want := range []string{"go.etcd.io/etcd/client/v3", "github.com/prometheus/client_golang/prometheus"} {
		if !strings.Contains(server, want+"\n") {
			t.Errorf("cmd/fuelsync-server does not link %s", want)
		}
	}
}

// TestDispatchToServer builds both binaries: fuelsync runs serve, and a
// command with the state on etcd, in fuelsync-server (found beside it, or on
// PATH), as the same process; without fuelsync-server it says so in one line
// and exits 2, while serve --help and help serve still answer.
func TestDispatchToServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	both := t.TempDir()
	bin, server := buildBinaries(t, both)
	alone := t.TempDir() // fuelsync without fuelsync-server
	lone := filepath.Join(alone, "fuelsync")
	copyFile(t, bin, lone)
	emptyPath := t.TempDir()

	type result struct {
		code           int
		stdout, stderr string
	}
	runBin := func(path string, env []string, args ...string) result {
		t.Helper()
		cmd := exec.Command(path, args...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Env = append(cmd.Env, "NO_COLOR=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
	}
	noServer := []string{"PATH=" + emptyPath}

	t.Run("missing", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			what string
		}{
			{[]string{"serve", "--listen", "127.0.0.1:0"}, "serve"},
			{[]string{"--state", "etcd://127.0.0.1:1/x", "state", "show"}, "the state on etcd"},
		} {
			got := runBin(lone, noServer, c.args...)
			want := "fuelsync: " + c.what + " needs the fuelsync-server binary beside fuelsync or on PATH: go install github.com/fuelsync/fuelsync/cmd/fuelsync-server@latest\n"
			if got.code != 2 || got.stderr != want || got.stdout != "" {
				t.Errorf("fuelsync %s without fuelsync-server: exit %d, stdout %q, stderr %q; want exit 2 and %q",
					strings.Join(c.args, " "), got.code, got.stdout, got.stderr, want)
			}
		}
	})

	// A binary that was handed a command it cannot run does not hand it on.
	t.Run("no second hand-over", func(t *testing.T) {
		got := runBin(bin, []string{dispatchedEnv + "=1"}, "serve", "--listen", "127.0.0.1:0")
		want := "fuelsync: serve: this fuelsync-server was built without what it needs (the etcd backend, the Prometheus metrics)\n"
		if got.code != 2 || got.stderr != want {
			t.Errorf("exit %d, stderr %q; want exit 2 and %q", got.code, got.stderr, want)
		}
	})

	t.Run("help without the server", func(t *testing.T) {
		for _, args := range [][]string{{"serve", "--help"}, {"help", "serve"}} {
			got := runBin(lone, noServer, args...)
			if got.code != 0 || !strings.Contains(got.stdout, "--listen ADDR") {
				t.Errorf("fuelsync %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), got.code, got.stdout, got.stderr)
			}
		}
		got := runBin(lone, noServer, "serv")
		if got.code != 1 || !strings.Contains(got.stderr, "serve") {
			t.Errorf("fuelsync serv: exit %d, stderr %q; want a suggestion of serve", got.code, got.stderr)
		}
	})

	// A TLS file that cannot be read: only the etcd backend reads it, so its
	// error says the command ran in fuelsync-server (and needs no etcd).
	etcdArgs := []string{"--state", "etcd://127.0.0.1:1/x", "--etcd-cacert", filepath.Join(both, "no-such-ca.pem"), "state", "show"}
	for name, c := range map[string]struct {
		bin string
		env []string
	}{
		"etcd state beside":  {bin, noServer},
		"etcd state on PATH": {lone, []string{"PATH=" + both}},
	} {
		t.Run(name, func(t *testing.T) {
			got := runBin(c.bin, c.env, etcdArgs...)
			if got.code != 1 || !strings.Contains(got.stderr, "reading --etcd-cacert: open "+filepath.Join(both, "no-such-ca.pem")) {
				t.Errorf("fuelsync %s: exit %d, stderr %q; want the etcd backend's error, exit 1", strings.Join(etcdArgs, " "), got.code, got.stderr)
			}
		})
	}
	if got := runBin(server, noServer, etcdArgs...); got.code != 1 || !strings.Contains(got.stderr, "reading --etcd-cacert") {
		t.Errorf("fuelsync-server %s: exit %d, stderr %q", strings.Join(etcdArgs, " "), got.code, got.stderr)
	}

	t.Run("serve", func(t *testing.T) {
		repo := quickstartRepo(t)
		cmd := exec.Command(bin, "--repo", repo, "--workdir", filepath.Join(t.TempDir(), "wd"), "serve",
			"--listen", "127.0.0.1:0", "--log-format", "json")
		cmd.Env = append(os.Environ(), noServer...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer cmd.Process.Kill()
		base := "http://" + serveAddr(t, stderr, 20*time.Second, nil, nil)
		get := func(path string) (int, string) { return httpGet(base + path) }
		if code, body := get("/healthz"); code != 200 {
			t.Errorf("/healthz: %d %s", code, body)
		}
		// The Prometheus metrics: the server binary answers, not fuelsync.
		if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "# TYPE fuelsync_applied_serial gauge") {
			t.Errorf("/metrics: %d\n%.300s", code, body)
		}
		// The process started as fuelsync is the server (exec): a signal to
		// its pid stops the daemon, which exits 0.
		stopServe(t, cmd)
	})
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}

// A dispatched fuelsync-server takes the dispatch mark out of its environment:
// the processes it starts (hooks that run fuelsync) may dispatch again.
func TestDispatchedNotInherited(t *testing.T) {
	t.Setenv(dispatchedEnv, "1")
	defer func() { dispatched = false }()
	takeDispatched()
	if !dispatched {
		t.Error("the mark was not read")
	}
	if v, ok := os.LookupEnv(dispatchedEnv); ok {
		t.Errorf("%s=%s is still in the environment children inherit", dispatchedEnv, v)
	}
}
