package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// LogBuffer is a log in memory, written by slog's JSON handler (at info
// level, as serve logs), safe for concurrent use.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Logger is a logger that writes to b.
func (b *LogBuffer) Logger() *slog.Logger { return slog.New(slog.NewJSONHandler(b, nil)) }

// Lines are the records logged with message msg ("" for every one), each a
// map of its attributes (level, msg and the rest).
func (b *LogBuffer) Lines(t testing.TB, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	data := b.buf.String()
	b.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(data), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, line)
		}
		if msg == "" || rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// Issue 28: a skipped reconcile (the commit reconciled already, every
// interval) was logged at debug level only, without its reason. It is logged
// at info level, saying why.
func TestLoopLogsSkippedReconcile(t *testing.T) {
	ctx := context.Background()
	dir, _ := gittest.Quickstart(t)
	var logs LogBuffer
	loop := &Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test", Log: logs.Logger()}
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	if o := loop.ReconcileOnce(ctx); o != operation.Skipped {
		t.Fatalf("the same commit again: %s", o)
	}
	lines := logs.Lines(t, "reconcile")
	if len(lines) != 2 {
		t.Fatalf("%d reconcile lines; want 2:\n%v", len(lines), lines)
	}
	skipped := lines[1]
	want := "this commit was reconciled already (applied) and nothing was approved since"
	if skipped["outcome"] != "skipped" || skipped["level"] != "INFO" || skipped["reason"] != want || skipped["revision"] == "" {
		t.Errorf("the skipped reconcile's line: %v; want outcome skipped at INFO with reason %q", skipped, want)
	}
}
