//go:build linux

package executor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// testExec is an Executor for a test: its state in a temporary directory,
// a short kill grace, the boot id "boot-1", and a sleep that records what
// it was asked to wait and returns at once.
type testExec struct {
	*Executor
	mu     sync.Mutex
	slept  []time.Duration
	boot   string
	bootOK bool
}

func newTestExec(t *testing.T, edit func(*Config)) *testExec {
	t.Helper()
	te := &testExec{boot: "boot-1", bootOK: true}
	cfg := Config{StateDir: filepath.Join(t.TempDir(), "state"), KillGrace: 300 * time.Millisecond}
	cfg.bootID = te.bootID
	cfg.sleep = te.sleep
	if edit != nil {
		edit(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	te.Executor = e
	return te
}

func (te *testExec) bootID() (string, error) {
	te.mu.Lock()
	defer te.mu.Unlock()
	if !te.bootOK {
		return "", os.ErrNotExist
	}
	return te.boot, nil
}

func (te *testExec) setBoot(id string) {
	te.mu.Lock()
	te.boot = id
	te.mu.Unlock()
}

func (te *testExec) sleep(ctx context.Context, d time.Duration) error {
	te.mu.Lock()
	te.slept = append(te.slept, d)
	te.mu.Unlock()
	return ctx.Err()
}

func (te *testExec) sleeps() []time.Duration {
	te.mu.Lock()
	defer te.mu.Unlock()
	return append([]time.Duration(nil), te.slept...)
}

// shell is a shell task with cmd and the parameters kv (key, value, …).
func shell(cmd string, kv ...any) Task {
	return task("shell", append([]any{"cmd", cmd}, kv...)...)
}

// task is a task of type typ with the parameters kv (key, value, …).
func task(typ string, kv ...any) Task {
	p := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	return Task{ID: "t-" + typ, Type: typ, Parameters: p}
}

// dead reports whether process pid has ended (gone, or a zombie).
func dead(pid int) bool {
	f, ok := procStat(strconv.Itoa(pid))
	return !ok || f[0] == "Z" || f[0] == "X"
}

// readPid reads the pid a command wrote to file.
func readPid(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return pid
}

// signalWriter passes writes on to a buffer and closes seen once the
// output holds mark: a command's way to say it has reached a point.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark string
	seen chan struct{}
	once sync.Once
}

func newSignalWriter(mark string) *signalWriter {
	return &signalWriter{mark: mark, seen: make(chan struct{})}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.mark) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
