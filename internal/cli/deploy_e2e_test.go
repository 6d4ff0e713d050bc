package cli

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/api"
)

// TestDeployHA7: the seven-node mitaka cluster deployed by serve and eight
// real agents (master too), at most three nodes busy at once, puppet and
// every other task run by a recorder that fails where told. From the
// recorder's log and the run: no task started before its requirements
// ended, no task id ran on more nodes at once than its strategy allows, no
// more than three nodes were busy, the dep_failed tasks are the closure of
// the failures, and the stop and the verdict are the rules'. A controller's
// failure reaches the primary controller (critical) or not by when it came,
// as in astute: a failed node's pending tasks end dep_failed, and node-1
// waits for some of node-2's and node-3's post-deployment tasks; those
// cases check the verdict and the stop against the critical nodes that
// failed.
func TestDeployHA7(t *testing.T) {
	cases := []struct {
		name        string
		fail        []string // node/task
		stopped     bool
		failed      bool
		failedNodes []string // those, or (byOrder) at least those
		byOrder     bool     // whether a critical node fails depends on the order
	}{
		{name: "no failure"},
		{name: "a compute task fails: computes tolerate none", fail: []string{"node-4/enable_nova_compute_service"},
			stopped: true, failed: true, failedNodes: []string{"node-4"}},
		{name: "a primary controller task fails", fail: []string{"node-1/primary-database"}, stopped: true, failed: true},
		{name: "the last task of a non-primary controller fails", fail: []string{"node-2/update_hosts"},
			failedNodes: []string{"node-2"}, byOrder: true},
		{name: "two controllers fail: over their group's tolerance", fail: []string{"node-2/update_hosts", "node-3/update_hosts"},
			stopped: true, failedNodes: []string{"node-2", "node-3"}, byOrder: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := newDeployHarness(t, c.fail...)
			h.startServe("--max-nodes", "3")
			for _, n := range ha7Nodes {
				h.startAgent(n)
			}
			run := h.waitRun("1", 5*time.Minute, nil)
			calls := h.calls()
			checkRunOrder(t, run, calls)
			checkConcurrency(t, h, run, calls, 3)
			// A failure the order made a node's last task may reach no
			// other task: the closure is then empty, and rightly so.
			checkDepFailed(t, run, c.fail, !c.byOrder)
			failed, stops := c.failed, c.stopped
			if c.byOrder {
				// A critical node that failed (dep_failed by the order)
				// stops the run too: its group tolerates none.
				failed = criticalFailed(run)
				stops = stops || failed
			}
			if stopped := run.Reason != ""; stopped != stops {
				t.Errorf("stopped %v (%q), want %v", stopped, run.Reason, stops)
			}
			if (run.Status == api.RunFailed) != failed {
				t.Errorf("the run %s, want failed %v", run.Status, failed)
			}
			switch {
			case c.failedNodes == nil:
			case c.byOrder && !containsAll(run.FailedNodes, c.failedNodes):
				t.Errorf("failed nodes %v, want %v among them", run.FailedNodes, c.failedNodes)
			case !c.byOrder && !slices.Equal(run.FailedNodes, c.failedNodes):
				t.Errorf("failed nodes %v, want %v", run.FailedNodes, c.failedNodes)
			}
			for _, f := range c.fail {
				if cl := calls[f]; cl == nil || !cl.failed {
					t.Errorf("%s did not run and fail: %+v", f, cl)
				}
			}
			t.Logf("%s: %s, stopped %q; tasks %v; failed nodes %v", c.name, run.Status, run.Reason, run.Counts, run.FailedNodes)
		})
	}
}

// criticalFailed: a critical node of run is among its failed nodes.
func criticalFailed(run *api.Run) bool {
	for _, n := range run.Nodes {
		if n.Critical && slices.Contains(run.FailedNodes, n.Name) {
			return true
		}
	}
	return false
}

func containsAll(list, want []string) bool {
	for _, w := range want {
		if !slices.Contains(list, w) {
			return false
		}
	}
	return true
}

// taskKey is node/task.
func taskKey(node, task string) string { return node + "/" + task }

// runTasks indexes a run's tasks by node/task.
func runTasks(run *api.Run) map[string]api.RunTask {
	out := map[string]api.RunTask{}
	for _, n := range run.Nodes {
		for _, tk := range n.Tasks {
			out[taskKey(n.Name, tk.ID)] = tk
		}
	}
	return out
}

// ranRequirements are the tasks an agent ran that task requires, through
// the no-ops between (a stage waits for what it requires).
func ranRequirements(tasks map[string]api.RunTask, key string, calls map[string]*call) []string {
	var out []string
	seen := map[string]bool{}
	var walk func(k string)
	walk = func(k string) {
		for _, r := range tasks[k].Requires {
			task, node, _ := strings.Cut(r, "@")
			rk := taskKey(node, task)
			if seen[rk] {
				continue
			}
			seen[rk] = true
			if calls[rk] != nil {
				out = append(out, rk)
			} else {
				walk(rk)
			}
		}
	}
	walk(key)
	return out
}

