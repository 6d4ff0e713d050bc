package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/reports"
)

// The agent's bounds and defaults.
const (
	// DefaultWait is how long one long-poll asks serve to wait (serve
	// shortens a longer wait to its --max-wait).
	DefaultWait = 60 * time.Second
	// MaxGraph is the largest graph the agent reads, in bytes.
	MaxGraph = 256 << 20
	// MinBackoff and MaxBackoff bound the wait between two attempts after an
	// error: it doubles from MinBackoff up to MaxBackoff, with full jitter.
	MinBackoff = time.Second
	MaxBackoff = time.Minute
	// MaxRetryAfter bounds a Retry-After the agent honours.
	MaxRetryAfter = 10 * time.Minute
	// StateFile and GraphFile are the files the agent keeps in its state
	// directory.
	StateFile = "agent-state.json"
	GraphFile = "graph.yaml"
)

// Agent runs one node's graph of one type whenever serve hands it a new one.
type Agent struct {
	// Server is serve's base URL (http://host:port, or https).
	Server *url.URL
	// Cluster, Node and Graph name the graph the agent runs (names the
	// loader accepts; Graph "default" when empty).
	Cluster, Node, Graph string
	// Token is the node's token (fuelsync agent-token): it reports with it
	// and reads its graph with it.
	Token string
	// Command is run with the graph: argv, its first element the program.
	Command []string
	// Env is the environment the command starts from (os.Environ when nil);
	// the agent adds FUELSYNC_* to it.
	Env []string
	// Dir is the state directory: the state file, and the graph file the
	// command reads.
	Dir string
	// Wait is the long-poll's wait (DefaultWait when 0).
	Wait time.Duration
	// Once makes Run return after one graph is run (or found run already).
	Once bool
	// Stdout and Stderr receive the command's output (task lines too).
	Stdout, Stderr io.Writer
	// Client is the HTTP client (one without a timeout: each request has its
	// own deadline).
	Client *http.Client
	Log    *slog.Logger
	// KillGrace is how long a command has to end after SIGTERM when the
	// agent stops (10 s when 0).
	KillGrace time.Duration

	// sleep waits d or until ctx ends (tests shorten it).
	sleep func(ctx context.Context, d time.Duration) error
	// now is the clock (tests fix it).
	now func() time.Time
}

// Check checks the agent's settings before Run.
func (a *Agent) Check() error {
	if a.Server == nil || (a.Server.Scheme != "http" && a.Server.Scheme != "https") || a.Server.Host == "" {
		return errors.New("--server: want an http:// or https:// URL with a host")
	}
	if a.Server.User != nil {
		return errors.New("--server: the URL holds a user or password; give the node's token with --token-file")
	}
	if a.Graph == "" {
		a.Graph = "default"
	}
	for _, n := range [][2]string{{"--cluster", a.Cluster}, {"--node", a.Node}, {"--graph", a.Graph}} {
		if !loader.IsName(n[1]) {
			return fmt.Errorf("%s %q is not a name the loader accepts (%s)", n[0], n[1], loader.NamePattern)
		}
	}
	if len(a.Command) == 0 || a.Command[0] == "" {
		return errors.New("--exec: no command")
	}
	if a.Token == "" || strings.ContainsAny(a.Token, " \t\r\n") {
		return errors.New("the token is empty or holds a blank")
	}
	if a.Dir == "" {
		return errors.New("no state directory")
	}
	return nil
}

