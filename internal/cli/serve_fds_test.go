//go:build linux

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// TestServeWarnsOfLowOpenFileLimit: serve started with an open file limit
// (2,000) below what its default connection limits need (2 x 256 connections
// + 10,000 waiting requests + 1,024) says so at start, with both figures.
func TestServeWarnsOfLowOpenFileLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("a serve process")
	}
	prlimit := testenv.Tool(t, "prlimit", "to limit the server's file descriptors: apt-get install util-linux")
	repo := quickstartRepo(t)
	cmd := fuelsyncCmd("--repo", repo, "--workdir", filepath.Join(t.TempDir(), "wd"), "serve", "--listen", "127.0.0.1:0",
		"--log-format", "json", "--interval", "1h")
	cmd = exec.Command(prlimit, append([]string{"--nofile=2000:2000", cmd.Path}, cmd.Args[1:]...)...)
	cmd.Env = append(os.Environ(), "FUELSYNC_RUN_MAIN=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var mu sync.Mutex
	var warning string
	serveAddr(t, stderr, 30*time.Second, func(line string) {
		if strings.Contains(line, "open file limit") {
			mu.Lock()
			warning = line
			mu.Unlock()
		}
	}, nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		w := warning
		mu.Unlock()
		if w != "" {
			if !strings.Contains(w, `"level":"WARN"`) || !strings.Contains(w, `"open_files":2000`) || !strings.Contains(w, `"need":11536`) {
				t.Errorf("the warning: %s", w)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no warning of the open file limit within 5 s of serving")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
