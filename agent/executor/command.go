package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"
)

// outputGrace is how long a command's output may stay open after the
// command exited (a child left in the background holding it) before the
// executor stops reading it.
const outputGrace = 2 * time.Second

// pollGroup is how often the executor looks whether a process group it
// signalled has ended.
const pollGroup = 20 * time.Millisecond

// runOverride writes the task file and runs p's override command with the
// task as JSON on its standard input.
func (e *Executor) runOverride(ctx context.Context, p *plan, out io.Writer) outcome {
	task, err := json.Marshal(p.task)
	if err != nil {
		return outcome{msg: "encoding the task: " + err.Error()}
	}
	file := filepath.Join(e.cfg.StateDir, taskFile)
	if err := writeAtomic(file, bytes.NewReader(task), 0o600); err != nil {
		return outcome{msg: "writing the task file: " + err.Error()}
	}
	defer os.Remove(file) // the parameters may hold secrets
	noop := "0"
	if p.task.Noop {
		noop = "1"
	}
	return e.command(ctx, p, out, task, "FUELSYNC_TASK_FILE="+file, "FUELSYNC_NOOP="+noop)
}

// runCommand runs p's command.
func (e *Executor) runCommand(ctx context.Context, p *plan, out io.Writer) outcome {
	return e.command(ctx, p, out, nil)
}

// command runs p.argv in its own process group, in p.cwd, with stdin and
// env added to the base environment, its output into out; recorded in
// running.json while it runs; stopped (the whole group) at p.timeout or
// when ctx is done.
func (e *Executor) command(ctx context.Context, p *plan, out io.Writer, stdin []byte, env ...string) outcome {
	if fi, err := os.Stat(p.cwd); err != nil {
		return outcome{msg: "the working directory: " + err.Error()}
	} else if !fi.IsDir() {
		return outcome{msg: fmt.Sprintf("the working directory %s: not a directory", p.cwd)}
	}
	cmd := exec.Command(p.argv[0], p.argv[1:]...)
	cmd.Dir = p.cwd
	base := e.cfg.Env
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = append(slices.Clone(base), append([]string{"FUELSYNC_TASK_ID=" + p.task.ID, "FUELSYNC_TASK_TYPE=" + p.task.Type}, env...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	cmd.Stdout, cmd.Stderr = out, out // one pipe: the output in the order written
	cmd.WaitDelay = outputGrace
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return outcome{msg: fmt.Sprintf("cannot start %s: %v", p.label, err)}
	}
	pgid := cmd.Process.Pid
	done := make(chan struct{})
	go func() {
		cmd.Wait() // its error is read from cmd.ProcessState
		close(done)
	}()
	if err := e.writeRunning(p.task, pgid); err != nil {
		e.stopGroup(pgid, done)
		return outcome{msg: "recording the running process group: " + err.Error()}
	}
	stop := e.await(ctx, pgid, p.timeout, done)
	if err := e.removeRecord(runningFile); err != nil {
		e.cfg.Log.Warn("executor: removing the running record", "error", err.Error())
	}
	switch stop {
	case stopTimeout:
		return outcome{msg: "timed out after " + seconds(p.timeout)}
	case stopCancel:
		return outcome{msg: msgStopped, stopped: true}
	}
	code, sig := exitStatus(cmd.ProcessState)
	switch {
	case sig != "":
		return outcome{msg: fmt.Sprintf("%s was killed by signal %s", p.label, sig)}
	case code == 0 || slices.Contains(p.okCodes, code):
		return outcome{ok: true, msg: fmt.Sprintf("%s exited %d%s", p.label, code, exitMeaning(p, code))}
	default:
		return outcome{msg: fmt.Sprintf("%s exited %d%s", p.label, code, exitMeaning(p, code))}
	}
}

// exitMeaning explains puppet's detailed exit codes.
func exitMeaning(p *plan, code int) string {
	if p.task.Type != "puppet" || p.override {
		return ""
	}
	switch code {
	case 0:
		return " (no changes)"
	case 2:
		return " (changes applied)"
	case 4:
		return " (failures)"
	case 6:
		return " (changes and failures)"
	}
	return ""
}

type stopReason int

const (
	stopNone    stopReason = iota // the command ended
	stopTimeout                   // its timeout
	stopCancel                    // ctx
)

// await waits for done (the command ended), its timeout (0: none) or ctx,
// and stops the group in the last two cases.
func (e *Executor) await(ctx context.Context, pgid int, timeout time.Duration, done <-chan struct{}) stopReason {
	var expired <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-done:
		return stopNone
	case <-expired:
		e.stopGroup(pgid, done)
		return stopTimeout
	case <-ctx.Done():
		e.stopGroup(pgid, done)
		return stopCancel
	}
}

// stopGroup ends process group pgid: SIGTERM, then SIGKILL to what is left
// of it KillGrace later (at once when nothing is left). done, when not nil,
// is closed when the group's leader (the executor's child) is reaped; it is
// waited for. It returns when the group has ended, or a second after
// SIGKILL.
func (e *Executor) stopGroup(pgid int, done <-chan struct{}) {
	if !mayStop(pgid) {
		return
	}
	signalGroup(pgid, sigTerm)
	deadline := time.Now().Add(e.cfg.KillGrace)
	if done != nil {
		t := time.NewTimer(e.cfg.KillGrace)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	waitGroup(pgid, deadline)
	if groupAlive(pgid) {
		signalGroup(pgid, sigKill)
	}
	if done != nil {
		<-done
	}
	waitGroup(pgid, time.Now().Add(time.Second))
}

// waitGroup waits until group pgid has ended or deadline has passed.
func waitGroup(pgid int, deadline time.Time) {
	for groupAlive(pgid) && time.Now().Before(deadline) {
		time.Sleep(pollGroup)
	}
}

// mayStop reports whether the executor may signal group pgid: never its own
// group, init's, or a bad number.
func mayStop(pgid int) bool { return pgid > 1 && pgid != ownPgrp() }
