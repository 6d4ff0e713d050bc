package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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

// withSpecs commits n more cluster specs (spec gives each one's file name
// and content) to a copy of the quickstart, and reconciles it once into a
// new work directory, which it returns with its server (its loop logging to
// log, when not nil). Each spec holds only its own cluster: demo and
// demo-hcl apply.
func withSpecs(t *testing.T, n int, log *slog.Logger, spec func(i int) (name, data string)) (*Server, string) {
	t.Helper()
	dir, repo := gittest.Quickstart(t)
	for i := range n {
		name, data := spec(i)
		if err := os.WriteFile(filepath.Join(dir, "clusters", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Commit(t, repo, fmt.Sprintf("%d more cluster specs", n))
	wd := filepath.Join(t.TempDir(), "wd")
	loop := &controller.Loop{Workdir: state.Open(wd), Source: &source.LocalSource{Path: dir}, ToolVersion: "test", Log: log}
	srv := New(loop, nil)
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		t.Fatalf("reconcile: %s, want %s", o, operation.Applied)
	}
	return srv, wd
}

// A commit with more problems than MaxProblems: the log, the status and the
// status page show the first MaxProblems and count the rest. 60,000 empty
// cluster specs logged 60,000 lines for one reconcile and made a status
// document of 5.3 MB; 250 here.
func TestProblemsCapped(t *testing.T) {
	const n = 250
	var logged bytes.Buffer
	srv, _ := withSpecs(t, n, slog.New(slog.NewJSONHandler(&logged, nil)), func(i int) (string, string) {
		return fmt.Sprintf("empty-%03d.yaml", i), ""
	})
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
	loop := srv.Loop
	st := loop.Status()
	if len(st.Errors) != controller.MaxProblems || st.ErrorsOmitted != n-controller.MaxProblems || !strings.Contains(st.Errors[0], "clusters/empty-000.yaml") {
		t.Errorf("status: %d errors (the first %q), %d omitted; want %d and %d", len(st.Errors), st.Errors[0], st.ErrorsOmitted, controller.MaxProblems, n-controller.MaxProblems)
	}
	base := serveOn(t, srv.Handler(), DefaultLimits)
	get := func(path string) string {
		resp, err := http.Get(base + path)
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
