package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The files of the state directory.
const (
	runningFile = "running.json" // the process group running a task
	rebootFile  = "reboot.json"  // the reboot under way
	taskFile    = "task.json"    // an override's task, while it runs
)

// maxRecord bounds a record file read back.
const maxRecord = 64 << 10

// runningRecord is running.json: the process group that runs a task, from
// just after its start until its leader has been reaped.
type runningRecord struct {
	Task    string    `json:"task"`
	Type    string    `json:"type"`
	PGID    int       `json:"pgid"` // the leader's pid too
	Started time.Time `json:"started"`
	BootID  string    `json:"boot_id,omitempty"`
	// ProcStart is the leader's start time in the kernel's clock ticks
	// since boot (Linux): a leader pid reused by another process is not
	// taken for it.
	ProcStart string `json:"proc_start,omitempty"`
}

// rebootRecord is reboot.json: a reboot task under way.
type rebootRecord struct {
	Task     string    `json:"task"`
	BootID   string    `json:"boot_id"`
	Started  time.Time `json:"started"`
	Deadline time.Time `json:"deadline"`
	Timeout  float64   `json:"timeout"` // seconds
}

// Leftover is what Recover found of an earlier agent's task.
type Leftover struct {
	Task    string
	Type    string
	Started time.Time
	// PGID is the task's process group (0 for a reboot's marker alone);
	// Killed says it was still running and Recover killed it.
	PGID   int
	Killed bool
	// Result is the task's result to report: failed "the agent stopped
	// during the task", or the reboot rule's verdict for a reboot task.
	Result Result
}

// msgAgentStopped is a leftover task's message.
const msgAgentStopped = "the agent stopped during the task"

// writeRunning records group pgid as running t.
func (e *Executor) writeRunning(t Task, pgid int) error {
	boot, _ := e.cfg.bootID()
	start, _ := procStart(pgid)
	return e.writeRecord(runningFile, runningRecord{Task: t.ID, Type: t.Type, PGID: pgid,
		Started: e.cfg.now().UTC(), BootID: boot, ProcStart: start})
}

// writeRecord writes v as JSON to the state directory's file name, synced.
func (e *Executor) writeRecord(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(e.cfg.StateDir, name), bytes.NewReader(b), 0o600)
}

// readRecord reads the state directory's file name into v; found is false
// when there is none. A record that does not decode is removed, with a
// warning, and not found.
func (e *Executor) readRecord(name string, v any) (found bool, err error) {
	path := filepath.Join(e.cfg.StateDir, name)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	f.Close()
	if err != nil {
		return false, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(b) > maxRecord || json.Unmarshal(b, v) != nil {
		e.cfg.Log.Warn("executor: a record that does not decode; removed", "file", path)
		return false, e.removeRecord(name)
	}
	return true, nil
}

// removeRecord removes the state directory's file name, if there.
func (e *Executor) removeRecord(name string) error {
	err := os.Remove(filepath.Join(e.cfg.StateDir, name))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// ours reports whether rec's group still runs, in this boot, as the group
// the record names: its leader, when alive, is the process recorded.
func (e *Executor) ours(rec runningRecord) bool {
	if boot, err := e.cfg.bootID(); err == nil && boot != "" && rec.BootID != "" && boot != rec.BootID {
		return false // another boot: the group is gone
	}
	if !mayStop(rec.PGID) || !groupAlive(rec.PGID) {
		return false
	}
	if start, ok := procStart(rec.PGID); ok && rec.ProcStart != "" && start != rec.ProcStart {
		return false // the leader's pid is another process's now
	}
	return true
}

// clearStale runs before a task: a running record left by an earlier
// agent whose group has ended is removed; one whose group still runs stops
// the task (Recover kills it).
func (e *Executor) clearStale() error {
	var rec runningRecord
	found, err := e.readRecord(runningFile, &rec)
	if err != nil || !found {
		return err
	}
	if e.ours(rec) {
		return fmt.Errorf("task %q of an earlier agent still runs (process group %d): Recover stops it", oneLine(rec.Task, maxID), rec.PGID)
	}
	e.cfg.Log.Warn("executor: removed the record of an ended task that Recover did not see", "task", rec.Task)
	return e.removeRecord(runningFile)
}

// Recover is called once when the agent starts, before any Run. When an
// earlier agent left a task running (running.json), Recover kills its
// process group if it still runs in this boot (SIGTERM, then SIGKILL after
// KillGrace) and returns it, failed ("the agent stopped during the task").
// When it left a reboot under way (reboot.json), Recover applies the reboot
// rule: succeeded when the boot id changed; when it did not, it waits
// until the reboot's deadline (the node may still go down) and fails it
// ("the node did not reboot within Ns"). Nil when nothing was left over. A
// ctx done while it waits keeps the marker for the next start.
func (e *Executor) Recover(ctx context.Context) (*Leftover, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.removeRecord(taskFile); err != nil {
		return nil, err
	}
	var left *Leftover
	var rec runningRecord
	found, err := e.readRecord(runningFile, &rec)
	if err != nil {
		return nil, err
	}
	if found {
		left = e.recoverGroup(rec)
		if err := e.removeRecord(runningFile); err != nil {
			return nil, err
		}
	}
	var reb rebootRecord
	found, err = e.readRecord(rebootFile, &reb)
	if err != nil || !found {
		return left, err
	}
	if left != nil && (left.Task != reb.Task || left.Killed) {
		// Another task ran after the reboot's marker, or the reboot
		// command itself was still running: the marker is stale.
		e.cfg.Log.Warn("executor: a reboot marker left behind; removed", "task", reb.Task)
		return left, e.removeRecord(rebootFile)
	}
	l, err := e.recoverReboot(ctx, reb)
	if err != nil {
		return nil, err
	}
	if left != nil {
		l.PGID = left.PGID
	}
	return l, nil
}

// recoverGroup stops rec's group if it still runs and says what to report.
func (e *Executor) recoverGroup(rec runningRecord) *Leftover {
	l := &Leftover{Task: rec.Task, Type: rec.Type, Started: rec.Started, PGID: rec.PGID,
		Result: Result{Status: Failed, Message: msgAgentStopped, Attempts: 1}}
	if e.ours(rec) {
		e.cfg.Log.Warn("executor: an earlier agent's task still runs; stopping it", "task", rec.Task, "pgid", rec.PGID)
		e.stopGroup(rec.PGID, nil)
		l.Killed = true
	}
	return l
}
