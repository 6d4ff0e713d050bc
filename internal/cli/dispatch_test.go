package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/testenv"
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
	// Neither binary links hclwrite and, through it, go-cmp (whose
	// initialisation, with its regular expressions over Unicode classes, was
	// the largest of every start): specedit and scaffold write HCL themselves.
	never := []string{"github.com/hashicorp/hcl/v2/hclwrite", "github.com/google/go-cmp/"}
	for _, dep := range deps("./cmd/fuelsync") {
		for _, h := range append(heavy, never...) {
			if strings.HasPrefix(dep, h) {
				t.Errorf("cmd/fuelsync links %s", dep)
			}
		}
	}
	serverDeps := deps("./cmd/fuelsync-server")
	for _, dep := range serverDeps {
		for _, h := range never {
			if strings.HasPrefix(dep, h) {
				t.Errorf("cmd/fuelsync-server links %s", dep)
			}
		}
	}
	server := strings.Join(serverDeps, "\n")
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
			want := "fuelsync: " + c.what + " needs the fuelsync-server binary beside fuelsync or on PATH: install the two binaries of one version " +
				"(a release archive of make release holds both; from a clone: make install PREFIX=DIR, or go install ./cmd/...)\n"
			if got.code != 2 || got.stderr != want || got.stdout != "" {
				t.Errorf("fuelsync %s without fuelsync-server: exit %d, stdout %q, stderr %q; want exit 2 and %q",
					strings.Join(c.args, " "), got.code, got.stdout, got.stderr, want)
			}
		}
	})

	// A binary that was handed a command it cannot run does not hand it on.
	binIdentity := func(path string) string {
		t.Helper()
		var v struct{ Version, Commit string }
		if err := json.Unmarshal([]byte(runBin(path, nil, "--format", "json", "version").stdout), &v); err != nil {
			t.Fatal(err)
		}
		return v.Version + " (commit " + v.Commit + ")"
	}
	t.Run("no second hand-over", func(t *testing.T) {
		got := runBin(bin, []string{dispatchedEnv + "=" + binIdentity(bin)}, "serve", "--listen", "127.0.0.1:0")
		want := "fuelsync: serve: this fuelsync-server was built without what it needs (the etcd backend, the Prometheus metrics)\n"
		if got.code != 2 || got.stderr != want {
			t.Errorf("exit %d, stderr %q; want exit 2 and %q", got.code, got.stderr, want)
		}
	})

	// A fuelsync-server of another build than the fuelsync that hands it a
	// command refuses it, naming both builds.
	t.Run("another build", func(t *testing.T) {
		other := "v0.0.1 (commit 0123456789ab)"
		for _, args := range [][]string{{"serve", "--listen", "127.0.0.1:0"}, {"version"}} {
			got := runBin(server, []string{dispatchedEnv + "=" + other}, args...)
			want := "fuelsync-server: fuelsync " + other + " handed its command to " + server + ", which is fuelsync-server " + binIdentity(server) + ": install the two binaries of one version"
			if got.code != 2 || !strings.HasPrefix(got.stderr, want) || got.stdout != "" {
				t.Errorf("fuelsync-server %s from another build: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(args, " "), got.code, got.stdout, got.stderr, want)
			}
		}
		// The same build runs it.
		if got := runBin(server, []string{dispatchedEnv + "=" + binIdentity(bin)}, "version"); got.code != 0 || !strings.HasPrefix(got.stdout, "fuelsync-server ") {
			t.Errorf("fuelsync-server version from the same build: exit %d, stdout %q, stderr %q", got.code, got.stdout, got.stderr)
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
	t.Setenv(dispatchedEnv, identity())
	defer func() { dispatched = false }()
	if err := takeDispatched(); err != nil {
		t.Fatal(err.msg)
	}
	if !dispatched {
		t.Error("the mark was not read")
	}
	if v, ok := os.LookupEnv(dispatchedEnv); ok {
		t.Errorf("%s=%s is still in the environment children inherit", dispatchedEnv, v)
	}
}

// TestBuildIdentity: without -ldflags, the version and commit are those Go
// recorded (go install module@version; vcs.revision and vcs.modified of a
// build in a clone); -ldflags win; nothing known gives dev and unknown.
func TestBuildIdentity(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "-tags", Value: "x"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	for name, c := range map[string]struct {
		ldVersion, ldCommit string
		bi                  *debug.BuildInfo
		version, commit     string
	}{
		"nothing":                  {"", "", nil, "dev", "unknown"},
		"devel, no vcs":            {"", "", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev", "unknown"},
		"go install module@v1.2.3": {"", "", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3", "unknown"},
		"clone, clean": {"", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260102030405-0123456789ab"}, Settings: vcs("0123456789abcdef", "false")},
			"v0.0.0-20260102030405-0123456789ab", "0123456789abcdef"},
		"clone, modified": {"", "", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260102030405-0123456789ab+dirty"}, Settings: vcs("0123456789abcdef", "true")},
			"v0.0.0-20260102030405-0123456789ab+dirty", "0123456789abcdef (modified)"},
		"ldflags win": {"v2.0.0", "fedcba", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("0123456789abcdef", "true")}, "v2.0.0", "fedcba"},
	} {
		v, c2 := buildIdentity(c.ldVersion, c.ldCommit, c.bi)
		if v != c.version || c2 != c.commit {
			t.Errorf("%s: %q, %q; want %q, %q", name, v, c2, c.version, c.commit)
		}
	}
}

// TestVersionFromGoBuild: a binary built in a git clone without -ldflags, as
// go install ./cmd/... builds it, reports the commit Go recorded.
func TestVersionFromGoBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	testenv.Tool(t, "git", "go build records the commit with git: apt-get install git")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	// Go records the commit of a clone (a .git directory; not of a git
	// worktree, whose .git is a file): build in a clone of HEAD. -trimpath
	// lets the clone's packages come from the build cache the next time.
	clone := filepath.Join(t.TempDir(), "clone")
	if msg, err := exec.Command("git", "clone", "-q", "--shared", root, clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, msg)
	}
	bin := filepath.Join(t.TempDir(), "fuelsync")
	build := exec.Command("go", "build", "-trimpath", "-tags", buildTags, "-o", bin, "./cmd/fuelsync")
	build.Dir = clone
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if msg, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, msg)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(out), "\n")
	if !strings.HasPrefix(lines[0], "fuelsync v") || !strings.HasPrefix(lines[1], "commit: "+strings.TrimSpace(string(head))) {
		t.Errorf("fuelsync version of a go build in the clone:\n%s\nwant a module version and commit %s", out, head)
	}
}
