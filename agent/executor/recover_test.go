//go:build linux

package executor

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// leftover starts what a killed agent leaves behind: a process group (a
// shell ignoring SIGTERM, and a child of it in the background), and
// returns the shell's command and the child's pid once both run.
func leftover(t *testing.T) (*exec.Cmd, int) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", "trap '' TERM; sleep 1000 & echo $! > child; echo ready; wait")
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
		t.Fatalf("the leftover group: %q, %v", line, err)
	}
	return cmd, readPid(t, filepath.Join(dir, "child"))
}

// TestRecoverKillsLeftover: a group recorded in running.json that still
// runs in this boot is killed (SIGKILL after the grace, as it ignores
// SIGTERM), its task returned failed, the record removed.
func TestRecoverKillsLeftover(t *testing.T) {
	cmd, child := leftover(t)
	earlier := newTestExec(t, nil)
	if err := earlier.writeRunning(Task{ID: "keystone", Type: "puppet"}, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	// The agent starts again: a new Executor on the same state directory.
	e := newTestExec(t, func(c *Config) { c.StateDir = earlier.cfg.StateDir })
	left, err := e.Recover(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if left == nil || left.Task != "keystone" || left.Type != "puppet" || !left.Killed || left.PGID != cmd.Process.Pid ||
		left.Result.Status != Failed || left.Result.Message != "the agent stopped during the task" || left.Started.IsZero() {
		t.Fatalf("Recover: %+v", left)
	}
	if !dead(cmd.Process.Pid) {
		t.Fatalf("the leader %d still runs", cmd.Process.Pid)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the leader ended with %v, want killed by SIGKILL", err)
	}
	if !dead(child) {
		t.Errorf("the child %d still runs", child)
	}
	if exists(filepath.Join(e.cfg.StateDir, runningFile)) {
		t.Error("running.json is left")
	}
	if left, err := e.Recover(t.Context()); left != nil || err != nil {
		t.Errorf("a second Recover: %+v, %v", left, err)
	}
}

// TestRecoverLeavesOthers: a record whose group has ended, is of another
// boot, or whose leader pid is now another process's: nothing is killed,
// the task is still reported failed.
func TestRecoverLeavesOthers(t *testing.T) {
	cmd, child := leftover(t)
	gone := exec.Command("true")
	gone.Run()
	tests := []struct {
		name string
		rec  runningRecord
	}{
		{"the group has ended", runningRecord{PGID: gone.Process.Pid, BootID: "boot-1"}},
		{"another boot", runningRecord{PGID: cmd.Process.Pid, BootID: "boot-0"}},
		{"the leader's pid reused", runningRecord{PGID: cmd.Process.Pid, BootID: "boot-1", ProcStart: "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newTestExec(t, nil)
			tt.rec.Task, tt.rec.Type, tt.rec.Started = "globals", "puppet", time.Now()
			if err := e.writeRecord(runningFile, tt.rec); err != nil {
				t.Fatal(err)
			}
			left, err := e.Recover(t.Context())
			if err != nil || left == nil || left.Killed || left.Task != "globals" || left.Result.Status != Failed || left.Result.Message != msgAgentStopped {
				t.Errorf("Recover: %+v, %v", left, err)
			}
			if dead(cmd.Process.Pid) || dead(child) {
				t.Fatal("Recover killed a group that was not the task's")
			}
		})
	}
}

// TestRecoverBadRecord: a record that does not decode is removed; Recover
// finds nothing and does not fail; the override's task file is removed.
func TestRecoverBadRecord(t *testing.T) {
	e := newTestExec(t, nil)
	os.WriteFile(filepath.Join(e.cfg.StateDir, runningFile), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(e.cfg.StateDir, taskFile), []byte("{}"), 0o600)
	left, err := e.Recover(t.Context())
	if left != nil || err != nil {
		t.Errorf("Recover: %+v, %v", left, err)
	}
	for _, f := range []string{runningFile, taskFile} {
		if exists(filepath.Join(e.cfg.StateDir, f)) {
			t.Errorf("%s is left", f)
		}
	}
}

// TestRunWhileLeftoverRuns: Run refuses to start a task beside an earlier
// agent's group that still runs (Recover was not called), and removes the
// record of one that has ended.
func TestRunWhileLeftoverRuns(t *testing.T) {
	cmd, _ := leftover(t)
	e := newTestExec(t, nil)
	dir := t.TempDir()
	e.writeRunning(Task{ID: "old", Type: "shell"}, cmd.Process.Pid)
	r := e.Run(t.Context(), shell("touch ran", "cwd", dir))
	want := `task "old" of an earlier agent still runs (process group ` + strconv.Itoa(cmd.Process.Pid) + `): Recover stops it`
	if r.Status != Failed || r.Message != want || exists(filepath.Join(dir, "ran")) {
		t.Errorf("Run: %+v, want %q", r, want)
	}
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	waitGroup(cmd.Process.Pid, time.Now().Add(10*time.Second))
	r = e.Run(t.Context(), shell("touch ran", "cwd", dir))
	if r.Status != Succeeded || !exists(filepath.Join(dir, "ran")) {
		t.Errorf("Run after the group ended: %+v", r)
	}
}

// TestReboot: a reboot task writes its marker (the boot id, the deadline),
// runs the reboot command and waits for the node to go down; the agent
// stopping meanwhile defers the result, and Recover at the next start
// gives it: succeeded with a new boot id, failed when the deadline passed
// in the same boot (after waiting for it when it has not).
func TestReboot(t *testing.T) {
	clock := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	waiting := make(chan time.Duration, 1)
	e := newTestExec(t, func(c *Config) {
		c.Reboot = []string{"/bin/sh", "-c", "echo going down; touch " + dir + "/rebooted"}
		c.now = func() time.Time { return clock }
		c.sleep = func(ctx context.Context, d time.Duration) error {
			waiting <- d
			<-ctx.Done()
			return ctx.Err()
		}
	})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan Result)
	go func() {
		done <- e.Run(ctx, Task{ID: "reboot-node", Type: "reboot", Parameters: map[string]any{"timeout": 600.0}})
	}()
	if d := <-waiting; d != 600*time.Second {
		t.Errorf("waits %s for the node to go down, want 600s", d)
	}
	if !exists(dir + "/rebooted") {
		t.Error("the reboot command did not run")
	}
	var rec rebootRecord
	if found, err := e.readRecord(rebootFile, &rec); !found || err != nil || rec.Task != "reboot-node" || rec.BootID != "boot-1" ||
		!rec.Deadline.Equal(clock.Add(600*time.Second)) || rec.Timeout != 600 {
		t.Errorf("the marker: %+v, %v %v", rec, found, err)
	}
	cancel() // the shutdown stops the agent
	r := <-done
	if r.Status != Failed || !r.Deferred || r.Message != msgDeferred || string(r.Output) != "going down\n" {
		t.Errorf("Run: %+v", r)
	}
	if !exists(filepath.Join(e.cfg.StateDir, rebootFile)) {
		t.Fatal("the marker is gone before the node rebooted")
	}

	for _, tt := range []struct {
		name    string
		boot    string
		after   time.Duration // the clock at Recover, after the reboot's start
		status  Status
		message string
		waited  []time.Duration
	}{
		{"the same boot, deadline in the future", "boot-1", 100 * time.Second, Failed, "the node did not reboot within 600s", []time.Duration{500 * time.Second}},
		{"the same boot, deadline passed", "boot-1", 601 * time.Second, Failed, "the node did not reboot within 600s", nil},
		{"a new boot", "boot-2", 30 * time.Second, Succeeded, "the node rebooted (a new boot id)", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			state := t.TempDir()
			data, _ := os.ReadFile(filepath.Join(e.cfg.StateDir, rebootFile))
			os.WriteFile(filepath.Join(state, rebootFile), data, 0o600)
			next := newTestExec(t, func(c *Config) {
				c.StateDir = state
				c.now = func() time.Time { return clock.Add(tt.after) }
			})
			next.setBoot(tt.boot)
			left, err := next.Recover(t.Context())
			if err != nil || left == nil || left.Task != "reboot-node" || left.Type != "reboot" || left.Killed ||
				left.Result.Status != tt.status || left.Result.Message != tt.message {
				t.Fatalf("Recover: %+v, %v", left, err)
			}
			if got := next.sleeps(); len(got) != len(tt.waited) || len(got) > 0 && got[0] != tt.waited[0] {
				t.Errorf("Recover waited %v, want %v", got, tt.waited)
			}
			if exists(filepath.Join(state, rebootFile)) {
				t.Error("the marker is left")
			}
		})
	}
}

