package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fuelsync/fuelsync/agent/executor"
	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/names"
)

// The agent's bounds and defaults.
const (
	// DefaultWait is how long one long-poll asks serve to wait for a task
	// (serve shortens a longer wait to its --max-wait).
	DefaultWait = 60 * time.Second
	// MinBackoff and MaxBackoff bound the wait between two attempts after an
	// error: it doubles from MinBackoff up to MaxBackoff, with jitter.
	MinBackoff = time.Second
	MaxBackoff = time.Minute
	// StateFile is the agent's state file in its state directory.
	StateFile = "agent-state.json"
	lockFile  = "agent.lock"
)

// Agent runs its node's tasks as serve hands them out.
type Agent struct {
	// Server is serve's base URL (http://host:port, or https).
	Server *url.URL
	// Cluster and Node name the node (names as the loader accepts them).
	Cluster, Node string
	// Token is the node's token (fuelsync agent-token).
	Token string
	// Dir is the state directory: the state file, and the executor's.
	Dir string
	// Wait is the long-poll's wait (DefaultWait when 0).
	Wait time.Duration
	// Once makes Run return after a poll that brought no task: ErrTaskFailed
	// when a task it ran failed.
	Once bool
	// Executor configures the executors (StateDir is set to Dir/executor).
	Executor executor.Config
	// HTTP is the HTTP client (one that follows no redirect when nil).
	HTTP *http.Client
	Log  *slog.Logger

	// sleep waits d or until ctx ends; now is the clock (tests set them).
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time

	client *api.Client
	exec   *executor.Executor
	failed bool // a task failed (Once)
}

// ErrTaskFailed is Run's error with Once when a task the agent ran failed.
var ErrTaskFailed = errors.New("a task failed")

// Check checks the agent's settings before Run.
func (a *Agent) Check() error {
	if a.Server == nil || (a.Server.Scheme != "http" && a.Server.Scheme != "https") || a.Server.Host == "" {
		return errors.New("--server: want an http:// or https:// URL with a host")
	}
	if a.Server.User != nil {
		return errors.New("--server: the URL holds a user or password; give the node's token with --token-file")
	}
	for _, n := range [][2]string{{"--cluster", a.Cluster}, {"--node", a.Node}} {
		if !names.Valid(n[1]) {
			return fmt.Errorf("%s %q is not a name (%s, at most %d characters)", n[0], n[1], names.Pattern, names.MaxLength)
		}
	}
	if a.Token == "" || strings.ContainsAny(a.Token, " \t\r\n") {
		return errors.New("the token is empty or holds a blank")
	}
	if a.Dir == "" {
		return errors.New("no state directory")
	}
	return nil
}

