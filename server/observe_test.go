package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// logBuffer is a JSON log in memory, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// records are the records logged with message msg.
func (b *logBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("a log line is not JSON: %v\n%s", err, line)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// httpGet GETs path of the server at base.
func httpGet(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Issue 28: /metrics has fuelsync_build_info{version,revision,goversion} (1),
// from the loop's ToolVersion and ToolCommit, and the Go and process
// collectors' go_* and process_*.
func TestMetricsBuildInfoAndRuntime(t *testing.T) {
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), ToolVersion: "v9.8.7", ToolCommit: "0123abcd (modified)"}
	hs := httptest.NewServer(New(loop, nil).Handler())
	defer hs.Close()
	code, text := httpGet(t, hs.URL, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d %s", code, text)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	ms := families["fuelsync_build_info"].GetMetric()
	if len(ms) != 1 || ms[0].GetGauge().GetValue() != 1 {
		t.Fatalf("fuelsync_build_info: %v", ms)
	}
	labels := map[string]string{}
	for _, l := range ms[0].GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if want := map[string]string{"version": "v9.8.7", "revision": "0123abcd (modified)", "goversion": runtime.Version()}; !equalMaps(labels, want) {
		t.Errorf("fuelsync_build_info's labels: %v; want %v", labels, want)
	}
	for _, f := range []string{"go_goroutines", "go_memstats_alloc_bytes", "go_gc_duration_seconds", "process_resident_memory_bytes", "process_open_fds", "process_cpu_seconds_total"} {
		if families[f] == nil {
			t.Errorf("no %s in /metrics", f)
		}
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Issue 28: /api/v1/status and the page say the build's version and commit,
// and whether the server is ready as /readyz says it: not before the first
// successful reconcile, with the reason; ready after it.
func TestStatusVersionAndReadiness(t *testing.T) {
	dir, _ := gittest.Quickstart(t)
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "v9.8.7", ToolCommit: "0123abcd"}
	hs := httptest.NewServer(New(loop, nil).Handler())
	defer hs.Close()
	check := func(when string, ready bool, readyz string) {
		t.Helper()
		code, body := httpGet(t, hs.URL, "/readyz")
		if (code == 200) != ready || !strings.Contains(body, readyz) {
			t.Errorf("%s: /readyz %d %q; want ready %v, %q", when, code, body, ready, readyz)
		}
		_, js := httpGet(t, hs.URL, "/api/v1/status")
		var st controller.Status
		if err := json.Unmarshal([]byte(js), &st); err != nil {
			t.Fatal(err)
		}
		if st.Version != "v9.8.7" || st.Commit != "0123abcd" || st.Ready != ready || ready != (st.ReadyError == "") || !strings.Contains(readyz, st.ReadyError) {
			t.Errorf("%s: /api/v1/status: version %q, commit %q, ready %v, ready_error %q; /readyz says %q", when, st.Version, st.Commit, st.Ready, st.ReadyError, body)
		}
		_, page := httpGet(t, hs.URL, "/")
		wantPage := "Ready."
		if !ready {
			wantPage = "Not ready: " + st.ReadyError
		}
		if !strings.Contains(page, "fuelsync v9.8.7 (commit <code>0123abcd</code>)") || !strings.Contains(page, wantPage) {
			t.Errorf("%s: the page lacks the version or %q:\n%s", when, wantPage, page)
		}
	}
	check("before any reconcile", false, "not ready: no successful reconcile yet")
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		t.Fatalf("reconcile: %s %q", o, loop.Status().Errors)
	}
	check("after an apply", true, "ready")
}

// Issue 28: the status contradicted /readyz. A replica whose etcd is out of
// reach was not ready for /readyz while /api/v1/status said ready: true. All
// three say it is not ready, with the error, and name its role.
func TestStatusNotReadyWithoutEtcd(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	loop, hs := replicaOfEtcd(t, addr)
	// Applied once, locally: the loop alone would call itself ready.
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		t.Fatalf("reconcile: %s %q", o, loop.Status().Errors)
	}

	code, readyz := httpGet(t, hs.URL, "/readyz")
	if code != 503 || !strings.Contains(readyz, "not ready: the state on etcd is out of reach: ") || !strings.Contains(readyz, "connection refused") {
		t.Errorf("/readyz: %d %q", code, readyz)
	}
	_, js := httpGet(t, hs.URL, "/api/v1/status")
	var st controller.Status
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatal(err)
	}
	if st.Ready || !strings.HasPrefix(st.ReadyError, "the state on etcd is out of reach: ") || !strings.Contains(st.ReadyError, "connection refused at "+addr) {
		t.Errorf("/api/v1/status: ready %v, ready_error %q; /readyz says %q", st.Ready, st.ReadyError, readyz)
	}
	if st.Replica == nil || st.Replica.ID != "replica-a" || st.Replica.Role != controller.RoleFollower || st.Replica.Error == "" {
		t.Errorf("/api/v1/status's replica: %+v", st.Replica)
	}
	_, page := httpGet(t, hs.URL, "/")
	if !strings.Contains(page, "Not ready: the state on etcd is out of reach: ") || !strings.Contains(page, "Replica <code>replica-a</code>: follower") {
		t.Errorf("the page does not say it is not ready, or its role:\n%s", page)
	}
}