// TestRebootStopsInRecover: the agent stopping while Recover waits for a
// reboot's deadline keeps the marker for the next start.
func TestRebootStopsInRecover(t *testing.T) {
	e := newTestExec(t, nil)
	now := time.Now()
	e.writeRecord(rebootFile, rebootRecord{Task: "r", BootID: "boot-1", Started: now, Deadline: now.Add(time.Hour), Timeout: 3600})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if left, err := e.Recover(ctx); left != nil || err == nil {
		t.Errorf("Recover: %+v, %v", left, err)
	}
	if !exists(filepath.Join(e.cfg.StateDir, rebootFile)) {
		t.Error("the marker is gone")
	}
}

// TestRebootFails: a reboot whose command fails, whose deadline passes
// while the agent still runs, or whose boot id cannot be read fails, and
// leaves no marker.
func TestRebootFails(t *testing.T) {
	tests := []struct {
		name    string
		reboot  string
		bootOK  bool
		message string
	}{
		{"the command fails", "echo no; exit 1", true, "the reboot command exited 1"},
		{"the node does not go down", "true", true, "the node did not reboot within 1s"},
		{"no boot id", "touch ran", false, "cannot tell when the node has rebooted: reading the boot id: file does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			e := newTestExec(t, func(c *Config) { c.Reboot = []string{"/bin/sh", "-c", "cd " + dir + "; " + tt.reboot} })
			e.bootOK = tt.bootOK
			r := e.Run(t.Context(), task("reboot", "timeout", 1.0))
			if r.Status != Failed || r.Message != tt.message || r.Deferred {
				t.Errorf("Run: %+v, want %q", r, tt.message)
			}
			if exists(filepath.Join(e.cfg.StateDir, rebootFile)) {
				t.Error("the marker is left")
			}
			if !tt.bootOK && exists(filepath.Join(dir, "ran")) {
				t.Error("the reboot command ran")
			}
		})
	}
}

