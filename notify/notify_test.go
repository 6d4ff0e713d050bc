package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// delivery is one request a receiver took.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver is a real HTTP server on loopback that answers each request with
// the next of codes (then 200), and hands what it took to got.
type receiver struct {
	*httptest.Server
	mu    sync.Mutex
	codes []int
	got   chan delivery
}

func newReceiver(t *testing.T, codes ...int) *receiver {
	r := &receiver{codes: codes, got: make(chan delivery, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.got <- delivery{req.Header.Clone(), body}
		r.mu.Lock()
		code := http.StatusOK
		if len(r.codes) > 0 {
			code, r.codes = r.codes[0], r.codes[1:]
		}
		r.mu.Unlock()
		if code == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "7")
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

// next is the next delivery, or a failure after 10 s.
func (r *receiver) next(t *testing.T) delivery {
	t.Helper()
	select {
	case d := <-r.got:
		return d
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery")
		return delivery{}
	}
}

// started runs n until the test ends; results has each delivery's result
// ("provider result").
func started(t *testing.T, n *Notifier) (results chan string) {
	results = make(chan string, 100)
	n.Counted = func(p, r string) { results <- p + " " + r }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { n.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return results
}

func wait(t *testing.T, results chan string, want string) {
	t.Helper()
	select {
	case got := <-results:
		if got != want {
			t.Fatalf("result %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no result (want %q)", want)
	}
}

func config(p ...*Provider) *Config {
	for _, x := range p {
		if x.Timeout == 0 {
			x.Timeout = 5 * time.Second
		}
	}
	return &Config{Queue: 10, Retries: 0, Backoff: time.Millisecond, Providers: p}
}

// TestWebhook: the generic webhook posts the event as JSON, with its type,
// id, a timestamp and the HMAC-SHA256 of "timestamp.body" under the secret.
func TestWebhook(t *testing.T) {
	r := newReceiver(t)
	secret := []byte("s3cret")
	cfg := config(&Provider{Name: "hook", Type: Webhook, URL: r.URL + "/in", Secret: secret})
	cfg.BaseURL = "https://fuelsync.example"
	n := New(cfg, nil)
	results := started(t, n)
	n.Notify(Event{Type: RunFailed, Cluster: "prod", Run: "7", Serial: 3, Revision: "abc", Message: "node-1 failed\nsecond line", Path: "/clusters/prod/runs/7"})
	d := r.next(t)
	wait(t, results, "hook sent")
	var e map[string]any
	if err := json.Unmarshal(d.body, &e); err != nil {
		t.Fatal(err)
	}
	if e["source"] != "fuelsync" || e["type"] != RunFailed || e["severity"] != Error || e["cluster"] != "prod" || e["run"] != "7" ||
		e["serial"] != 3.0 || e["url"] != "https://fuelsync.example/clusters/prod/runs/7" || e["id"] == "" || e["time"] == nil {
		t.Errorf("body: %s", d.body)
	}
	if strings.Contains(e["message"].(string), "\n") {
		t.Errorf("the message is not one line: %q", e["message"])
	}
	if d.header.Get("Content-Type") != "application/json" || d.header.Get("X-Fuelsync-Event") != RunFailed ||
		d.header.Get("X-Fuelsync-Delivery") != e["id"] || d.header.Get("User-Agent") != "fuelsync" {
		t.Errorf("headers: %v", d.header)
	}
	stamp := d.header.Get("X-Fuelsync-Timestamp")
	if s, err := strconv.ParseInt(stamp, 10, 64); err != nil || time.Since(time.Unix(s, 0)).Abs() > time.Minute {
		t.Errorf("timestamp %q", stamp)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(stamp + "."))
	mac.Write(d.body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); d.header.Get("X-Fuelsync-Signature") != want {
		t.Errorf("signature %q, want %q", d.header.Get("X-Fuelsync-Signature"), want)
	}

	// Without a secret: unsigned.
	u := newReceiver(t)
	n2 := New(config(&Provider{Name: "plain", Type: Webhook, URL: u.URL}), nil)
	results = started(t, n2)
	n2.Notify(Event{Type: RunStarted, Cluster: "prod"})
	if d := u.next(t); d.header.Get("X-Fuelsync-Signature") != "" || d.header.Get("X-Fuelsync-Timestamp") != "" {
		t.Errorf("an unsigned provider signed: %v", d.header)
	}
	wait(t, results, "plain sent")
}

// TestSlack: a Slack-compatible provider posts {"text", "channel",
// "username"}, Slack's control characters escaped.
func TestSlack(t *testing.T) {
	r := newReceiver(t)
	cfg := config(&Provider{Name: "chat", Type: Slack, URL: r.URL + "/services/T0/B0/XXXX", Channel: "#ops", Username: "fuelsync"})
	cfg.BaseURL = "http://serve.example:8080"
	n := New(cfg, nil)
	results := started(t, n)
	n.Notify(Event{Type: NodeFailed, Cluster: "prod", Run: "2", Node: "node-1", Message: "task <netconfig> & more", Path: "/clusters/prod/runs/2"})
	d := r.next(t)
	wait(t, results, "chat sent")
	var m map[string]string
	if err := json.Unmarshal(d.body, &m); err != nil {
		t.Fatal(err)
	}
	want := ":x: *node.failed* cluster `prod` run 2 node `node-1`: task &lt;netconfig&gt; &amp; more (<http://serve.example:8080/clusters/prod/runs/2|open>)"
	if m["text"] != want || m["channel"] != "#ops" || m["username"] != "fuelsync" || len(m) != 3 {
		t.Errorf("message %q\nwant text %q", d.body, want)
	}
	for typ, mark := range map[string]string{ClusterSynced: ":white_check_mark:", RunStarted: ":information_source:", ClusterHeld: ":x:"} {
		if got := SlackText(&Event{Type: typ, Severity: SeverityOf(typ), Cluster: "c"}); !strings.HasPrefix(got, mark+" ") {
			t.Errorf("%s: %q", typ, got)
		}
	}
}

// TestCommand: a command provider runs its program with the event as JSON
// on its stdin and the event's type and cluster in its environment; one
// that exits non-zero, or outlives its timeout, fails.
func TestCommand(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "hook.sh")
	os.WriteFile(script, []byte("#!/bin/sh\ncat > \"$1/event.json\"\necho \"$FUELSYNC_EVENT $FUELSYNC_CLUSTER\" > \"$1/env\"\n"), 0o755)
	n := New(config(&Provider{Name: "page", Type: Command, Argv: []string{script, dir}}), nil)
	results := started(t, n)
	n.Notify(Event{Type: ClusterHeld, Cluster: "prod", Message: "held: a cycle"})
	wait(t, results, "page sent")
	var e Event
	data, _ := os.ReadFile(filepath.Join(dir, "event.json"))
	if err := json.Unmarshal(data, &e); err != nil || e.Type != ClusterHeld || e.Cluster != "prod" || e.Message != "held: a cycle" {
		t.Errorf("stdin: %s (%v)", data, err)
	}
	if env, _ := os.ReadFile(filepath.Join(dir, "env")); string(env) != "cluster.held prod\n" {
		t.Errorf("environment: %q", env)
	}

	var logs bytes.Buffer
	fail := New(config(
		&Provider{Name: "exit", Type: Command, Argv: []string{"/bin/sh", "-c", "echo output-not-logged; exit 3"}},
		&Provider{Name: "slow", Type: Command, Argv: []string{"/bin/sh", "-c", "sleep 30 & sleep 30"}, Timeout: 200 * time.Millisecond},
	), slog.New(slog.NewTextHandler(&logs, nil)))
	results = started(t, fail)
	start := time.Now()
	fail.Notify(Event{Type: RunStarted, Cluster: "prod"})
	got := map[string]bool{<-results: true, <-results: true}
	if !got["exit failed"] || !got["slow failed"] {
		t.Errorf("results: %v", got)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the timeout took %s", d)
	}
	for _, want := range []string{"the command exit status 3", "the command did not end within 200ms: killed"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "output-not-logged") {
		t.Errorf("the command's output is logged:\n%s", logs.String())
	}
}

// TestFilters: each provider takes the events of its clusters and types.
func TestFilters(t *testing.T) {
	prod, failures := newReceiver(t), newReceiver(t)
	n := New(config(
		&Provider{Name: "prod", Type: Webhook, URL: prod.URL, Clusters: []string{"prod-*"}},
		&Provider{Name: "failures", Type: Webhook, URL: failures.URL, Events: []string{RunFailed, NodeFailed}},
	), nil)
	results := started(t, n)
	n.Notify(Event{Type: RunStarted, Cluster: "staging"}) // neither
	n.Notify(Event{Type: RunStarted, Cluster: "prod-1"})  // prod
	n.Notify(Event{Type: RunFailed, Cluster: "staging"})  // failures
	if got := map[string]bool{<-results: true, <-results: true}; !got["prod sent"] || !got["failures sent"] {
		t.Fatalf("results: %v", got)
	}
	if d := prod.next(t); !bytes.Contains(d.body, []byte(`"cluster":"prod-1"`)) {
		t.Errorf("prod took %s", d.body)
	}
	if d := failures.next(t); !bytes.Contains(d.body, []byte(`"type":"run.failed"`)) {
		t.Errorf("failures took %s", d.body)
	}
	if len(prod.got)+len(failures.got) != 0 {
		t.Error("a provider took an event it does not want")
	}
}

// TestRetries: a receiver that fails twice (503) then succeeds gets the
// event on the third attempt, the waits doubling; one that answers 429 is
// waited for as its Retry-After asks; a 4xx is not tried again; the retries
// run out.
func TestRetries(t *testing.T) {
	var mu sync.Mutex
	var waits []time.Duration
	instant := func(ctx context.Context, d time.Duration) bool {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return true
	}
	run := func(codes []int, retries int) (*receiver, []string, []time.Duration) {
		r := newReceiver(t, codes...)
		cfg := config(&Provider{Name: "hook", Type: Webhook, URL: r.URL})
		cfg.Retries, cfg.Backoff = retries, time.Second
		n := New(cfg, nil)
		n.sleep = instant
		mu.Lock()
		waits = nil
		mu.Unlock()
		results := started(t, n)
		n.Notify(Event{Type: RunStarted, Cluster: "prod"})
		res := <-results
		var ids []string
		for len(r.got) > 0 {
			ids = append(ids, r.next(t).header.Get("X-Fuelsync-Delivery"))
		}
		mu.Lock()
		defer mu.Unlock()
		return r, append([]string{res}, ids...), waits
	}
	_, got, w := run([]int{503, 503}, 4)
	if got[0] != "hook sent" || len(got) != 4 || got[1] != got[2] || got[2] != got[3] {
		t.Errorf("fails twice then succeeds: %v (the same delivery id each time)", got)
	}
	if len(w) != 2 || w[0] < time.Second || w[0] > 1100*time.Millisecond || w[1] < 2*time.Second || w[1] > 2200*time.Millisecond {
		t.Errorf("waits %v, want about 1s then 2s", w)
	}
	if _, got, w = run([]int{429}, 4); got[0] != "hook sent" || len(w) != 1 || w[0] != 7*time.Second {
		t.Errorf("429 with Retry-After 7: %v, waits %v", got, w)
	}
	if _, got, w = run([]int{400}, 4); got[0] != "hook failed" || len(got) != 2 || len(w) != 0 {
		t.Errorf("400: %v, waits %v (not tried again)", got, w)
	}
	if _, got, _ = run([]int{500, 500, 500}, 2); got[0] != "hook failed" || len(got) != 4 {
		t.Errorf("retries run out: %v", got)
	}
}

// TestQueueDropsOldest: a provider's queue holds Config.Queue events; past
// it, the oldest is dropped, counted and logged, and Notify never blocks.
func TestQueueDropsOldest(t *testing.T) {
	r := newReceiver(t)
	cfg := config(&Provider{Name: "hook", Type: Webhook, URL: r.URL})
	cfg.Queue = 2
	var logs bytes.Buffer
	n := New(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	var dropped []string
	n.Counted = func(p, res string) { dropped = append(dropped, p+" "+res) }
	for i := range 5 { // no worker yet: the queue fills
		n.Notify(Event{Type: RunStarted, Cluster: "prod", Run: strconv.Itoa(i)})
	}
	if c := n.Counts()["hook"]; c.Dropped != 3 || len(dropped) != 3 || dropped[0] != "hook dropped" {
		t.Errorf("counts %+v, told %v", c, dropped)
	}
	if got := strings.Count(logs.String(), "notification dropped: the provider's queue is full"); got != 3 {
		t.Errorf("%d drops logged:\n%s", got, logs.String())
	}
	results := started(t, n)
	for _, want := range []string{`"run":"3"`, `"run":"4"`} {
		if d := r.next(t); !bytes.Contains(d.body, []byte(want)) {
			t.Errorf("delivered %s, want %s (the newest kept)", d.body, want)
		}
		wait(t, results, "hook sent")
	}
}

// TestNoSecretInLogs: neither a provider's URL (a Slack webhook's is its
// credential) nor its secret reaches the log, whatever fails: an answer
// 500, a receiver gone, a redirect (not followed), a timeout.
func TestNoSecretInLogs(t *testing.T) {
	const token = "T0SECRET/B0SECRET/XXXXSECRET"
	failing := newReceiver(t, 500)
	other := newReceiver(t)
	redirect := httptest.NewServer(http.RedirectHandler(other.URL+"/"+token, http.StatusTemporaryRedirect))
	defer redirect.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // then the server notices the client going
		<-r.Context().Done()
	}))
	defer slow.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	var logs bytes.Buffer
	n := New(config(
		&Provider{Name: "failing", Type: Slack, URL: failing.URL + "/services/" + token},
		&Provider{Name: "gone", Type: Slack, URL: gone.URL + "/services/" + token},
		&Provider{Name: "redirect", Type: Webhook, URL: redirect.URL + "/" + token, Secret: []byte("HMACSECRET")},
		&Provider{Name: "slow", Type: Webhook, URL: slow.URL + "/" + token, Timeout: 100 * time.Millisecond},
	), slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	results := started(t, n)
	n.Notify(Event{Type: ClusterHeld, Cluster: "prod"})
	for range 4 {
		if res := <-results; !strings.HasSuffix(res, " failed") {
			t.Errorf("result %s", res)
		}
	}
	if len(other.got) != 0 {
		t.Error("a redirect was followed")
	}
	for _, secret := range []string{"SECRET", "HMACSECRET"} {
		if strings.Contains(logs.String(), secret) {
			t.Errorf("the log has a secret:\n%s", logs.String())
		}
	}
	for _, want := range []string{"the receiver answered 500 Internal Server Error", "connection refused", "a redirect is not followed", "no answer within 100ms"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, logs.String())
		}
	}
}

// TestResponseBounded: a receiver's answer is read up to MaxResponse, not
// to its end.
func TestResponseBounded(t *testing.T) {
	wrote := make(chan int64, 1)
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		var n int64
		for range 256 { // 256 MiB, far beyond what socket buffers hold
			k, err := w.Write(chunk)
			n += int64(k)
			if err != nil {
				break
			}
		}
		wrote <- n
	}))
	defer big.Close()
	n := New(config(&Provider{Name: "big", Type: Webhook, URL: big.URL}), nil)
	results := started(t, n)
	n.Notify(Event{Type: RunStarted, Cluster: "prod"})
	wait(t, results, "big sent")
	if w := <-wrote; w >= 256<<20 {
		t.Errorf("the whole answer (%d bytes) was read", w)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0}, {"3", 3 * time.Second}, {"-1", 0}, {"999999", MaxBackoff}, {"soon", 0},
		{now.Add(10 * time.Second).Format(http.TimeFormat), 10 * time.Second},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := retryAfter(tt.in, now); got != tt.want {
			t.Errorf("retryAfter(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
