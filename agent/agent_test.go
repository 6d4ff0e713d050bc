package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/reports"
)

// TestTaskLines: the documented task lines become task statuses, in the
// order first named, with their messages; anything else is not a task line.
func TestTaskLines(t *testing.T) {
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	a := &Agent{}
	a.init()
	a.now = func() time.Time { return at }
	tasks := &taskSet{byID: map[string]int{}}
	out := strings.Join([]string{
		"plain output",
		"fuelsync-task hiera running",
		"fuelsync-task hiera success",
		"fuelsync-task keystone failed puppet exited 1\r",
		"fuelsync-task globals skipped   nothing to do  ",
		"fuelsync-task netconfig ok",                             // not a status
		"fuelsync-task lonely",                                   // no status
		"  fuelsync-task indented success",                       // not at the line's start
		"fuelsync-taskx glued success",                           // not the prefix
		"fuelsync-task bad\x01id success",                        // a control character
		"fuelsync-task " + strings.Repeat("x", 257) + " success", // too long
		"fuelsync-task ctl success a\x1bb",
	}, "\n") + "\n"
	a.readOutput(strings.NewReader(out), tasks)
	p := func(t time.Time) *time.Time { return &t }
	want := []reports.Task{
		{ID: "hiera", Status: "success", StartedAt: p(at), FinishedAt: p(at)},
		{ID: "keystone", Status: "failed", StartedAt: p(at), FinishedAt: p(at), Message: "puppet exited 1"},
		{ID: "globals", Status: "skipped", StartedAt: p(at), FinishedAt: p(at), Message: "nothing to do"},
		{ID: "ctl", Status: "success", StartedAt: p(at), FinishedAt: p(at), Message: "a b"},
	}
	if d := cmp.Diff(want, tasks.list()); d != "" {
		t.Errorf("tasks (-want +got):\n%s", d)
	}
}

// TestLongLineIsPassedOn: a line over the read bound is passed on whole and
// not read as a task line; the lines after it are.
func TestLongLineIsPassedOn(t *testing.T) {
	var got strings.Builder
	a := &Agent{Stdout: &got}
	a.init()
	tasks := &taskSet{byID: map[string]int{}}
	long := "fuelsync-task big success " + strings.Repeat("m", 2*maxLine) + "\n"
	a.readOutput(strings.NewReader(long+"fuelsync-task small success\n"), tasks)
	if got.String() != long+"fuelsync-task small success\n" {
		t.Errorf("output passed on: %d bytes, want %d", got.Len(), len(long)+28)
	}
	if l := tasks.list(); len(l) != 1 || l[0].ID != "small" {
		t.Errorf("tasks: %+v", l)
	}
}

// TestBackoff: the waits double from MinBackoff to MaxBackoff, each with
// jitter between half and the whole.
func TestBackoff(t *testing.T) {
	var b backoff
	for i := range 12 {
		full := min(MinBackoff<<i, MaxBackoff)
		if d := b.next(); d < full/2 || d > full {
			t.Errorf("attempt %d: %v, want within [%v, %v]", i, d, full/2, full)
		}
	}
}

// fakeServe is a serve stand-in on loopback for what a real serve does not
// do on demand: answer 429 and 503 with Retry-After.
type fakeServe struct {
	mu      sync.Mutex
	graph   []byte
	refuse  int    // answer this many requests 429 first
	after   string // their Retry-After
	reports []*reports.Report
	gets    []string // If-None-Match of each GET
}