// TestRecoverRebootCommandLeft: the reboot command itself still running
// from a killed agent in the same boot is killed, and the task failed.
func TestRecoverRebootCommandLeft(t *testing.T) {
	cmd, _ := leftover(t)
	e := newTestExec(t, nil)
	now := time.Now()
	e.writeRecord(rebootFile, rebootRecord{Task: "r", BootID: "boot-1", Started: now, Deadline: now.Add(time.Hour), Timeout: 3600})
	e.writeRunning(Task{ID: "r", Type: "reboot"}, cmd.Process.Pid)
	left, err := e.Recover(t.Context())
	if err != nil || left == nil || !left.Killed || left.Result.Message != msgAgentStopped {
		t.Errorf("Recover: %+v, %v", left, err)
	}
	if exists(filepath.Join(e.cfg.StateDir, rebootFile)) || len(e.sleeps()) != 0 {
		t.Errorf("the marker is left or Recover waited (%v)", e.sleeps())
	}
}

// TestRebootStoppedDuringTheCommand: the agent stopping while the reboot
// command still runs (the shutdown under way) defers the result too: the
// marker stays for Recover.
func TestRebootStoppedDuringTheCommand(t *testing.T) {
	w := newSignalWriter("going down\n")
	e := newTestExec(t, func(c *Config) { c.Journal = w })
	e.cfg.Reboot = []string{"/bin/sh", "-c", waitRecord(e) + "echo going down; exec sleep 1000"}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan Result)
	go func() { done <- e.Run(ctx, task("reboot")) }()
	<-w.seen
	cancel()
	r := <-done
	if r.Status != Failed || !r.Deferred || r.Message != msgDeferred {
		t.Errorf("Run: %+v", r)
	}
	if !exists(filepath.Join(e.cfg.StateDir, rebootFile)) {
		t.Error("the marker is gone")
	}
}

// TestRebootStoppedBefore: a reboot task whose ctx is done before it
// starts runs nothing, writes no marker and is not deferred.
func TestRebootStoppedBefore(t *testing.T) {
	dir := t.TempDir()
	e := newTestExec(t, func(c *Config) { c.Reboot = []string{"/bin/sh", "-c", "touch " + dir + "/ran"} })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	r := e.Run(ctx, task("reboot"))
	if r.Status != Failed || r.Deferred || r.Message != msgStopped || exists(dir+"/ran") || exists(filepath.Join(e.cfg.StateDir, rebootFile)) {
		t.Errorf("Run: %+v", r)
	}
}
