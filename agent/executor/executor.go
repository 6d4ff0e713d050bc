package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Task is one task of a node's rendered graph as serve dispatches it (the
// task entry of the node's expanded view: id, type, parameters), plus the
// run's noop flag. Its JSON form is what an override command reads.
type Task struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Parameters as decoded from JSON or YAML: strings, booleans, nil, maps
	// (map[string]any), lists ([]any) and numbers, which may be float64
	// (encoding/json's default), json.Number (Decoder.UseNumber) or any Go
	// integer type. A nil value counts as absent.
	Parameters map[string]any `json:"parameters,omitempty"`
	// Noop marks a noop run: puppet runs with --noop, every other type is
	// skipped.
	Noop bool `json:"noop,omitempty"`
}

// Status is how a task ended.
type Status string

// The statuses of a Result.
const (
	Succeeded Status = "succeeded"
	Failed    Status = "failed"
	Skipped   Status = "skipped"
)

// Result is how one task ended.
type Result struct {
	Status Status
	// Message says why, on one line of at most MaxMessage bytes: "puppet
	// exited 1 (after 3 attempts)", "timed out after 120s", "unknown task
	// type \"foo\" …". Never a parameter's value beyond a short quote of a
	// wrong one.
	Message string
	// Output is the last Config.MaxOutput bytes of the command's combined
	// standard output and error, over all attempts (with a line
	// "fuelsync: attempt N of M …" between them); OutputDropped counts the
	// bytes before it that were not kept.
	Output        []byte
	OutputDropped int64
	// Attempts is how many times the task ran: 0 when it did not (a failed
	// check, skipped), up to 1 + its retries.
	Attempts int
	// Deferred is set when the agent was stopped (ctx) while the node was
	// rebooting for a reboot task: the task's result is not known yet, and
	// Recover at the agent's next start reports it. Do not report this
	// Result.
	Deferred bool
}

// MaxMessage bounds Result.Message, in bytes.
const MaxMessage = 1024

// The defaults of Config.
const (
	DefaultMaxOutput = 16 << 10
	DefaultKillGrace = 10 * time.Second
	// maxMaxOutput bounds Config.MaxOutput.
	maxMaxOutput = 16 << 20
)

// Config is how an Executor runs tasks. StateDir is required; the zero
// value of every other field means its default.
type Config struct {
	// Puppet is the puppet command's argv prefix (default puppet apply
	// --detailed-exitcodes); the executor adds --modulepath=<puppet_modules>,
	// --noop on a noop run, and the manifest. Exit 0 and 2 are success.
	Puppet []string
	// Reboot is the reboot command's argv (default shutdown -r now).
	Reboot []string
	// Rsync is rsync's argv prefix (default rsync); the executor adds
	// -c -r --delete -l, the source and the destination.
	Rsync []string
	// Overrides maps a task type to a command run instead of the built-in
	// executor (or for a type with none), as argv: the task as JSON on its
	// standard input and in the file named by FUELSYNC_TASK_FILE; exit 0 is
	// success.
	Overrides map[string][]string
	// Root, when set, is the node's root directory: every absolute path of
	// a task (cwd, puppet_manifest, puppet_modules, path, src, dst) is taken
	// under it, as in a container that mounts the node's root there (or a
	// test). A shell task's command is run as written.
	Root string
	// StateDir is where the executor keeps the running process group's
	// record (running.json), the reboot marker (reboot.json) and an
	// override's task file (task.json). It is created (0700) if missing.
	StateDir string
	// MaxOutput is how many bytes of a task's output Result.Output keeps
	// (default 16 KiB, at most 16 MiB).
	MaxOutput int
	// Env is the commands' base environment (os.Environ() when nil).
	Env []string
	// KillGrace is how long a process group has between SIGTERM and
	// SIGKILL (default 10 s).
	KillGrace time.Duration
	// Journal, when set, receives every command's output as it comes (the
	// agent's standard output: the journal under systemd).
	Journal io.Writer
	// Log receives the executor's own lines (a task started, ended, a
	// leftover killed); never a parameter's value. Default: discarded.
	Log *slog.Logger

	// Test seams, set by the package's tests.
	bootID func() (string, error)
	now    func() time.Time
	sleep  func(ctx context.Context, d time.Duration) error
}

// Executor runs a node's tasks, one at a time (concurrent calls wait).
type Executor struct {
	cfg Config
	mu  sync.Mutex
}

// New checks cfg, fills in its defaults and creates the state directory.
func New(cfg Config) (*Executor, error) {
	if err := supported(); err != nil {
		return nil, err
	}
	if cfg.StateDir == "" {
		return nil, errors.New("executor: the state directory is required")
	}
	dir, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("executor: the state directory: %w", err)
	}
	cfg.StateDir = dir
	if err := cfg.defaults(); err != nil {
		return nil, fmt.Errorf("executor: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("executor: creating the state directory: %w", err)
	}
	return &Executor{cfg: cfg}, nil
}

