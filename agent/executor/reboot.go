package executor

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"
)

// msgDeferred is a reboot's message when the agent stops while it waits.
const msgDeferred = "the agent stopped while the node was rebooting: Recover gives the result at its next start"

// bootIDFile holds the kernel's boot id, new at every boot (Linux).
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// readBootID is the kernel's boot id.
func readBootID() (string, error) {
	b, err := os.ReadFile(bootIDFile)
	if err != nil {
		return "", err
	}
	id := strings.TrimSpace(string(b))
	if id == "" {
		return "", fmt.Errorf("%s is empty", bootIDFile)
	}
	return id, nil
}

// reboot runs a reboot task: the marker (the boot id now and the deadline)
// in the state directory, the reboot command, then the wait for the node
// to go down, which ends the agent; Recover at its next start gives the
// result. Should the deadline pass first, the node did not reboot.
func (e *Executor) reboot(ctx context.Context, p *plan) Result {
	if ctx.Err() != nil {
		return Result{Status: Failed, Message: msgStopped}
	}
	boot, err := e.cfg.bootID()
	if err != nil {
		return Result{Status: Failed, Message: "cannot tell when the node has rebooted: reading the boot id: " + err.Error()}
	}
	start := e.cfg.now().UTC()
	rec := rebootRecord{Task: p.task.ID, BootID: boot, Started: start, Deadline: start.Add(p.timeout), Timeout: p.timeout.Seconds()}
	if err := e.writeRecord(rebootFile, rec); err != nil {
		return Result{Status: Failed, Message: "writing the reboot marker: " + err.Error()}
	}
	out := newTail(e.cfg.MaxOutput, e.cfg.Journal)
	o := e.runCommand(ctx, p, out)
	r := Result{Attempts: 1}
	r.Output, r.OutputDropped = out.tail()
	switch {
	case o.stopped:
		r.Status, r.Message, r.Deferred = Failed, msgDeferred, true
		return r
	case !o.ok:
		if err := e.removeRecord(rebootFile); err != nil {
			e.cfg.Log.Warn("executor: removing the reboot marker", "error", err.Error())
		}
		r.Status, r.Message = Failed, o.msg
		return r
	}
	e.cfg.Log.Info("executor: the reboot command ran; waiting for the node to go down", "task", p.task.ID, "deadline", rec.Deadline)
	if err := e.cfg.sleep(ctx, rec.Deadline.Sub(e.cfg.now())); err != nil {
		r.Status, r.Message, r.Deferred = Failed, msgDeferred, true
		return r
	}
	v := e.rebootVerdict(rec)
	v.Output, v.OutputDropped = r.Output, r.OutputDropped
	return v
}

// recoverReboot applies the reboot rule to a marker found at start: the
// verdict now if the boot id changed or the deadline passed, else after
// waiting until the deadline.
func (e *Executor) recoverReboot(ctx context.Context, rec rebootRecord) (*Leftover, error) {
	l := &Leftover{Task: rec.Task, Type: "reboot", Started: rec.Started}
	if boot, err := e.cfg.bootID(); err == nil && boot == rec.BootID {
		if wait := rec.Deadline.Sub(e.cfg.now()); wait > 0 {
			e.cfg.Log.Info("executor: a reboot under way in this boot; waiting until its deadline", "task", rec.Task, "deadline", rec.Deadline)
			if err := e.cfg.sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
	}
	l.Result = e.rebootVerdict(rec)
	return l, nil
}

// rebootVerdict is the reboot rule: succeeded when the boot id is no longer
// the marker's, failed otherwise. The marker is removed.
func (e *Executor) rebootVerdict(rec rebootRecord) Result {
	if err := e.removeRecord(rebootFile); err != nil {
		e.cfg.Log.Warn("executor: removing the reboot marker", "error", err.Error())
	}
	boot, err := e.cfg.bootID()
	switch {
	case err != nil:
		return Result{Status: Failed, Attempts: 1, Message: "cannot tell whether the node rebooted: reading the boot id: " + err.Error()}
	case boot != rec.BootID:
		return Result{Status: Succeeded, Attempts: 1, Message: "the node rebooted (a new boot id)"}
	}
	return Result{Status: Failed, Attempts: 1, Message: "the node did not reboot within " + seconds(time.Duration(rec.Timeout*float64(time.Second)))}
}
