package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/api"
)

// at is a time min minutes into the test's runs.
func at(min int) *time.Time {
	t := time.Date(2026, 3, 1, 9, min, 0, 0, time.UTC)
	return &t
}

// TestTimeline: a bar per task that started, a mark for one that could not
// (dep_failed), none for a pending one; the critical path follows what each
// task waited for last, a requirement on another node or its node's task
// before it; a failed task with output links to it; names are escaped; a
// running run has a "now" line.
func TestTimeline(t *testing.T) {
	run := &api.Run{Cluster: "c", ID: "7", Status: api.RunRunning, Created: *at(0), Nodes: []api.RunNode{
		{Name: "a", Status: api.TaskFailed, Tasks: []api.RunTask{
			{ID: "a1", Status: api.TaskSucceeded, Start: at(0), End: at(10)},
			{ID: "a2", Status: api.TaskFailed, Start: at(10), End: at(12), Output: true, Message: "exit <1>"},
			{ID: "a3", Status: "dep_failed", End: at(12), Requires: []string{"a2@a"}},
		}},
		{Name: "b<x>", Status: api.TaskRunning, Tasks: []api.RunTask{
			{ID: "b1", Status: api.TaskSucceeded, Start: at(0), End: at(2)},
			{ID: "b2", Status: api.TaskSucceeded, Start: at(10), End: at(20), Requires: []string{"a1@a"}},
			{ID: "b3", Status: api.TaskRunning, Start: at(20), Requires: []string{"b2@b<x>"}},
			{ID: "b4", Status: "pending", Requires: []string{"b3@b<x>"}},
		}},
	}}
	tl := buildTimeline(run, *at(30))
	svg := string(tl.SVG)
	if n := strings.Count(svg, "<rect"); n != 6 {
		t.Errorf("%d bars, want 6 (5 tasks that started, 1 dep_failed mark; none for the pending one)", n)
	}
	if got := strings.Join(tl.Critical, " "); got != "a1@a b2@b<x> b3@b<x>" || tl.CriticalSpan != "30m" {
		t.Errorf("the critical path: %q, %s; want a1@a b2@b<x> b3@b<x>, 30m", got, tl.CriticalSpan)
	}
	if strings.Count(svg, `stroke="#111"`) != 3 {
		t.Errorf("%d bars outlined, want the critical path's 3", strings.Count(svg, `stroke="#111"`))
	}
	for _, want := range []string{
		`<a href="/api/v1/clusters/c/runs/7/output?node=a&amp;task=a2">`, "a2@a: failed, 2m: exit &lt;1&gt;", `fill="#f0a030"`,
		"b&lt;x&gt;", "<title>now</title>", ">0s</text>", ">30m</text>",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the timeline lacks %q:\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "<x>") || len(tl.Failed) != 1 || tl.Failed[0].Output != "/api/v1/clusters/c/runs/7/output?node=a&task=a2" {
		t.Errorf("a name unescaped, or the failed tasks: %+v", tl.Failed)
	}
	ended := *at(30)
	run.Ended = &ended
	if svg := string(buildTimeline(run, *at(45)).SVG); strings.Contains(svg, "<title>now</title>") {
		t.Error("an ended run has a now line")
	}
}

// TestTimelineBounded: a run of 2,000 nodes of 125 tasks draws at most
// maxTimelineLanes lanes and maxTimelineBars bars, the failed node among
// them, and says how many nodes are not drawn; its page stays small.
func TestTimelineBounded(t *testing.T) {
	run := &api.Run{Cluster: "big", ID: "1", Status: api.RunFailed, Created: *at(0), Ended: at(59)}
	for n := range 2000 {
		node := api.RunNode{Name: fmt.Sprintf("node-%04d", n), Status: api.TaskSucceeded}
		for k := range 125 {
			task := api.RunTask{ID: fmt.Sprintf("t%03d", k), Status: api.TaskSucceeded, Start: at(k % 50), End: at(k%50 + 1)}
			if k > 0 {
				task.Requires = []string{fmt.Sprintf("t%03d@%s", k-1, node.Name)}
			}
			node.Tasks = append(node.Tasks, task)
		}
		run.Nodes = append(run.Nodes, node)
	}
	run.Nodes[1500].Status = api.TaskFailed
	run.Nodes[1500].Tasks[3].Status = api.TaskFailed
	start := time.Now()
	tl := buildTimeline(run, *at(59))
	took := time.Since(start)
	svg := string(tl.SVG)
	t.Logf("%d lanes of %d, %d bars, %d bytes, in %v", tl.Lanes, tl.Nodes, strings.Count(svg, "<rect"), len(svg), took)
	if tl.Lanes > maxTimelineLanes || strings.Count(svg, "<rect") > maxTimelineBars || len(svg) > 1<<20 {
		t.Errorf("%d lanes, %d bars, %d bytes: over the bounds", tl.Lanes, strings.Count(svg, "<rect"), len(svg))
	}
	if !strings.Contains(svg, ">node-1500<") || !strings.Contains(tl.More, "1,976 more nodes are not drawn") {
		t.Errorf("the failed node is not drawn, or the note: %q", tl.More)
	}
}