func (a *Agent) init() error {
	if a.Wait <= 0 {
		a.Wait = DefaultWait
	}
	if a.Log == nil {
		a.Log = slog.New(slog.DiscardHandler)
	}
	if a.sleep == nil {
		a.sleep = sleepCtx
	}
	if a.now == nil {
		a.now = time.Now
	}
	a.client = &api.Client{Base: a.Server, Token: a.Token, HTTP: a.HTTP}
	cfg := a.Executor
	cfg.StateDir = filepath.Join(a.Dir, "executor")
	if cfg.Log == nil {
		cfg.Log = a.Log
	}
	var err error
	a.exec, err = executor.New(cfg)
	return err
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

// State is the agent's state file: the task it runs, and a report serve
// does not have yet.
type State struct {
	Cluster string          `json:"cluster"`
	Node    string          `json:"node"`
	Current *api.Assignment `json:"current,omitempty"`
	Pending *Pending        `json:"pending,omitempty"`
}

// Pending is a report not yet delivered.
type Pending struct {
	Run    string         `json:"run"`
	Report api.TaskReport `json:"report"`
}

// readState reads the state file; a missing one is an empty state, and so
// is one of another cluster or node (the agent was moved).
func (a *Agent) readState() (State, error) {
	st := State{Cluster: a.Cluster, Node: a.Node}
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
	if got.Cluster != a.Cluster || got.Node != a.Node {
		a.Log.Warn("agent state file is another node's; starting afresh", "cluster", got.Cluster, "node", got.Node)
		return st, nil
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

// Run runs the agent until ctx ends (nil then), or, with Once, until a poll
// brings no task.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.Check(); err != nil {
		return err
	}
	if err := os.MkdirAll(a.Dir, 0o700); err != nil {
		return err
	}
	unlock, err := lockDir(filepath.Join(a.Dir, lockFile))
	if err != nil {
		return err
	}
	defer unlock()
	if err := a.init(); err != nil {
		return err
	}
	st, err := a.recover(ctx)
	if err != nil {
		return err
	}
	next, err := a.deliverPending(ctx, &st)
	if err != nil {
		return stopped(ctx, err)
	}
	return a.loop(ctx, &st, next)
}

// recover finds what became of the task an earlier agent ran (the
// executor stops its leftover process group) and makes it the pending
// report: failed, "the agent stopped during the task", or a reboot's
// verdict.
func (a *Agent) recover(ctx context.Context) (State, error) {
	st, err := a.readState()
	if err != nil {
		return st, err
	}
	left, err := a.exec.Recover(ctx)
	if err != nil {
		return st, err
	}
	if st.Current == nil || st.Pending != nil {
		return st, nil
	}
	res := executor.Result{Status: executor.Failed, Message: "the agent stopped during the task"}
	start := a.now()
	if left != nil && left.Task == st.Current.Task.ID {
		res, start = left.Result, left.Started
	}
	a.Log.Warn("agent: the task an earlier agent ran", "run", st.Current.Run, "task", st.Current.Task.ID, "status", string(res.Status), "message", res.Message)
	st.Pending = &Pending{Run: st.Current.Run, Report: a.reportOf(st.Current, res, start, a.now())}
	st.Current = nil
	return st, a.writeState(st)
}

func stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// loop takes and runs tasks: next first, when serve's last answer carried
// one, then those it asks for.
func (a *Agent) loop(ctx context.Context, st *State, next *api.Assignment) error {
	b, quick := backoff{}, backoff{}
	for {
		for next != nil {
			if err := a.checkOwn(next); err != nil {
				a.Log.Error("agent: "+err.Error(), "task", next.Task.ID)
				break
			}
			var err error
			if next, err = a.runTask(ctx, st, next); err != nil {
				return stopped(ctx, err)
			}
		}
		asked := a.now()
		as, err := a.client.NextTask(ctx, a.Cluster, a.Node, a.Wait)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			code := api.Code(err)
			if a.Once && (code == http.StatusUnauthorized || code == http.StatusForbidden) {
				return err
			}
			d := a.retryIn(&b, err)
			a.Log.Warn("agent: asking for a task", "error", err.Error(), "retry_in", d.Round(time.Millisecond).String())
			if a.sleep(ctx, d) != nil {
				return nil
			}
			continue
		}
		b = backoff{}
		if as == nil {
			if a.Once {
				if a.failed {
					return ErrTaskFailed
				}
				return nil
			}
			// An answer much sooner than asked (a proxy that answers at
			// once): wait before asking again.
			if a.now().Sub(asked) < a.Wait/4 {
				if a.sleep(ctx, quick.next()) != nil {
					return nil
				}
			} else {
				quick = backoff{}
			}
			continue
		}
		quick = backoff{}
		if err := a.checkOwn(as); err != nil {
			a.Log.Error("agent: "+err.Error(), "task", as.Task.ID)
			if a.sleep(ctx, b.next()) != nil {
				return nil
			}
			continue
		}
		next = as
	}
}

// checkOwn refuses an assignment of another node.
func (a *Agent) checkOwn(as *api.Assignment) error {
	if as.Cluster != a.Cluster || as.Node != a.Node {
		return fmt.Errorf("serve gave a task of node %s of cluster %s; not run", as.Node, as.Cluster)
	}
	return nil
}

// retryIn is how long to wait after err: serve's Retry-After, else the
// backoff's next wait.
func (a *Agent) retryIn(b *backoff, err error) time.Duration {
	if after := api.RetryAfter(err); after > 0 {
		return after + time.Duration(rand.Int64N(int64(after/10)+1))
	}
	return b.next()
}

// runTask runs one task and reports it: the state file says which task runs
// while it runs, then holds its report until serve has it. It returns the
// node's next task when serve's answer carried one.
func (a *Agent) runTask(ctx context.Context, st *State, as *api.Assignment) (*api.Assignment, error) {
	st.Current = as
	if err := a.writeState(*st); err != nil {
		return nil, err
	}
	task := executor.Task{ID: as.Task.ID, Type: as.Task.Type, Parameters: as.Task.Parameters, Noop: as.Noop}
	a.Log.Info("agent: running a task", "run", as.Run, "task", as.Task.ID, "type", as.Task.Type, "attempt", as.Attempt)
	start := a.now()
	hbCtx, stopHeartbeat := context.WithCancel(ctx)
	go a.heartbeat(hbCtx, as)
	res := a.exec.Run(ctx, task)
	stopHeartbeat()
	if res.Deferred {
		// Stopped while the node reboots: the next start reports it.
		return nil, ctx.Err()
	}
	if ctx.Err() != nil {
		res.Status, res.Message = executor.Failed, "the agent stopped during the task"
	}
	if res.Status == executor.Failed {
		a.failed = true
	}
	st.Current = nil
	st.Pending = &Pending{Run: as.Run, Report: a.reportOf(as, res, start, a.now())}
	if err := a.writeState(*st); err != nil {
		return nil, err
	}
	dctx := ctx
	st.Pending.Report.Next = ctx.Err() == nil // the next task in the answer, unless stopping
	if ctx.Err() != nil {
		// Stopping: one short try to say so, else the next start does.
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
	}
	return a.deliverPending(dctx, st)
}

