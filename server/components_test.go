package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// countingSource counts the fetches of a source.
type countingSource struct {
	source.Source
	fetches atomic.Int64
	down    atomic.Bool
}

func (s *countingSource) Latest(ctx context.Context) (source.Revision, error) {
	s.fetches.Add(1)
	if s.down.Load() {
		return source.Revision{}, context.DeadlineExceeded
	}
	return s.Source.Latest(ctx)
}

// TestComponentsFromLoadedRevision: the component-registry API answers from the
// revision the loop loaded last, fetching and loading nothing per request (the
// old handler fetched the remote and loaded the whole repository for each
// GET), so it answers while the source is unreachable; a newly reconciled
// revision replaces the cached answers.
func TestComponentsFromLoadedRevision(t *testing.T) {
	dir, repo := gittest.Quickstart(t)
	src := &countingSource{Source: &source.LocalSource{Path: dir}}
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: src, ToolVersion: "test"}
	h := New(loop, []byte("s")).Handler()
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code, w.Body.String()
	}
	if code, body := get("/api/v1/releases/quickstart-1.0/components"); code != 503 {
		t.Errorf("before the first reconcile: %d %s", code, body)
	}
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		t.Fatalf("reconcile: %s", o)
	}
	fetches := src.fetches.Load()
	src.down.Store(true)
	_, first := get("/api/v1/releases/quickstart-1.0/components")
	for _, ref := range []string{"quickstart-1.0", "quickstart", "quickstart@quickstart-1.0"} {
		for range 20 {
			if code, body := get("/api/v1/releases/" + ref + "/components"); code != 200 || body != first {
				t.Fatalf("%s: %d\n%.300s", ref, code, body)
			}
		}
	}
	if !strings.Contains(first, `"name": "additional_service:monitoring"`) {
		t.Errorf("the registry lacks the monitoring plugin's component:\n%.400s", first)
	}
	if code, _ := get("/api/v1/releases/nosuch/components"); code != 404 {
		t.Errorf("an unknown release: %d", code)
	}
	if n := src.fetches.Load() - fetches; n != 0 {
		t.Errorf("%d fetches for 62 requests, want 0", n)
	}
	// A new revision: its model answers.
	src.down.Store(false)
	gittest.EditFile(t, filepath.Join(dir, "plugins", "monitoring", "components.yaml"), "additional_service:monitoring", "additional_service:observability")
	gittest.Commit(t, repo, "component renamed")
	if o := loop.ReconcileOnce(context.Background()); o == operation.Failed {
		t.Fatalf("reconcile: %s %q", o, loop.Status().Errors)
	}
	if _, body := get("/api/v1/releases/quickstart-1.0/components"); !strings.Contains(body, "additional_service:observability") {
		t.Errorf("after a new revision, still the old answer:\n%.400s", body)
	}
}

// BenchmarkComponentsAPI is the per-request cost of GET
// /api/v1/releases/mitaka-9.0/components on examples/fuel-mitaka: "cached"
// as served (from the loop's loaded revision), "load per request" what the old
// handler did (load the repository and build the registry for each request,
// the fetch left out).
func BenchmarkComponentsAPI(b *testing.B) {
	src := &source.WorktreeSource{Path: "../examples/fuel-mitaka"}
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(b.TempDir(), "wd")), Source: src, ToolVersion: "test"}
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		b.Fatalf("reconcile: %s %q", o, loop.Status().Errors)
	}
	h := New(loop, []byte("s")).Handler()
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/releases/mitaka-9.0/components", nil))
			if w.Code != 200 {
				b.Fatalf("%d %s", w.Code, w.Body)
			}
		}
	})
	b.Run("load per request", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			rev, err := src.Latest(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			repo, _ := loader.Load(rev.FS, loader.Options{})
			reg, diags := render.Registry(repo, repo.FindRelease("mitaka-9.0")[0])
			if reg == nil || diags.HasErrors() {
				b.Fatal(diags)
			}
			_ = reg.API()
		}
	})
}
