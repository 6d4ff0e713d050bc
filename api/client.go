package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Client speaks to serve: the agent's tasks and the runs. It follows no
// redirect (a token is never sent to another place than Base), bounds every
// answer it reads, and never puts the token in an error.
type Client struct {
	// Base is serve's URL (http:// or https://, without user or password).
	Base *url.URL
	// Token is the bearer token: the node's (agent) or the API's (CLI).
	Token string
	// HTTP is the client (a client that follows no redirect when nil). Each
	// request has its own deadline.
	HTTP *http.Client
}

// MaxAnswer bounds an answer the client reads.
const MaxAnswer = 64 << 20

// StatusError is an answer that is not a success: its status, first line,
// and Retry-After (0 when none, bounded to MaxRetryAfter).
type StatusError struct {
	Code       int
	Message    string
	RetryAfter time.Duration
}

// MaxRetryAfter bounds a Retry-After the client honours.
const MaxRetryAfter = 10 * time.Minute

func (e *StatusError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Code, http.StatusText(e.Code), e.Message)
}

// Code returns err's HTTP status (0 when serve did not answer).
func Code(err error) int {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Code
	}
	return 0
}

// noRedirect is the default client: redirects are answers, not followed.
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return noRedirect
}

// do sends a request with in as its JSON body (when not nil) and reads the
// JSON answer into out (when not nil and the answer has a body). A status
// outside 2xx is a *StatusError.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, in, out any, timeout time.Duration) (int, error) {
	if c.Base == nil {
		return 0, errors.New("no server URL")
	}
	u := *c.Base
	// path is escaped (clusterPath): it joins the base's escaped path.
	p, err := url.Parse(strings.TrimSuffix(u.EscapedPath(), "/") + path)
	if err != nil {
		return 0, err
	}
	u.Path, u.RawPath = p.Path, p.RawPath
	u.RawQuery = query.Encode()
	var body io.Reader
	if in != nil {
		data, err := Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := c.http().Do(req)
	if err != nil {
		return 0, errors.New(c.scrub(err.Error()))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("reading the answer: %s", c.scrub(err.Error()))
	}
	if len(data) > MaxAnswer {
		return resp.StatusCode, fmt.Errorf("the answer is over %d bytes", MaxAnswer)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, &StatusError{Code: resp.StatusCode, Message: firstLine(c.scrub(string(data))),
			RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now())}
	}
	if out != nil && len(data) > 0 && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(data, out); err != nil {
			return resp.StatusCode, fmt.Errorf("the answer is not what was asked: %w", err)
		}
	}
	return resp.StatusCode, nil
}

// scrub takes the token out of a message.
func (c *Client) scrub(msg string) string {
	if c.Token == "" {
		return msg
	}
	return strings.ReplaceAll(msg, c.Token, "<token>")
}

// firstLine is an answer's first line, printable and at most 300 bytes.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	line = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, line)
	if len(line) > 300 {
		line = line[:300] + "…"
	}
	return line
}

// retryAfter reads a Retry-After value (seconds or an HTTP date), bounded.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
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

// RetryAfter returns err's Retry-After (0 when none).
func RetryAfter(err error) time.Duration {
	var se *StatusError
	if errors.As(err, &se) {
		return se.RetryAfter
	}
	return 0
}

func clusterPath(cluster string, rest ...string) string {
	p := "/api/v1/clusters/" + url.PathEscape(cluster)
	for _, r := range rest {
		p += "/" + url.PathEscape(r)
	}
	return p
}

// NextTask asks for node's next task, waiting up to wait for one: nil when
// none came in that time.
func (c *Client) NextTask(ctx context.Context, cluster, node string, wait time.Duration) (*Assignment, error) {
	var a Assignment
	q := url.Values{"wait": {strconv.Itoa(int(wait/time.Second)) + "s"}}
	code, err := c.do(ctx, http.MethodGet, clusterPath(cluster, "nodes", node, "tasks", "next"), q, nil, &a, wait+30*time.Second)
	if err != nil || code == http.StatusNoContent {
		return nil, err
	}
	return &a, nil
}