func (a *Agent) init() {
	if a.Wait <= 0 {
		a.Wait = DefaultWait
	}
	if a.KillGrace <= 0 {
		a.KillGrace = 10 * time.Second
	}
	if a.Client == nil {
		a.Client = &http.Client{}
	}
	if a.Log == nil {
		a.Log = slog.New(slog.DiscardHandler)
	}
	if a.Stdout == nil {
		a.Stdout = io.Discard
	}
	if a.Stderr == nil {
		a.Stderr = io.Discard
	}
	if a.sleep == nil {
		a.sleep = sleepCtx
	}
	if a.now == nil {
		a.now = time.Now
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// State is the agent's state file: the ETag of the last graph it ran (its
// 64 hexadecimal digits), and that run's final report while serve does not
// have it yet.
type State struct {
	Cluster string          `json:"cluster"`
	Node    string          `json:"node"`
	Graph   string          `json:"graph"`
	ETag    string          `json:"etag,omitempty"`
	Pending *reports.Report `json:"pending,omitempty"`
}

// readState reads the state file; a missing one is an empty state, and so is
// one of another cluster, node or graph (the agent was moved).
func (a *Agent) readState() (State, error) {
	st := State{Cluster: a.Cluster, Node: a.Node, Graph: a.Graph}
	data, err := os.ReadFile(filepath.Join(a.Dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	var got State
	if err := json.Unmarshal(data, &got); err != nil {
		a.Log.Warn("agent state file unreadable; starting afresh", "file", filepath.Join(a.Dir, StateFile), "error", err.Error())
		return st, nil
	}
	if got.Cluster != a.Cluster || got.Node != a.Node || got.Graph != a.Graph {
		a.Log.Warn("agent state file is another node's or graph's; starting afresh", "cluster", got.Cluster, "node", got.Node, "graph", got.Graph)
		return st, nil
	}
	if _, ok := reports.NormalizeETag(got.ETag); !ok {
		got.ETag = ""
	}
	return got, nil
}

// writeState writes the state file whole: a synced temporary file renamed
// over it.
func (a *Agent) writeState(st State) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(a.Dir, StateFile), append(data, '\n'))
}

func writeFileAtomic(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(filepath.Dir(name)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Run runs the agent until ctx ends (nil then), or, with Once, until one
// graph is run: its error then says the run failed (ErrRunFailed).
func (a *Agent) Run(ctx context.Context) error {
	if err := a.Check(); err != nil {
		return err
	}
	a.init()
	if err := os.MkdirAll(a.Dir, 0o700); err != nil {
		return err
	}
	st, err := a.readState()
	if err != nil {
		return err
	}
	// A result serve did not get before a restart is sent first.
	if st.Pending != nil {
		if err := a.deliver(ctx, st.Pending); err != nil {
			return stopped(ctx, err)
		}
		st.Pending = nil
		if err := a.writeState(st); err != nil {
			return err
		}
	}
	b := backoff{}
	for {
		graph, etag, err := a.poll(ctx, st.ETag)
		if ctx.Err() != nil {
			return nil
		}
		var re *retryError
		switch {
		case errors.As(err, &re) && a.Once && re.refused():
			return re
		case errors.As(err, &re):
			d := b.next()
			if re.after > 0 {
				d = re.after + time.Duration(rand.Int64N(int64(re.after/10)+1))
			}
			a.Log.Warn("agent: reading the graph", "error", re.Error(), "retry_in", d.Round(time.Millisecond).String())
			if a.sleep(ctx, d) != nil {
				return nil
			}
			continue
		case err != nil:
			return err
		}
		b = backoff{}
		if graph == nil {
			// 304: the graph the agent ran is still the applied one.
			if a.Once {
				a.Log.Info("agent: the applied graph is the one run last", "etag", st.ETag)
				return nil
			}
			continue
		}
		res := a.runGraph(ctx, graph, etag)
		if ctx.Err() != nil {
			// Stopped while the command ran: no result, and the ETag is
			// not noted, so that the graph runs again after a restart.
			return nil
		}
		st.ETag, st.Pending = etag, res
		if err := a.writeState(st); err != nil {
			return err
		}
		if err := a.deliver(ctx, res); err != nil {
			return stopped(ctx, err)
		}
		st.Pending = nil
		if err := a.writeState(st); err != nil {
			return err
		}
		if a.Once {
			if res.Status != reports.Success {
				return ErrRunFailed
			}
			return nil
		}
	}
}

// ErrRunFailed is Run's error with Once when the graph's run failed.
var ErrRunFailed = errors.New("the graph's run failed")

func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// backoff is the exponential backoff with full jitter between attempts.
type backoff struct{ n int }

func (b *backoff) next() time.Duration {
	d := MinBackoff << min(b.n, 10)
	if d > MaxBackoff {
		d = MaxBackoff
	}
	b.n++
	// Full jitter, never below half: d/2 + [0, d/2].
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// retryError is an attempt to try again after a while: serve away, 5xx, 429,
// or a 4xx that a later apply may mend (404). after is serve's Retry-After.
type retryError struct {
	msg   string
	after time.Duration
	code  int // the HTTP status; 0 when serve did not answer
}

// refused says the token was refused (401, 403): retried by an agent that
// runs on (the token may be mended on the server), final with Once.
func (e *retryError) refused() bool {
	return e.code == http.StatusUnauthorized || e.code == http.StatusForbidden
}

func (e *retryError) Error() string { return e.msg }

// retryAfter reads a Retry-After header (seconds or an HTTP date), bounded.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		d = time.Duration(s) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return max(0, min(d, MaxRetryAfter))
}

func (a *Agent) endpoint(suffix string) string {
	u := *a.Server
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/clusters/" + a.Cluster + "/nodes/" + a.Node + suffix
	u.RawQuery = ""
	return u.String()
}

// poll asks for the graph, waiting for a change of etag: the graph and its
// ETag (200), or nil (304). A *retryError is worth retrying.
func (a *Agent) poll(ctx context.Context, etag string) ([]byte, string, error) {
	u := a.endpoint("/graphs/" + a.Graph)
	if etag != "" && !a.Once {
		u += "?wait=" + strconv.Itoa(int(a.Wait/time.Second)) + "s"
	}
	rctx, cancel := context.WithTimeout(ctx, a.Wait+30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/yaml")
	req.Header.Set("Authorization", "Bearer "+a.Token)
	if etag != "" {
		req.Header.Set("If-None-Match", `"`+etag+`"`)
	}
	resp, err := a.Client.Do(req)
	if err != nil {
		return nil, "", &retryError{msg: "serve unreachable: " + scrub(err.Error(), a.Token)}
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotModified:
		return nil, "", nil
	case http.StatusOK:
	default:
		return nil, "", statusError("GET the graph", resp, a.now())
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxGraph+1))
	if err != nil {
		return nil, "", &retryError{msg: "reading the graph: " + err.Error()}
	}
	if len(body) > MaxGraph {
		return nil, "", &retryError{msg: fmt.Sprintf("the graph is over %d bytes", MaxGraph)}
	}
	got, ok := reports.NormalizeETag(resp.Header.Get("ETag"))
	sum := sha256.Sum256(body)
	if !ok || got != hex.EncodeToString(sum[:]) {
		return nil, "", &retryError{msg: "the graph's ETag is not the sha256 of its bytes (a proxy changed it?)"}
	}
	return body, got, nil
}

// statusError describes an answer that is not what was asked: a retryError
// for every status, since 401, 403 and 404 may be mended on the server (a
// token or a node added) without restarting the agent; its message is the
// answer's first line.
func statusError(what string, resp *http.Response, now time.Time) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	e := &retryError{msg: fmt.Sprintf("%s: %s: %s", what, resp.Status, sanitize(line, 200)), code: resp.StatusCode}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		e.after = retryAfter(resp.Header, now)
	}
	return e
}

// scrub takes the token out of a message (a URL or header echoed in an error).
func scrub(msg, token string) string {
	if token == "" {
		return msg
	}
	return strings.ReplaceAll(msg, token, "<token>")
}

// report posts r: nil once serve kept it; a *retryError when it may take it
// later; another error when it never will (400, 409: the report is dropped).
func (a *Agent) report(ctx context.Context, r *reports.Report) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, a.endpoint("/reports"), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+a.Token)
	resp, err := a.Client.Do(req)
	if err != nil {
		return &retryError{msg: "serve unreachable: " + scrub(err.Error(), a.Token)}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil
	case resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusRequestEntityTooLarge:
		err := statusError("POST the report", resp, a.now())
		return errors.New(err.Error())
	default:
		return statusError("POST the report", resp, a.now())
	}
}

// deliver posts r until serve keeps it, backing off between attempts; a
// report serve refuses for good is logged and dropped. It returns only ctx's
// error.
func (a *Agent) deliver(ctx context.Context, r *reports.Report) error {
	b := backoff{}
	for {
		err := a.report(ctx, r)
		var re *retryError
		switch {
		case err == nil:
			a.Log.Info("agent: reported", "graph", r.Graph, "etag", r.ETag, "status", r.Status)
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !errors.As(err, &re):
			a.Log.Error("agent: serve refused the report; dropped", "status", r.Status, "error", err.Error())
			return nil
		case a.Once && re.refused():
			return re
		}
		d := b.next()
		if re.after > 0 {
			d = re.after + time.Duration(rand.Int64N(int64(re.after/10)+1))
		}
		a.Log.Warn("agent: reporting", "status", r.Status, "error", re.Error(), "retry_in", d.Round(time.Millisecond).String())
		if err := a.sleep(ctx, d); err != nil {
			return err
		}
	}
}