func (f *fakeServe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, "no", http.StatusForbidden)
		return
	}
	if f.refuse > 0 {
		f.refuse--
		w.Header().Set("Retry-After", f.after)
		http.Error(w, "slow down", http.StatusTooManyRequests)
		return
	}
	sum := sha256.Sum256(f.graph)
	etag := hex.EncodeToString(sum[:])
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/api/v1/clusters/demo/nodes/node-1/graphs/default"):
		f.gets = append(f.gets, r.Header.Get("If-None-Match"))
		w.Header().Set("ETag", `"`+etag+`"`)
		if r.Header.Get("If-None-Match") == `"`+etag+`"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Write(f.graph)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/api/v1/clusters/demo/nodes/node-1/reports"):
		body, _ := io.ReadAll(r.Body)
		rep, err := reports.Parse(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.reports = append(f.reports, rep)
		w.Write([]byte("{}"))
	default:
		http.NotFound(w, r)
	}
}

func newAgent(t *testing.T, srv *httptest.Server, dir string, slept *[]time.Duration) *Agent {
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	return &Agent{Server: u, Cluster: "demo", Node: "node-1", Token: "tok", Dir: dir, Once: true,
		Command: []string{"/bin/sh", "-c", `cat >/dev/null; echo "fuelsync-task hiera success"`},
		sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*slept = append(*slept, d)
			mu.Unlock()
			return ctx.Err()
		}}
}

// TestRetryAfter: a 429 is retried after its Retry-After (with at most a
// tenth more of jitter), not sooner.
func TestRetryAfter(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	f := &fakeServe{graph: []byte("tasks: []\n"), refuse: 2, after: "7"}
	srv := httptest.NewServer(f)
	defer srv.Close()
	var slept []time.Duration
	a := newAgent(t, srv, t.TempDir(), &slept)
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(slept) != 2 {
		t.Fatalf("slept %v, want two waits", slept)
	}
	for _, d := range slept {
		if d < 7*time.Second || d > 7700*time.Millisecond {
			t.Errorf("waited %v after Retry-After: 7, want 7s to 7.7s", d)
		}
	}
	if len(f.reports) != 2 || f.reports[0].Status != reports.Running || f.reports[1].Status != reports.Success || len(f.reports[1].Tasks) != 1 ||
		!f.reports[0].StartedAt.Equal(f.reports[1].StartedAt) {
		t.Errorf("reports: %+v, want running then success, of the same start", f.reports)
	}
}

// TestResume: a restarted agent first sends the result serve did not get,
// then asks for the graph with the ETag it ran: unchanged, nothing runs.
func TestResume(t *testing.T) {
	f := &fakeServe{graph: []byte("tasks: []\n")}
	srv := httptest.NewServer(f)
	defer srv.Close()
	sum := sha256.Sum256(f.graph)
	etag := hex.EncodeToString(sum[:])
	dir := t.TempDir()
	end := time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)
	pending := &reports.Report{Graph: "default", ETag: etag, Status: reports.Failed, StartedAt: end.Add(-time.Minute), FinishedAt: &end, Message: "boom"}
	data, _ := json.Marshal(State{Cluster: "demo", Node: "node-1", Graph: "default", ETag: etag, Pending: pending})
	if err := os.WriteFile(filepath.Join(dir, StateFile), data, 0o600); err != nil {
		t.Fatal(err)
	}
	var slept []time.Duration
	a := newAgent(t, srv, dir, &slept)
	a.Command = []string{"/nonexistent/must-not-run"}
	if err := a.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(f.reports) != 1 || f.reports[0].Message != "boom" {
		t.Errorf("reports: %+v, want the pending one", f.reports)
	}
	if d := cmp.Diff([]string{`"` + etag + `"`}, f.gets); d != "" {
		t.Errorf("If-None-Match of the GETs (-want +got):\n%s", d)
	}
	var st State
	data, _ = os.ReadFile(filepath.Join(dir, StateFile))
	if err := json.Unmarshal(data, &st); err != nil || st.Pending != nil || st.ETag != etag {
		t.Errorf("state after: %s (%v)", data, err)
	}
	// Another node's state file is not taken for this node's.
	a.Node = "node-2"
	if st, _ := a.readState(); st.ETag != "" {
		t.Errorf("node-2 read node-1's state: %+v", st)
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"5":                             5 * time.Second,
		"-3":                            0,
		"junk":                          0,
		"99999":                         MaxRetryAfter,
		"Sun, 01 Mar 2026 10:00:30 GMT": 30 * time.Second,
	} {
		h := http.Header{}
		if v != "" {
			h.Set("Retry-After", v)
		}
		if got := retryAfter(h, now); got != want {
			t.Errorf("Retry-After %q: %v, want %v", v, got, want)
		}
	}
}
