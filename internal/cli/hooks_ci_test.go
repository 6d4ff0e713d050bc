package cli

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/mapfs"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/server"
	gitsource "github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// fuelsyncOnPath writes a `fuelsync` that runs this test binary as the CLI into
// a new directory and returns a PATH with it first.
func fuelsyncOnPath(t *testing.T) string {
	t.Helper()
	bin := t.TempDir()
	writeBinaries(t, bin)
	return bin + string(os.PathListSeparator) + os.Getenv("PATH")
}

// quickstartRepo is a git repository with examples/quickstart committed.
func quickstartRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	files, err := mapfs.Read("../../examples/quickstart")
	if err != nil {
		t.Fatal(err)
	}
	if err := repogen.WriteDir(files, dir); err != nil {
		t.Fatal(err)
	}
	if _, err := gitCommit(dir, "quickstart"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func unassignRabbitmq(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "clusters", "demo.yaml")
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data = []byte(strings.Replace(string(data), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}", 1))
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPostReceiveHook runs examples/hooks/post-receive as git would after a push:
// serve (without polling) reconciles the pushed commit because of it.
func TestPostReceiveHook(t *testing.T) {
	testenv.Tool(t, "sh", "a POSIX shell")
	dir := quickstartRepo(t)
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &gitsource.LocalSource{Path: dir}, ToolVersion: "test"}
	srv := server.New(loop, []byte("s3cret"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { loop.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; hs.Close() })
	waitUntil(t, func() bool { return loop.Status().Ready })

	unassignRabbitmq(t, dir)
	h, err := gitCommit(dir, "node-2 without rabbitmq")
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	hook := exec.Command("sh", filepath.Join("..", "..", "examples", "hooks", "post-receive"))
	hook.Stdin = strings.NewReader("0000 " + h.String() + " refs/heads/main\n")
	hook.Env = append(os.Environ(), "PATH="+fuelsyncOnPath(t), "FUELSYNC_URL=http://"+ln.Addr().String(), "FUELSYNC_WEBHOOK_SECRET_FILE="+secret)
	if out, err := hook.CombinedOutput(); err != nil || !strings.Contains(string(out), "202 Accepted") {
		t.Fatalf("post-receive: %v\n%s", err, out)
	}
	waitUntil(t, func() bool { return loop.Status().Applied == h.String() })
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("not within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// serveAddr reads the JSON log of a serve process from stderr until it logs the
// address it listens on, and returns it; t fails if none comes within wait. The
// log goes on being read: each line goes to line (when not nil), and done (when
// not nil) is called when stderr ends.
func serveAddr(t testing.TB, stderr io.Reader, wait time.Duration, line func(string), done func()) string {
	t.Helper()
	addr := make(chan string, 1)
	go func() {
		if done != nil {
			defer done()
		}
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		re := regexp.MustCompile(`"listen":"([0-9.:]+)"`)
		for sc.Scan() {
			if line != nil {
				line(sc.Text())
			}
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		return a
	case <-time.After(wait):
		t.Fatalf("serve did not log its address within %v", wait)
		return ""
	}
}