// defaults fills in cfg's defaults and checks what was given.
func (cfg *Config) defaults() error {
	for _, c := range []struct {
		name string
		argv *[]string
		def  []string
	}{
		{"the puppet command", &cfg.Puppet, []string{"puppet", "apply", "--detailed-exitcodes"}},
		{"the reboot command", &cfg.Reboot, []string{"shutdown", "-r", "now"}},
		{"the rsync command", &cfg.Rsync, []string{"rsync"}},
	} {
		if len(*c.argv) == 0 {
			*c.argv = c.def
		} else if err := checkArgv(*c.argv); err != nil {
			return fmt.Errorf("%s: %w", c.name, err)
		}
	}
	for typ, argv := range cfg.Overrides {
		if !validTypeName(typ) {
			return fmt.Errorf("an override's task type %q: want letters, digits, '_', '-' or '.', at most %d bytes", typ, maxType)
		}
		if err := checkArgv(argv); err != nil {
			return fmt.Errorf("the override for %s: %w", typ, err)
		}
	}
	switch {
	case cfg.MaxOutput == 0:
		cfg.MaxOutput = DefaultMaxOutput
	case cfg.MaxOutput < 0 || cfg.MaxOutput > maxMaxOutput:
		return fmt.Errorf("the output bound %d: want 1 to %d bytes", cfg.MaxOutput, maxMaxOutput)
	}
	switch {
	case cfg.KillGrace == 0:
		cfg.KillGrace = DefaultKillGrace
	case cfg.KillGrace < 0:
		return fmt.Errorf("the kill grace %s is negative", cfg.KillGrace)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.bootID == nil {
		cfg.bootID = readBootID
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	if cfg.sleep == nil {
		cfg.sleep = sleep
	}
	return nil
}

// checkArgv checks a configured command: at least a program, no NUL.
func checkArgv(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("no program")
	}
	for _, a := range argv {
		if hasNUL(a) {
			return errors.New("a NUL byte in an argument")
		}
	}
	return nil
}

// sleep waits d, or until ctx is done (its error).
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Check checks t's id, type and parameters without running anything: the
// checks Run makes first. Its error is a *CheckError listing every problem.
func (e *Executor) Check(t Task) error {
	_, err := e.plan(t)
	return err
}

// Run runs t and says how it ended. A task whose check fails is not run. A
// failed attempt is run again after its interval while retries remain.
// When ctx is done, the running command's process group gets SIGTERM, then
// SIGKILL after KillGrace, and the task fails ("stopped: the agent is
// stopping").
func (e *Executor) Run(ctx context.Context, t Task) Result {
	e.mu.Lock()
	defer e.mu.Unlock()
	start := e.cfg.now()
	log := e.cfg.Log.With("task", oneLine(t.ID, maxID), "type", oneLine(t.Type, maxType))
	var r Result
	p, err := e.plan(t)
	switch {
	case err != nil:
		r = Result{Status: Failed, Message: "invalid task: " + err.Error()}
	case p.skip != "":
		r = Result{Status: Skipped, Message: p.skip}
	default:
		if err := e.clearStale(); err != nil {
			r = Result{Status: Failed, Message: err.Error()}
			break
		}
		log.Info("executor: task started", "timeout", seconds(p.timeout), "retries", p.retries)
		if p.action == actReboot {
			r = e.reboot(ctx, p)
		} else {
			r = e.attempts(ctx, p, log)
		}
	}
	r.Message = oneLine(r.Message, MaxMessage)
	log.Info("executor: task ended", "status", string(r.Status), "message", r.Message,
		"attempts", r.Attempts, "took", e.cfg.now().Sub(start).Round(time.Millisecond).String())
	return r
}

// attempts runs p until an attempt succeeds, the retries are spent or ctx
// is done.
func (e *Executor) attempts(ctx context.Context, p *plan, log *slog.Logger) Result {
	out := newTail(e.cfg.MaxOutput, e.cfg.Journal)
	total := p.retries + 1
	var o outcome
	n := 0
	for {
		n++
		o = e.attempt(ctx, p, out)
		if o.ok || o.stopped || n == total {
			break
		}
		log.Warn("executor: attempt failed", "attempt", n, "of", total, "message", o.msg, "again_in", seconds(p.interval))
		fmt.Fprintf(out, "\nfuelsync: attempt %d of %d failed (%s); attempt %d in %s\n", n, total, o.msg, n+1, seconds(p.interval))
		if err := e.cfg.sleep(ctx, p.interval); err != nil {
			o = outcome{msg: msgStopped, stopped: true}
			break
		}
	}
	r := Result{Status: Failed, Message: o.msg, Attempts: n}
	if o.ok {
		r.Status = Succeeded
	}
	if n > 1 {
		r.Message += fmt.Sprintf(" (attempt %d of %d)", n, total)
	}
	r.Output, r.OutputDropped = out.tail()
	return r
}

// outcome is how one attempt ended.
type outcome struct {
	ok      bool
	msg     string
	stopped bool // by ctx: no further attempt
}

// msgStopped is the message of a task stopped by Run's ctx.
const msgStopped = "stopped: the agent is stopping"

// attempt runs p once.
func (e *Executor) attempt(ctx context.Context, p *plan, out io.Writer) outcome {
	if ctx.Err() != nil {
		return outcome{msg: msgStopped, stopped: true}
	}
	switch p.action {
	case actUpload:
		return e.upload(p)
	case actCopy:
		return e.copyFiles(p)
	}
	if p.mkdir != "" {
		if err := mkdirs(p.mkdir, 0o755); err != nil {
			return outcome{msg: err.Error()}
		}
	}
	if p.override {
		return e.runOverride(ctx, p, out)
	}
	return e.runCommand(ctx, p, out)
}
