package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

func sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// genericHeaders sign a generic delivery of body made at t.
func genericHeaders(secret []byte, t time.Time, body []byte) map[string]string {
	stamp := strconv.FormatInt(t.Unix(), 10)
	return map[string]string{"X-Fuelsync-Timestamp": stamp, "X-Fuelsync-Signature": api.Sign(secret, stamp, body)}
}

// TestServe runs the loop and the server on loopback against a real remote (a bare
// repository on disk, updated by pushes):
// the first commit is applied; a pushed commit with a signed GitHub webhook is
// applied within 5 s; bad signatures, methods and sizes are refused; a repeated
// delivery is acknowledged once; a commit that does not validate is not applied
// and its error shows in the status with file and line; /metrics parses.
func TestServe(t *testing.T) {
	source.InstallFileTransport()
	dir, repo := gittest.Quickstart(t)
	// The remote: a bare repository on disk, updated by pushes.
	remote := filepath.Join(t.TempDir(), "remote.git")
	if _, err := git.PlainInit(remote, true); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"file://" + remote}}); err != nil {
		t.Fatal(err)
	}
	gittest.Push(t, repo, false)
	secret := []byte("s3cret")
	wd := filepath.Join(t.TempDir(), "wd")
	loop := &controller.Loop{Workdir: state.Open(wd), Source: &source.RemoteSource{URL: "file://" + remote, Branch: "main", CacheDir: filepath.Join(wd, "cache")}, ToolVersion: "test", Interval: time.Hour}
	srv := New(loop, secret)
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
	base := "http://" + ln.Addr().String()

	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	hook := func(provider string, body []byte, header map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/hooks/"+provider, bytes.NewReader(body))
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	head, _ := repo.Head()
	first := head.Hash().String()
	gittest.WaitFor(t, "the first commit applied", func() bool { st := loop.Status(); return st.Applied == first && st.Ready })
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz: %d", code)
	}

	// A push, then a signed GitHub delivery.
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	second := gittest.Commit(t, repo, "node-2 without rabbitmq")
	gittest.Push(t, repo, false)
	body := []byte(`{"ref":"refs/heads/master","after":"` + second + `"}`)
	if code := hook("github", body, map[string]string{"X-Hub-Signature-256": sign(secret, body), "X-GitHub-Delivery": "d-1"}); code != 202 {
		t.Fatalf("signed delivery: %d", code)
	}
	gittest.WaitFor(t, "the pushed commit applied", func() bool { return loop.Status().Applied == second })
	var status controller.Status
	_, js := get("/api/v1/status")
	if err := json.Unmarshal([]byte(js), &status); err != nil || status.Applied != second || status.Changes == nil || status.Changes.Summary.TasksRemoved != 1 {
		t.Errorf("/api/v1/status: %v\n%s", err, js)
	}

	// Refused deliveries.
	if code := hook("github", body, map[string]string{"X-Hub-Signature-256": sign([]byte("wrong"), body)}); code != 401 {
		t.Errorf("a wrong signature: %d", code)
	}
	big := bytes.Repeat([]byte("x"), 2<<20)
	if code := hook("github", big, map[string]string{"X-Hub-Signature-256": sign(secret, big)}); code != 413 {
		t.Errorf("a 2 MiB body: %d", code)
	}
	if code, _ := get("/hooks/github"); code != 405 {
		t.Errorf("GET on a hook: %d", code)
	}
	if code := hook("github", body, map[string]string{"X-Hub-Signature-256": sign(secret, body), "X-GitHub-Delivery": "d-1"}); code != 200 {
		t.Errorf("a repeated delivery: %d", code)
	}
	if code := hook("gitlab", body, map[string]string{"X-Gitlab-Token": "s3cret", "X-Gitlab-Event-UUID": "g-1"}); code != 202 {
		t.Errorf("gitlab token: %d", code)
	}
	if code := hook("gitea", body, map[string]string{"X-Gitea-Signature": strings.TrimPrefix(sign(secret, body), "sha256=")}); code != 202 {
		t.Errorf("gitea signature: %d", code)
	}
	if code := hook("generic", body, genericHeaders(secret, time.Now(), body)); code != 202 {
		t.Errorf("generic signature: %d", code)
	}

	// A commit that does not validate: not applied, its error in the status.
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "release: quickstart-1.0", "release: quickstart-9.9")
	third := gittest.Commit(t, repo, "unknown release")
	gittest.Push(t, repo, false)
	currentBefore, _ := os.ReadFile(filepath.Join(wd, "artifacts", "current", "manifest.json"))
	hook("generic", body, genericHeaders(secret, time.Now(), body))
	gittest.WaitFor(t, "the invalid commit seen", func() bool { st := loop.Status(); return st.Revision == third && st.Outcome == operation.Invalid })
	st := loop.Status()
	if st.Applied != second || len(st.Errors) == 0 || !strings.HasPrefix(st.Errors[0], "clusters/demo.yaml:5:10: error: ") {
		t.Errorf("status after an invalid commit: applied %s, errors %q", st.Applied, st.Errors)
	}
	if currentAfter, _ := os.ReadFile(filepath.Join(wd, "artifacts", "current", "manifest.json")); !bytes.Equal(currentBefore, currentAfter) || len(currentAfter) == 0 {
		t.Error("the applied artifacts changed after an invalid commit")
	}
	if _, page := get("/"); !strings.Contains(page, "clusters/demo.yaml:5:10: error: ") || !strings.Contains(page, "<td>node-2</td>") || !strings.Contains(page, "demo-hcl") {
		t.Errorf("the status page lacks the error or the nodes:\n%s", page)
	}

	// The component registry API of the newest commit's release.
	if code, js := get("/api/v1/releases/quickstart-1.0/components"); code != 200 || !strings.Contains(js, `"name": "additional_service:monitoring"`) {
		t.Errorf("components API: %d\n%.400s", code, js)
	}
	if code, _ := get("/api/v1/releases/nosuch/components"); code != 404 {
		t.Errorf("an unknown release: %d", code)
	}

	// /metrics: Prometheus text with the reconciles and deliveries by outcome.
	_, metrics := get("/metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation) // the zero TextParser panics since prometheus/common v0.66
	families, err := parser.TextToMetricFamilies(strings.NewReader(metrics))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	count := func(family, label, value string) float64 {
		for _, m := range families[family].GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	if count("fuelsync_webhook_deliveries_total", "result", "duplicate") != 1 || count("fuelsync_webhook_deliveries_total", "result", "unauthorized") != 1 ||
		count("fuelsync_reconciles_total", "outcome", "applied") != 2 || count("fuelsync_reconciles_total", "outcome", "invalid") != 1 {
		t.Errorf("metrics:\n%s", metrics)
	}
}

func FuzzParsePush(f *testing.F) {
	f.Add([]byte(`{"ref":"refs/heads/main","after":"abc"}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := ParsePush(body)
		if err == nil && !json.Valid(body) && len(bytes.TrimSpace(body)) > 0 {
			t.Fatalf("accepted invalid JSON %q as %+v", body, p)
		}
	})
}

// TestWebhookLoad sends 1,000 deliveries on loopback from 16 connections at once,
// a third with a bad signature and some over 1 MiB: every invalid one is refused,
// every valid one accepted, the server stays up, and the push they announce is
// reconciled once (the other wakeups, coalesced while a reconcile runs, find the
// commit reconciled and stop there).
func TestWebhookLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 deliveries")
	}
	dir, repo := gittest.Quickstart(t)
	secret := []byte("s3cret")
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	var reconciles, full atomic.Int64
	srv := New(loop, secret)
	onReconcile := loop.OnReconcile
	loop.OnReconcile = func(o operation.Outcome, d time.Duration) {
		reconciles.Add(1)
		if o != operation.Skipped {
			full.Add(1)
		}
		onReconcile(o, d)
	}
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
	gittest.WaitFor(t, "ready", func() bool { return loop.Status().Ready })
	// A push just before the burst: the burst must apply it once.
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	pushed := gittest.Commit(t, repo, "node-2 without rabbitmq")
	before, fullBefore := reconciles.Load(), full.Load()

	body := []byte(`{"ref":"refs/heads/master"}`)
	big := bytes.Repeat([]byte(" "), MaxWebhookBody+1)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	const n = 1000
	codes := make([]int, n)
	kinds := make([]string, n)
	start := time.Now()
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 16 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				b, h := body, genericHeaders(secret, time.Now(), body)
				switch {
				case i%50 == 7:
					kinds[i], b, h = "big", big, genericHeaders(secret, time.Now(), big)
				case i%3 == 1:
					kinds[i], h = "bad", genericHeaders([]byte("wrong"), time.Now(), body)
				default:
					kinds[i] = "good"
				}
				req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/hooks/generic", bytes.NewReader(b))
				for k, v := range h {
					req.Header.Set(k, v)
				}
				req.Header.Set("X-Fuelsync-Delivery", fmt.Sprintf("load-%d", i))
				resp, err := client.Do(req)
				if err != nil {
					codes[i] = -1
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[i] = resp.StatusCode
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	want := map[string]int{"good": 202, "bad": 401, "big": 413}
	counts := map[string]int{}
	for i, code := range codes {
		counts[kinds[i]]++
		if code != want[kinds[i]] {
			t.Errorf("delivery %d (%s): %d, want %d", i, kinds[i], code, want[kinds[i]])
		}
	}
	if elapsed > 10*time.Second {
		t.Errorf("1,000 deliveries took %v", elapsed)
	}
	if code := func() int {
		resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}(); code != 200 {
		t.Errorf("/healthz after the load: %d", code)
	}
	gittest.WaitFor(t, "the pushed commit applied", func() bool { return loop.Status().Applied == pushed })
	time.Sleep(100 * time.Millisecond) // the last triggered reconcile
	wakeups, applied := reconciles.Load()-before, full.Load()-fullBefore
	t.Logf("%d deliveries (%d valid, %d bad signatures, %d over 1 MiB) in %v: %d loop wakeups, %d full reconcile(s); the others found the commit reconciled",
		n, counts["good"], counts["bad"], counts["big"], elapsed.Round(time.Millisecond), wakeups, applied)
	if applied != 1 {
		t.Errorf("%d full reconciles for %d valid deliveries of one push: want 1", applied, counts["good"])
	}
}

// TestStatusPageBrowser loads the status page in a real headless browser (Debian's
// chromium, which .ci/run installs; skipped without it, failed when CI=true): the cluster and node
// names and the last change set are on the page.
func TestStatusPageBrowser(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		testenv.Unavailable(t, "no chromium installed (apt-get install chromium)")
	}
	dir, repo := gittest.Quickstart(t)
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	srv := New(loop, []byte("s"))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	loop.ReconcileOnce(context.Background())
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	gittest.Commit(t, repo, "node-2 without rabbitmq")
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		t.Fatalf("reconcile: %s", o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "http://"+ln.Addr().String()+"/")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	dom, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
	}
	for _, want := range []string{"<h3>demo</h3>", "<h3>demo-hcl</h3>", "<td>node-2</td>", "<td>node-6</td>", "tag rabbitmq unassigned: - rabbitmq", "Last change set"} {
		if !strings.Contains(string(dom), want) {
			t.Errorf("the page in %s lacks %q:\n%s", filepath.Base(browser), want, dom)
		}
	}
}
