package server

import (
	"html/template"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
)

// TestClusterPageWhole: the cluster page of a cluster with reconciles is
// answered whole: its reconcile row with the counts of nodes added, changed
// and removed, and the end of the document. (Its template called len on
// those counts, integers: the page stopped at the first reconcile row, with
// a 200 and nothing logged.)
func TestClusterPageWhole(t *testing.T) {
	var log syncLog
	a := startAPI(t, func(s *Server, _ *Limits) {
		s.AgentSecret = agentSecret
		s.Loop.Log = slog.New(slog.NewTextHandler(&log, nil))
	})
	a.reconcile(t, operation.Applied)
	a.reportAll(t, reports.Success)
	r := a.get(t, "/clusters/demo", nil)
	if r.code != 200 || !strings.Contains(r.body, "<td>6 / 0 / 0</td>") || !strings.HasSuffix(r.body, "</html>\n") {
		t.Errorf("GET /clusters/demo: %d, want 200, the reconcile's row (6 / 0 / 0) and the end of the page:\n%s", r.code, r.body)
	}
	if strings.Contains(log.String(), "level=ERROR") {
		t.Errorf("the log: %s", log.String())
	}
}

// TestPageTemplateError: a page whose template fails is answered 500, with
// nothing of the page, and the error is logged.
func TestPageTemplateError(t *testing.T) {
	var log syncLog
	a := startAPI(t, func(s *Server, _ *Limits) { s.Loop.Log = slog.New(slog.NewTextHandler(&log, nil)) })
	tmpl := template.Must(template.New("broken").Parse(`<p>before</p>{{len .N}}<p>after</p>`))
	rec := httptest.NewRecorder()
	a.srv.writePage(rec, httptest.NewRequest("GET", "/clusters/demo", nil), tmpl, map[string]any{"N": 3})
	if rec.Code != 500 || strings.Contains(rec.Body.String(), "before") {
		t.Errorf("a template that fails: %d %q, want 500 without the page's start", rec.Code, rec.Body.String())
	}
	if l := log.String(); !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "path=/clusters/demo") || !strings.Contains(l, "len of type int") {
		t.Errorf("the log does not say which page failed and why: %s", l)
	}
}