// reportOf is the report of a task's result, made to fit serve's rules.
func (a *Agent) reportOf(as *api.Assignment, res executor.Result, start, end time.Time) api.TaskReport {
	if end.Before(start) {
		end = start
	}
	start, end = start.UTC(), end.UTC()
	r := api.TaskReport{Task: as.Task.ID, Attempt: as.Attempt, Status: string(res.Status),
		StartedAt: &start, FinishedAt: &end, Message: res.Message, Output: string(res.Output)}
	r.Fit()
	return r
}

// heartbeat says every HeartbeatSeconds that the task still runs, until ctx
// ends.
func (a *Agent) heartbeat(ctx context.Context, as *api.Assignment) {
	every := time.Duration(max(as.HeartbeatSeconds, 1)) * time.Second
	for a.sleep(ctx, every) == nil {
		now := a.now().UTC()
		_, err := a.client.ReportTask(ctx, a.Cluster, a.Node, as.Run, &api.TaskReport{Task: as.Task.ID, Attempt: as.Attempt, Status: api.TaskRunning, StartedAt: &now})
		switch {
		case ctx.Err() != nil:
			return
		case api.Code(err) == http.StatusConflict:
			a.Log.Warn("agent: serve no longer holds this task running (it gave it up); its result will be refused", "task", as.Task.ID)
			return
		case err != nil:
			a.Log.Debug("agent: heartbeat", "error", err.Error())
		}
	}
}

// deliverPending posts the pending report until serve has it, and returns
// the node's next task when serve's answer carries one; a report serve
// refuses for its content (400, 413) is sent again as a minimal failed one,
// and one it no longer wants (409: the task is not running there any more)
// is dropped. Its error is ctx's, or the state file's.
func (a *Agent) deliverPending(ctx context.Context, st *State) (*api.Assignment, error) {
	if st.Pending == nil {
		return nil, nil
	}
	p := st.Pending
	b := backoff{}
	var next *api.Assignment
	for {
		ans, err := a.client.ReportTask(ctx, a.Cluster, a.Node, p.Run, &p.Report)
		code := api.Code(err)
		switch {
		case err == nil:
			a.Log.Info("agent: reported", "run", p.Run, "task", p.Report.Task, "status", p.Report.Status)
			next = ans.Next
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case code == http.StatusConflict:
			a.Log.Warn("agent: serve refused the report: the task no longer runs there; dropped", "run", p.Run, "task", p.Report.Task, "error", err.Error())
		case (code == http.StatusBadRequest || code == http.StatusRequestEntityTooLarge) && p.Report.Output != "":
			a.Log.Error("agent: serve refused the report; sending it without its output and message", "task", p.Report.Task, "error", err.Error())
			p.Report.Output, p.Report.Message = "", api.OneLine("the agent's full report was refused: "+err.Error(), api.MaxMessage)
			if p.Report.Status == api.TaskSucceeded || p.Report.Status == api.TaskSkipped {
				p.Report.Message = ""
			}
			continue
		case code == http.StatusBadRequest || code == http.StatusRequestEntityTooLarge:
			a.Log.Error("agent: serve refused the report; not reported", "task", p.Report.Task, "status", p.Report.Status, "error", err.Error())
		default:
			d := a.retryIn(&b, err)
			a.Log.Warn("agent: reporting", "task", p.Report.Task, "error", err.Error(), "retry_in", d.Round(time.Millisecond).String())
			if err := a.sleep(ctx, d); err != nil {
				return nil, err
			}
			continue
		}
		st.Pending = nil
		return next, a.writeState(*st)
	}
}

// backoff is the exponential backoff with jitter between attempts.
type backoff struct{ n int }

func (b *backoff) next() time.Duration {
	d := MinBackoff << min(b.n, 10)
	if d > MaxBackoff {
		d = MaxBackoff
	}
	b.n++
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}
