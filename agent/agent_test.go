package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/api"
)

// fakeServe is a serve for the agent's tests: it hands out the tasks of
// tasks in order, then answers 204 (at once, or after the wait asked), and
// checks each report as serve does (api.TaskReport.Check, the body bound).
type fakeServe struct {
	t      *testing.T
	mu     sync.Mutex
	tasks  []api.Task
	next   int
	polls  atomic.Int32
	prompt bool // answer a poll at once (a proxy that does not wait)
	got    []api.TaskReport
	tokens []string
}

func (f *fakeServe) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.tokens = append(f.tokens, r.Header.Get("Authorization"))
	f.mu.Unlock()
	switch {
	case strings.HasSuffix(r.URL.Path, "/tasks/next"):
		f.polls.Add(1)
		f.mu.Lock()
		if f.next < len(f.tasks) {
			t := f.tasks[f.next]
			f.next++
			f.mu.Unlock()
			json.NewEncoder(w).Encode(api.Assignment{Cluster: "demo", Node: "node-1", Run: "1", Graph: "default", Serial: 1,
				Attempt: 1, HeartbeatSeconds: 60, Task: t})
			return
		}
		f.mu.Unlock()
		if !f.prompt {
			wait, _ := time.ParseDuration(r.URL.Query().Get("wait"))
			select {
			case <-time.After(wait):
			case <-r.Context().Done():
			}
		}
		w.WriteHeader(http.StatusNoContent)
	case strings.HasSuffix(r.URL.Path, "/tasks"):
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, api.MaxReportBody))
		if err != nil {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return
		}
		var rep api.TaskReport
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rep); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := rep.Check(); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if rep.Status == api.TaskRunning {
			return
		}
		f.mu.Lock()
		f.got = append(f.got, rep)
		f.mu.Unlock()
	default:
		http.NotFound(w, r)
	}
}

// testAgent is an agent of node-1 of demo against base, its state in a
// temporary directory, with no real waiting between attempts.
func testAgent(t *testing.T, base string) *Agent {
	u, _ := url.Parse(base)
	a := &Agent{Server: u, Cluster: "demo", Node: "node-1", Token: "node-token", Dir: t.TempDir(), Wait: 2 * time.Second, Once: true}
	a.sleep = func(ctx context.Context, d time.Duration) error { return ctx.Err() }
	return a
}

// TestReportsFitServe (issue 40, item 2): a task whose output breaks
// serve's bound once in JSON (16 KiB of control characters, each six bytes
// there, and a NUL) is reported with the end of its output that fits, and
// taken: the agent applies serve's own rules before it sends.
func TestReportsFitServe(t *testing.T) {
	f := &fakeServe{t: t, tasks: []api.Task{{ID: "noisy", Type: "shell", Parameters: map[string]any{
		"cmd": `printf 'bad\000\033[31m message\n' >&2; head -c 20000 /dev/zero | tr '\0' '\001'; printf '<end>'; exit 1`, "retries": 0}}}}
	ts := httptest.NewServer(f)
	defer ts.Close()
	a := testAgent(t, ts.URL)
	if err := a.Run(context.Background()); err != ErrTaskFailed {
		t.Fatalf("Run: %v, want ErrTaskFailed", err)
	}
	if len(f.got) != 1 {
		t.Fatalf("serve took %d reports, want 1", len(f.got))
	}
	rep := f.got[0]
	if rep.Status != api.TaskFailed || len(rep.Output) < 1000 || !strings.HasSuffix(rep.Output, "\x01<end>") {
		t.Errorf("the report: %s, output of %d bytes ending %q", rep.Status, len(rep.Output), rep.Output[max(0, len(rep.Output)-6):])
	}
}