// Issue 28: every webhook delivery is logged, accepted, duplicate or refused,
// with its provider, result, status and delivery id (cut to MaxDeliveryID
// bytes, one line), and nothing of the secret or the signature.
func TestWebhookDeliveriesLogged(t *testing.T) {
	var logs logBuffer
	secret := []byte("s3cret-never-logged")
	loop := &controller.Loop{Log: slog.New(slog.NewJSONHandler(&logs, nil))}
	srv := New(loop, secret)
	srv.trigger = func() {}
	h := srv.Handler()
	body := []byte(`{"ref":"refs/heads/main"}`)
	good := sign(secret, body)
	bad := sign([]byte("wrong"), body)
	post := func(provider string, header map[string]string) int {
		req := httptest.NewRequest(http.MethodPost, "/hooks/"+provider, bytes.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	long := strings.Repeat("é", 150) + "\x1b[31m" // 305 bytes, an escape sequence at the end
	type want struct {
		provider, result, level, delivery string
		status                            int
	}
	cases := []struct {
		provider string
		header   map[string]string
		want     want
	}{
		{"github", map[string]string{"X-Hub-Signature-256": good, "X-GitHub-Delivery": "d-1"}, want{"github", "accepted", "INFO", "d-1", 202}},
		{"github", map[string]string{"X-Hub-Signature-256": good, "X-GitHub-Delivery": "d-1"}, want{"github", "duplicate", "INFO", "d-1", 200}},
		{"github", map[string]string{"X-Hub-Signature-256": bad, "X-GitHub-Delivery": "d-2"}, want{"github", "unauthorized", "WARN", "d-2", 401}},
		{"gitlab", map[string]string{"X-Gitlab-Event-UUID": "g-1"}, want{"gitlab", "unauthorized", "WARN", "g-1", 401}},
		{"gitea", map[string]string{"X-Gitea-Signature": "x", "X-Gitea-Delivery": long}, want{"gitea", "bad_request", "WARN", strings.Repeat("é", 64) + "…", 400}},
		{"generic", map[string]string{"X-Fuelsync-Signature": "sha256=00", "X-Fuelsync-Delivery": "n-1"}, want{"generic", "unauthorized", "WARN", "n-1", 401}},
	}
	for _, c := range cases {
		if code := post(c.provider, c.header); code != c.want.status {
			t.Errorf("%s %v: %d; want %d", c.provider, c.header, code, c.want.status)
		}
	}
	req := httptest.NewRequest(http.MethodGet, "/hooks/github", nil)
	h.ServeHTTP(httptest.NewRecorder(), req)

	recs := logs.records(t, "webhook delivery")
	if len(recs) != len(cases)+1 {
		t.Fatalf("%d delivery lines for %d deliveries:\n%s", len(recs), len(cases)+1, logs.String())
	}
	for i, c := range cases {
		r := recs[i]
		got := want{str(r["provider"]), str(r["result"]), str(r["level"]), str(r["delivery"]), int(num(r["status"]))}
		if got != c.want {
			t.Errorf("delivery %d: logged %+v; want %+v", i, got, c.want)
		}
	}
	if r := recs[4]; num(r["delivery_bytes"]) != float64(len(long)) {
		t.Errorf("the long id's line does not say its length: %v", r)
	}
	if r := recs[len(cases)]; r["result"] != "method_not_allowed" || r["status"] != float64(405) || r["delivery"] != nil {
		t.Errorf("the GET: %v", r)
	}
	for _, s := range []string{string(secret), good, bad, strings.TrimPrefix(good, "sha256="), "\x1b", `\u001b[31m`} {
		if strings.Contains(logs.String(), s) {
			t.Errorf("the log holds %q:\n%s", s, logs.String())
		}
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

// replicaOfEtcd is a server whose loop follows the quickstart, a replica
// ("replica-a") of the state on the etcd at addr, on loopback.
func replicaOfEtcd(t *testing.T, addr string) (*controller.Loop, *httptest.Server) {
	t.Helper()
	cfg, err := state.ParseURL("etcd://" + addr + "/fuelsync")
	if err != nil {
		t.Fatal(err)
	}
	b, err := state.OpenEtcd(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	dir, _ := gittest.Quickstart(t)
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "v9.8.7"}
	srv := New(loop, nil)
	srv.Replica = &controller.Replica{Loop: loop, Etcd: b.(state.Coordinator), ID: "replica-a"}
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return loop, hs
}

// Issue 38: /readyz says the deadline it used. An etcd that accepts
// connections and never answers (a hung member, a black-holing proxy) makes
// every read wait out its deadline: /readyz, the status and the page say how
// long they waited ("no answer within 2s"), not only "context deadline
// exceeded".
func TestReadyzSaysItsDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held []net.Conn // accepted, never answered
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	_, hs := replicaOfEtcd(t, ln.Addr().String())

	start := time.Now()
	code, readyz := httpGet(t, hs.URL, "/readyz")
	took := time.Since(start)
	want := ": no answer within " + controller.StatusTimeout.String() + " "
	if code != 503 || !strings.HasPrefix(readyz, "not ready: the state on etcd is out of reach: ") || !strings.Contains(readyz, want) {
		t.Errorf("/readyz: %d %q, want 503, out of reach, and %q", code, readyz, want)
	}
	if took > 3*controller.StatusTimeout {
		t.Errorf("/readyz took %v with a deadline of %v", took, controller.StatusTimeout)
	}
}