// ReportTask reports a task of run; the answer may carry the node's next
// task (ReportAnswer.Next).
func (c *Client) ReportTask(ctx context.Context, cluster, node, run string, r *TaskReport) (*ReportAnswer, error) {
	var a ReportAnswer
	_, err := c.do(ctx, http.MethodPost, clusterPath(cluster, "nodes", node, "runs", run, "tasks"), nil, r, &a, 30*time.Second)
	return &a, err
}

// StartRun starts a run of cluster.
func (c *Client) StartRun(ctx context.Context, cluster string, req *StartRun) (*Run, error) {
	var run Run
	_, err := c.do(ctx, http.MethodPost, clusterPath(cluster, "runs"), nil, req, &run, time.Minute)
	return &run, err
}

// RetryRun runs again what did not succeed in cluster's last run.
func (c *Client) RetryRun(ctx context.Context, cluster string, req *RetryRun) (*Run, error) {
	var run Run
	_, err := c.do(ctx, http.MethodPost, clusterPath(cluster, "runs", "retry"), nil, req, &run, time.Minute)
	return &run, err
}

// StopRun stops cluster's running run.
func (c *Client) StopRun(ctx context.Context, cluster string) (*Run, error) {
	var run Run
	_, err := c.do(ctx, http.MethodPost, clusterPath(cluster, "runs", "stop"), nil, struct{}{}, &run, time.Minute)
	return &run, err
}

// Runs lists cluster's runs, newest first.
func (c *Client) Runs(ctx context.Context, cluster string) ([]Run, error) {
	var runs []Run
	_, err := c.do(ctx, http.MethodGet, clusterPath(cluster, "runs"), nil, nil, &runs, time.Minute)
	return runs, err
}

// Run reads one run of cluster, with its nodes and tasks ("latest": the
// newest).
func (c *Client) Run(ctx context.Context, cluster, id string) (*Run, error) {
	return c.RunTasks(ctx, cluster, id, TasksAll)
}

// RunTasks reads one run of cluster with the tasks asked: TasksAll,
// TasksFailed or TasksNone.
func (c *Client) RunTasks(ctx context.Context, cluster, id, tasks string) (*Run, error) {
	var run Run
	_, err := c.do(ctx, http.MethodGet, clusterPath(cluster, "runs", id), url.Values{"tasks": {tasks}}, nil, &run, time.Minute)
	return &run, err
}

// Get reads serve's JSON answer at path (/api/v1/...) into out: what the
// other methods do not name (the clusters' status lines).
func (c *Client) Get(ctx context.Context, path string, out any) error {
	_, err := c.do(ctx, http.MethodGet, path, nil, nil, out, time.Minute)
	return err
}

// ClustersPath is GET: every cluster's status line, as fuelsync status
// prints them (the server package's ClusterLine).
const ClustersPath = "/api/v1/clusters"

// Clusters reads every cluster's status line into lines (a pointer to a
// slice of the server package's ClusterLine, which this package does not
// import).
func (c *Client) Clusters(ctx context.Context, lines any) error {
	_, err := c.do(ctx, http.MethodGet, ClustersPath, nil, nil, lines, 30*time.Second)
	return err
}

// Approve asks serve to apply the plan of cluster that awaits approval:
// only if it is the plan of revision (a commit, or its artifacts digest)
// when revision is not empty.
func (c *Client) Approve(ctx context.Context, cluster, revision string) (*Approved, error) {
	var in any // no body: whichever plan awaits
	if revision != "" {
		in = &Approval{Revision: revision}
	}
	var a Approved
	_, err := c.do(ctx, http.MethodPost, clusterPath(cluster, "approve"), nil, in, &a, 30*time.Second)
	return &a, err
}
