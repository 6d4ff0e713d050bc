package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// A commit with more problems than MaxProblems: the log, the status and the
// status page show the first MaxProblems and count the rest. 60,000 empty
// cluster specs logged 60,000 lines for one reconcile and made a status
// document of 5.3 MB; 250 here.
func TestProblemsCapped(t *testing.T) {
	dir, repo := gittest.Quickstart(t)
	const n = 250
	for i := range n {
		if err := os.WriteFile(filepath.Join(dir, "clusters", fmt.Sprintf("empty-%03d.yaml", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Commit(t, repo, "250 empty cluster specs")
	var logged bytes.Buffer
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test",
		Log: slog.New(slog.NewJSONHandler(&logged, nil))}
	// Each empty spec holds only its own cluster: demo and demo-hcl apply.
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		t.Fatalf("reconcile: %s, want %s", o, operation.Applied)
	}
	more := fmt.Sprintf("and %d more problems (%d in all)", n-controller.MaxProblems, n)

	// The log: one line a problem up to MaxProblems, then one with the count.
	var problems, omitted int
	for _, line := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		switch rec["msg"] {
		case "reconcile":
			if rec["errors"] != float64(n) {
				t.Errorf("the reconcile line counts %v errors, want %d", rec["errors"], n)
			}
		case "reconcile problem":
			problems++
		case "reconcile problems omitted":
			omitted++
			if rec["omitted"] != float64(n-controller.MaxProblems) || rec["problem"] != more {
				t.Errorf("the omitted line: %s", line)
			}
		}
	}
	if problems != controller.MaxProblems || omitted != 1 {
		t.Errorf("logged %d problem lines and %d omitted lines, want %d and 1", problems, omitted, controller.MaxProblems)
	}

	// The status, in Go and over HTTP, and the status page.
	st := loop.Status()
	if len(st.Errors) != controller.MaxProblems || st.ErrorsOmitted != n-controller.MaxProblems || !strings.Contains(st.Errors[0], "clusters/empty-000.yaml") {
		t.Errorf("status: %d errors (the first %q), %d omitted; want %d and %d", len(st.Errors), st.Errors[0], st.ErrorsOmitted, controller.MaxProblems, n-controller.MaxProblems)
	}
	srv := New(loop, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	get := func(path string) string {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	var doc struct {
		Errors        []string `json:"errors"`
		ErrorsOmitted int      `json:"errors_omitted"`
	}
	if err := json.Unmarshal([]byte(get("/api/v1/status")), &doc); err != nil || len(doc.Errors) != controller.MaxProblems || doc.ErrorsOmitted != n-controller.MaxProblems {
		t.Errorf("/api/v1/status: %v, %d errors, %d omitted", err, len(doc.Errors), doc.ErrorsOmitted)
	}
	page := get("/")
	if c := strings.Count(page, "<li><code>"); c != controller.MaxProblems || !strings.Contains(page, "<li>"+more+"</li>") {
		t.Errorf("the status page lists %d problems (want %d) and says %q: %t", c, controller.MaxProblems, more, strings.Contains(page, more))
	}
}