// checkRunOrder: every task ran once (retries aside) and only after every
// task it requires had ended; every task that succeeded or failed ran.
func checkRunOrder(t *testing.T, run *api.Run, calls map[string]*call) {
	t.Helper()
	tasks := runTasks(run)
	for key, c := range calls {
		tk, ok := tasks[key]
		if !ok {
			t.Errorf("%s ran, and is not in the run", key)
			continue
		}
		if tk.Attempt != 1 {
			t.Errorf("%s was dispatched %d times", key, tk.Attempt)
		}
		for _, r := range ranRequirements(tasks, key, calls) {
			if calls[r].end == 0 || calls[r].end > c.start {
				t.Errorf("%s started before its requirement %s ended", key, r)
			}
		}
	}
	for key, tk := range tasks {
		ran := calls[key] != nil
		if (tk.Status == api.TaskSucceeded || tk.Status == api.TaskFailed) != ran && tk.Type != "skipped" {
			t.Errorf("%s is %s, and ran %v", key, tk.Status, ran)
		}
	}
}

// checkConcurrency: no task id ran on more nodes at once than its
// strategy allows (as the expanded view of each node gives it), and no more
// than maxNodes nodes ran a task at once.
func checkConcurrency(t *testing.T, h *deployHarness, run *api.Run, calls map[string]*call, maxNodes int) {
	t.Helper()
	limits := strategyLimits(t, h, run)
	type edge struct {
		at    int64
		delta int
		id    string
	}
	var edges []edge
	for key, c := range calls {
		_, id, _ := strings.Cut(key, "/")
		edges = append(edges, edge{c.start, 1, id}, edge{c.end, -1, id})
	}
	sort.Slice(edges, func(i, j int) bool {
		return edges[i].at < edges[j].at || (edges[i].at == edges[j].at && edges[i].delta < edges[j].delta)
	})
	busy, byID, limited := 0, map[string]int{}, 0
	for _, e := range edges {
		busy += e.delta
		byID[e.id] += e.delta
		if busy > maxNodes {
			t.Errorf("%d nodes ran a task at once, more than --max-nodes %d", busy, maxNodes)
		}
		if l, ok := limits[e.id]; ok {
			limited++
			if byID[e.id] > l {
				t.Errorf("%d nodes ran %s at once; its strategy allows %d", byID[e.id], e.id, l)
			}
		}
	}
	if limited == 0 && len(calls) > 100 {
		t.Errorf("no task with a strategy ran: the check checked nothing")
	}
}

// strategyLimits reads each task's strategy from the nodes' expanded views:
// one_by_one 1, parallel its amount (a yaql one: 1, as fuelsync reads it).
func strategyLimits(t *testing.T, h *deployHarness, run *api.Run) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, n := range run.Nodes {
		if n.Name == "sync" {
			continue
		}
		req, _ := http.NewRequest(http.MethodGet, h.base+"/api/v1/clusters/ha7/nodes/"+n.Name+"/graphs/default", nil)
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Accept", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tasks []struct {
				ID         string `json:"id"`
				Parameters struct {
					Strategy *struct {
						Type   string `json:"type"`
						Amount any    `json:"amount"`
					} `json:"strategy"`
				} `json:"parameters"`
			} `json:"tasks"`
		}
		err = json.NewDecoder(resp.Body).Decode(&doc)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range doc.Tasks {
			s := tk.Parameters.Strategy
			switch {
			case s == nil:
			case s.Type == "one_by_one":
				out[tk.ID] = 1
			case s.Type == "parallel":
				if f, ok := s.Amount.(float64); ok && f >= 1 {
					out[tk.ID] = int(f)
				} else if !ok {
					out[tk.ID] = 1
				}
			}
		}
	}
	return out
}

// checkDepFailed: the dep_failed tasks are the closure of the failures —
// what requires a failed task (or one of its node's after it), transitively,
// sync tasks stopping it — less what the stop caught first. reaches says the
// failures must reach some task (the check is not empty).
func checkDepFailed(t *testing.T, run *api.Run, fail []string, reaches bool) {
	t.Helper()
	tasks := runTasks(run)
	dependents := map[string][]string{}
	for key, tk := range tasks {
		for _, r := range tk.Requires {
			task, node, _ := strings.Cut(r, "@")
			dependents[taskKey(node, task)] = append(dependents[taskKey(node, task)], key)
		}
	}
	closure := map[string]bool{}
	var spread func(k string)
	spread = func(k string) {
		for _, d := range dependents[k] {
			if !closure[d] && !strings.HasPrefix(d, "sync/") {
				closure[d] = true
				spread(d)
			}
		}
	}
	noop := func(typ string) bool { return slices.Contains([]string{"skipped", "stage", "group", "noop"}, typ) }
	for _, f := range fail {
		node, _, _ := strings.Cut(f, "/")
		spread(f)
		// A failed node starts nothing more: its tasks that did not run
		// (a no-op settled before the failure aside) are dep_failed.
		for _, n := range run.Nodes {
			if n.Name != node {
				continue
			}
			for _, tk := range n.Tasks {
				k := taskKey(node, tk.ID)
				if tk.Attempt == 0 && !closure[k] && (!noop(tk.Type) || tk.Status == "dep_failed") {
					closure[k] = true
					spread(k)
				}
			}
		}
	}
	for key, tk := range tasks {
		stopped := tk.Status == api.TaskSkipped && strings.HasPrefix(tk.Message, "the run stopped")
		switch {
		case tk.Status == "dep_failed" && !closure[key]:
			t.Errorf("%s is dep_failed, and does not require a failure: %s", key, tk.Message)
		case closure[key] && tk.Status != "dep_failed" && !stopped:
			t.Errorf("%s requires a failure, and is %s", key, tk.Status)
		}
	}
	if reaches && len(fail) > 0 && len(closure) == 0 {
		t.Errorf("no task requires the failures %v", fail)
	}
	t.Logf("%d tasks require the failures %v", len(closure), fail)
}