// TestRefusedReportReplaced (issue 40, item 2): a report serve refuses for
// its content is sent again without its output, still failed; the agent
// never says a report was taken that was not.
func TestRefusedReportReplaced(t *testing.T) {
	var refused atomic.Int32
	f := &fakeServe{t: t, tasks: []api.Task{{ID: "t", Type: "shell", Parameters: map[string]any{"cmd": "echo out; exit 3", "retries": 0}}}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/runs/1/tasks") && refused.Load() == 0 {
			body, _ := io.ReadAll(r.Body)
			if strings.Contains(string(body), `"output"`) {
				refused.Add(1)
				http.Error(w, "refusing the report: output: not like that", http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(strings.NewReader(string(body)))
		}
		f.ServeHTTP(w, r)
	}))
	defer ts.Close()
	a := testAgent(t, ts.URL)
	var logs strings.Builder
	a.Log = newTestLog(&logs)
	if err := a.Run(context.Background()); err != ErrTaskFailed {
		t.Fatalf("Run: %v", err)
	}
	if refused.Load() != 1 || len(f.got) != 1 || f.got[0].Status != api.TaskFailed || f.got[0].Output != "" ||
		!strings.Contains(f.got[0].Message, "the agent's full report was refused") {
		t.Fatalf("refused %d, taken %+v", refused.Load(), f.got)
	}
	if n := strings.Count(logs.String(), `msg="agent: reported"`); n != 1 {
		t.Errorf("the agent said reported %d times, want once (the second report):\n%s", n, logs.String())
	}
}

// TestQuickAnswersBackOff (issue 40, item 5): polls answered at once (a
// proxy that does not hold them) are spaced by the backoff, not repeated
// back to back.
func TestQuickAnswersBackOff(t *testing.T) {
	f := &fakeServe{t: t, prompt: true}
	ts := httptest.NewServer(f)
	defer ts.Close()
	a := testAgent(t, ts.URL)
	a.Once = false
	a.Wait = 8 * time.Second
	var slept []time.Duration
	ctx, cancel := context.WithCancel(context.Background())
	a.sleep = func(ctx context.Context, d time.Duration) error {
		slept = append(slept, d)
		if len(slept) == 6 {
			cancel()
		}
		return ctx.Err()
	}
	a.Run(ctx)
	if polls := f.polls.Load(); polls != 6 || len(slept) != 6 {
		t.Fatalf("%d polls, %d waits", polls, len(slept))
	}
	for i := 1; i < len(slept); i++ {
		if slept[i] < time.Second/2 || slept[i] < slept[i-1]/2 {
			t.Errorf("wait %d of %v after a quick answer, waits %v", i, slept[i], slept)
		}
	}
	if slept[len(slept)-1] < 4*time.Second {
		t.Errorf("the waits do not grow: %v", slept)
	}
}

// TestNoRedirect (issue 40, item 9): the agent follows no redirect, so its
// token never reaches another server.
func TestNoRedirect(t *testing.T) {
	var leaked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer other.Close()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	defer ts.Close()
	a := testAgent(t, ts.URL)
	a.Once = false
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	a.sleep = func(ctx context.Context, d time.Duration) error {
		if n++; n == 3 {
			cancel()
		}
		return ctx.Err()
	}
	a.Run(ctx)
	if leaked.Load() > 0 {
		t.Fatalf("the token reached the server redirected to, %d times", leaked.Load())
	}
}

// TestOneAgentPerStateDir (issue 40, item 8): a second agent on a state
// directory in use is refused at once.
func TestOneAgentPerStateDir(t *testing.T) {
	f := &fakeServe{t: t}
	ts := httptest.NewServer(f)
	defer ts.Close()
	first := testAgent(t, ts.URL)
	first.Once = false
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := make(chan struct{})
	first.sleep = func(ctx context.Context, d time.Duration) error { <-ctx.Done(); return ctx.Err() }
	go func() {
		unlock, err := lockDir(first.Dir + "/" + lockFile)
		if err != nil {
			done <- err
			return
		}
		close(started)
		<-ctx.Done()
		unlock()
		done <- nil
	}()
	<-started
	second := testAgent(t, ts.URL)
	second.Dir = first.Dir
	err := second.Run(context.Background())
	cancel()
	<-done
	if err == nil || !strings.Contains(err.Error(), "another agent runs with this state directory") {
		t.Fatalf("a second agent on the same directory: %v", err)
	}
}

// newTestLog is a text logger into w.
func newTestLog(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
