package cli

import (
	"context"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/api"
)

// manualDeploy is a fuelsync.yaml whose clusters deploy on demand only.
var manualDeploy = map[string]string{"fuelsync.yaml": "deploy: manual\n"}

// TestDeployServeKilled: serve is SIGKILLed while a run of node-1 goes on
// (one task running, on its agent); a new serve on the same work directory
// resumes the run from its log: the task running is reported to it, the
// run ends, and no task ran twice.
func TestDeployServeKilled(t *testing.T) {
	h := newDeployHarnessWith(t, manualDeploy)
	h.slow("node-1/primary-keystone")
	h.startServe()
	h.startAgent("node-1")
	h.startRun(&api.StartRun{Nodes: []string{"node-1"}})
	h.waitRun("1", 3*time.Minute, func(r *api.Run) bool { return running(r, "node-1/primary-keystone") })
	h.killServe()
	h.startServe()
	run := h.waitRun("1", 5*time.Minute, nil)
	if run.Status != api.RunSucceeded || run.Counts["failed"]+run.Counts["dep_failed"] > 0 {
		t.Fatalf("after a restart of serve: %s %v", run.Status, run.Counts)
	}
	for key, c := range h.calls() {
		if c.starts != 1 {
			t.Errorf("%s ran %d times", key, c.starts)
		}
	}
	checkRunOrder(t, run, h.calls())
}

// TestDeployAgentKilled: node-2's agent is SIGKILLed during a task (of a
// run of node-2); the agent started again stops what its predecessor left
// running and reports the task failed ("the agent stopped during the
// task"); the run goes on and ends (node-2's group tolerates it); a retry
// runs that task and what it held back, and nothing that had succeeded.
func TestDeployAgentKilled(t *testing.T) {
	h := newDeployHarnessWith(t, manualDeploy)
	h.slow("node-2/keystone")
	h.startServe()
	h.startAgent("node-2")
	ctx := context.Background()
	h.startRun(&api.StartRun{Nodes: []string{"node-2"}})
	h.waitRun("1", 3*time.Minute, func(r *api.Run) bool { return running(r, "node-2/keystone") })
	h.killAgent("node-2")
	h.startAgent("node-2")
	run := h.waitRun("1", 5*time.Minute, nil)
	tasks := runTasks(run)
	if tk := tasks["node-2/keystone"]; tk.Status != api.TaskFailed || tk.Message != "the agent stopped during the task" {
		t.Fatalf("node-2's keystone after its agent was killed: %s %q", tk.Status, tk.Message)
	}
	if run.Status != api.RunSucceeded || len(run.FailedNodes) != 1 {
		t.Fatalf("the run: %s, failed nodes %v", run.Status, run.FailedNodes)
	}
	succeeded := map[string]bool{}
	for key, tk := range tasks {
		succeeded[key] = tk.Status == api.TaskSucceeded
	}
	before := h.calls()
	// Asked the moment the run shows ended, the retry waits for the run's
	// summary to be stored rather than being refused.
	if _, err := h.client.RetryRun(ctx, "ha7", &api.RetryRun{Nodes: []string{"node-2"}}); err != nil {
		t.Fatal(err)
	}
	retry := h.waitRun("2", 5*time.Minute, nil)
	if retry.Status != api.RunSucceeded || len(retry.FailedNodes) != 0 {
		t.Fatalf("the retry: %s, failed nodes %v", retry.Status, retry.FailedNodes)
	}
	after := h.calls()
	for key, c := range after {
		again := c.starts - before[key].startsOrZero()
		switch {
		case succeeded[key] && again > 0:
			t.Errorf("%s had succeeded, and ran again in the retry", key)
		case !succeeded[key] && key != "node-2/keystone" && c.starts != 1:
			t.Errorf("%s ran %d times", key, c.starts)
		}
	}
	if after["node-2/keystone"].starts != 2 {
		t.Errorf("node-2's keystone ran %d times, want twice (killed, then retried)", after["node-2/keystone"].starts)
	}
}

// startsOrZero is c.starts, 0 when c is nil (a task that had not run).
func (c *call) startsOrZero() int {
	if c == nil {
		return 0
	}
	return c.starts
}
