package server

import (
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/safetext"
)

// A run's timeline (its page, /clusters/<c>/runs/<id>): a lane per node, a
// bar per task from its start to its end (now, while it runs), coloured by
// its status; the critical path outlined; the times on an axis. Server-side
// SVG, every name escaped. Bounded whatever the run's size: at most
// maxTimelineLanes lanes and maxTimelineBars bars (the failed and running
// nodes, and those on the critical path, first); a note says how many
// nodes are not drawn.
const (
	maxTimelineLanes = 100
	maxTimelineBars  = 3000
	// maxPageFailed bounds the page's table of failed tasks, and
	// maxPageCritical the critical path's tasks it lists.
	maxPageFailed   = 100
	maxPageCritical = 40

	tlLabelW = 180 // the lanes' names
	tlPlotW  = 1000
	tlLaneH  = 18
	tlBarH   = 12
	tlAxisH  = 24
	tlNoteH  = 22
	tlName   = 26 // the longest lane name drawn whole, in characters
)

// taskColors are the bars' colours by task status (the page's legend has
// them too); a pending task has no bar.
var taskColors = map[string]string{
	api.TaskRunning: "#2f6fdb", api.TaskSucceeded: "#2e9e5b", api.TaskFailed: "#d93636",
	"dep_failed": "#f0a030", api.TaskSkipped: "#b8b8b8",
}

// timelineStatuses are the statuses drawn, in the legend's order.
var timelineStatuses = []string{api.TaskRunning, api.TaskSucceeded, api.TaskFailed, "dep_failed", api.TaskSkipped}

// tref is a task of a run: its node's and its own index.
type tref struct{ n, t int }

// timeline is what the run's page shows of its tasks.
type timeline struct {
	SVG template.HTML
	// Lanes are the nodes drawn, of Nodes; More says what is left out.
	Lanes, Nodes int
	More         string
	// Critical is the critical path, first task first (at most
	// maxPageCritical of its CriticalLen tasks: its first ones and its last),
	// and CriticalSpan how long it took.
	Critical     []string
	CriticalLen  int
	CriticalSpan string
	// Failed are the failed tasks (at most maxPageFailed; MoreFailed the
	// others), with the address of their output when serve keeps it.
	Failed     []failedTask
	MoreFailed int
}

type failedTask struct {
	Node, Task, Message, Output string
}

// runTimes are a run's tasks' times, in milliseconds from its start.
type runTimes struct {
	run    *api.Run
	t0     time.Time
	now    time.Time
	byName map[string]tref
}

func (rt *runTimes) task(r tref) *api.RunTask { return &rt.run.Nodes[r.n].Tasks[r.t] }

// span is when task r started and ended (now while it runs); ok is false
// for a task that did not start.
func (rt *runTimes) span(r tref) (start, end time.Time, ok bool) {
	t := rt.task(r)
	if t.Start == nil || t.Outside {
		return time.Time{}, time.Time{}, false
	}
	end = rt.now
	if t.End != nil {
		end = *t.End
	}
	return *t.Start, end, true
}

// buildTimeline draws run (read with every task) at now.
func buildTimeline(run *api.Run, now time.Time) timeline {
	rt := &runTimes{run: run, t0: run.Created, now: now, byName: map[string]tref{}}
	if run.Ended != nil {
		rt.now = *run.Ended
	}
	for n, node := range run.Nodes {
		for t, task := range node.Tasks {
			rt.byName[task.ID+"@"+node.Name] = tref{n, t}
		}
	}
	path := rt.criticalPath()
	onPath := map[tref]bool{}
	for _, r := range path {
		onPath[r] = true
	}
	lanes := rt.lanes(onPath)
	tl := timeline{Lanes: len(lanes), Nodes: len(run.Nodes), CriticalLen: len(path)}
	if more := len(run.Nodes) - len(lanes); more > 0 {
		tl.More = fmt.Sprintf("%s more nodes are not drawn (at most %d lanes and %s bars are): GET /api/v1/clusters/%s/runs/%s has every task.",
			safetext.Thousands(more), maxTimelineLanes, safetext.Thousands(maxTimelineBars), run.Cluster, run.ID)
	}
	tl.SVG = template.HTML(rt.svg(lanes, onPath, tl.More))
	if len(path) > 0 {
		first, _, _ := rt.span(path[0])
		_, last, _ := rt.span(path[len(path)-1])
		tl.CriticalSpan = elapsed(last.Sub(first))
		shown := path
		if len(path) > maxPageCritical {
			shown = append(slices.Clone(path[:maxPageCritical/2]), path[len(path)-maxPageCritical/2:]...)
		}
		for i, r := range shown {
			if len(path) > maxPageCritical && i == maxPageCritical/2 {
				tl.Critical = append(tl.Critical, fmt.Sprintf("… %d more …", len(path)-maxPageCritical))
			}
			tl.Critical = append(tl.Critical, rt.task(r).ID+"@"+run.Nodes[r.n].Name)
		}
	}
	tl.Failed, tl.MoreFailed = rt.failed()
	return tl
}

// criticalPath is the chain of tasks that made the run as long as it is:
// from the task that ended last, back through what each waited for last (a
// requirement, or its node's task before it: a node runs one task at a
// time), first task first.
func (rt *runTimes) criticalPath() []tref {
	var last tref
	var lastEnd time.Time
	found := false
	for n, node := range rt.run.Nodes {
		for t := range node.Tasks {
			if _, end, ok := rt.span(tref{n, t}); ok && (!found || end.After(lastEnd)) {
				last, lastEnd, found = tref{n, t}, end, true
			}
		}
	}
	if !found {
		return nil
	}
	path := []tref{last}
	seen := map[tref]bool{last: true}
	for cur := last; ; {
		prev, ok := rt.waitedFor(cur, seen)
		if !ok {
			break
		}
		path, seen[prev], cur = append(path, prev), true, prev
	}
	slices.Reverse(path)
	return path
}

// waitedFor is what task cur waited for last: of its requirements and its
// node's tasks, the one that ended last before it started.
func (rt *runTimes) waitedFor(cur tref, seen map[tref]bool) (tref, bool) {
	start, _, _ := rt.span(cur)
	var best tref
	var bestEnd time.Time
	found := false
	consider := func(r tref) {
		if seen[r] {
			return
		}
		if _, end, ok := rt.span(r); ok && !end.After(start) && (!found || end.After(bestEnd)) {
			best, bestEnd, found = r, end, true
		}
	}
	for _, req := range rt.task(cur).Requires {
		if r, ok := rt.byName[req]; ok {
			consider(r)
		}
	}
	for t := range rt.run.Nodes[cur.n].Tasks {
		consider(tref{cur.n, t})
	}
	return best, found
}

// lanes are the nodes drawn, in the run's order: the failed and running
// nodes first, then those on the critical path, then the others, up to
// maxTimelineLanes lanes and maxTimelineBars bars.
func (rt *runTimes) lanes(onPath map[tref]bool) []int {
	critical := map[int]bool{}
	for r := range onPath {
		critical[r.n] = true
	}
	rank := func(n int) int {
		switch {
		case rt.run.Nodes[n].Status == api.TaskFailed || rt.run.Nodes[n].Status == api.TaskRunning:
			return 0
		case critical[n]:
			return 1
		}
		return 2
	}
	order := make([]int, len(rt.run.Nodes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return rank(a) - rank(b) })
	var out []int
	bars := 0
	for _, n := range order {
		k := rt.bars(n)
		if len(out) == maxTimelineLanes || bars+k > maxTimelineBars {
			break
		}
		out, bars = append(out, n), bars+k
	}
	slices.Sort(out)
	return out
}

// bars counts node n's bars: its tasks that started, and those that
// could not (dep_failed).
func (rt *runTimes) bars(n int) int {
	k := 0
	for _, t := range rt.run.Nodes[n].Tasks {
		if !t.Outside && (t.Start != nil || t.Status == "dep_failed") {
			k++
		}
	}
	return k
}

// failed lists the failed tasks, with their output's address.
func (rt *runTimes) failed() ([]failedTask, int) {
	var out []failedTask
	more := 0
	for _, node := range rt.run.Nodes {
		for _, t := range node.Tasks {
			if t.Status != api.TaskFailed {
				continue
			}
			if len(out) == maxPageFailed {
				more++
				continue
			}
			ft := failedTask{Node: node.Name, Task: t.ID, Message: cut(t.Message, maxPageMessage)}
			if t.Output {
				ft.Output = rt.outputURL(node.Name, t.ID)
			}
			out = append(out, ft)
		}
	}
	return out, more
}

func (rt *runTimes) outputURL(node, task string) string {
	return "/api/v1/clusters/" + rt.run.Cluster + "/runs/" + rt.run.ID + "/output?" + url.Values{"node": {node}, "task": {task}}.Encode()
}

// svg draws the lanes.
func (rt *runTimes) svg(lanes []int, onPath map[tref]bool, more string) string {
	total := max(rt.now.Sub(rt.t0), time.Second)
	for _, n := range lanes {
		for t := range rt.run.Nodes[n].Tasks {
			if _, end, ok := rt.span(tref{n, t}); ok && end.Sub(rt.t0) > total {
				total = end.Sub(rt.t0)
			}
		}
	}
	x := func(at time.Time) float64 {
		return tlLabelW + float64(at.Sub(rt.t0))/float64(total)*tlPlotW
	}
	height := tlAxisH + len(lanes)*tlLaneH + 4
	if more != "" {
		height += tlNoteH
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`,
		tlLabelW+tlPlotW+40, height, tlLabelW+tlPlotW+40, height)
	rt.axis(&b, total, height)
	for i, n := range lanes {
		y := tlAxisH + i*tlLaneH
		rt.lane(&b, n, y, x, onPath)
	}
	if rt.run.Ended == nil {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#2f6fdb" stroke-dasharray="3 3"><title>now</title></line>`,
			x(rt.now), tlAxisH-4, x(rt.now), tlAxisH+len(lanes)*tlLaneH)
	}
	if more != "" {
		fmt.Fprintf(&b, `<text x="4" y="%d" fill="#555">%s</text>`, height-6, template.HTMLEscapeString(more))
	}
	b.WriteString("</svg>")
	return b.String()
}

// axis draws the ticks: at most about ten, at a round step.
func (rt *runTimes) axis(b *strings.Builder, total time.Duration, height int) {
	step := tickStep(total)
	for d := time.Duration(0); d <= total; d += step {
		x := tlLabelW + float64(d)/float64(total)*tlPlotW
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e4e4e4"/>`, x, tlAxisH-6, x, height-4)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle" fill="#444">%s</text>`, x, tlAxisH-10, elapsed(d))
	}
}

// lane draws node n's name and bars at y.
func (rt *runTimes) lane(b *strings.Builder, n, y int, x func(time.Time) float64, onPath map[tref]bool) {
	node := rt.run.Nodes[n]
	name := safetext.Cut(node.Name, tlName)
	fmt.Fprintf(b, `<line x1="0" y1="%d" x2="%d" y2="%d" stroke="#f0f0f0"/>`, y+tlLaneH, tlLabelW+tlPlotW, y+tlLaneH)
	fmt.Fprintf(b, `<text x="4" y="%d" class="lane st-%s">%s<title>%s: %s</title></text>`, y+13,
		template.HTMLEscapeString(node.Status), template.HTMLEscapeString(name), template.HTMLEscapeString(node.Name), template.HTMLEscapeString(node.Status))
	for t, task := range node.Tasks {
		r := tref{n, t}
		start, end, ok := rt.span(r)
		switch {
		case ok:
		case !task.Outside && task.Status == "dep_failed" && task.End != nil:
			start, end = *task.End, *task.End // it could not start: a mark when it was known
		default:
			continue
		}
		x0, x1 := x(start), x(end)
		w := max(x1-x0, 2)
		outline := ""
		if onPath[r] {
			outline = ` stroke="#111" stroke-width="1.5"`
		}
		title := fmt.Sprintf("%s@%s: %s", task.ID, node.Name, task.Status)
		if ok {
			title += ", " + elapsed(end.Sub(start))
		}
		if task.Message != "" {
			title += ": " + cut(task.Message, maxPageMessage)
		}
		if onPath[r] {
			title += " (critical path)"
		}
		bar := fmt.Sprintf(`<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"%s><title>%s</title></rect>`,
			x0, y+(tlLaneH-tlBarH)/2, w, tlBarH, taskColors[task.Status], outline, template.HTMLEscapeString(title))
		if task.Status == api.TaskFailed && task.Output {
			bar = `<a href="` + template.HTMLEscapeString(rt.outputURL(node.Name, task.ID)) + `">` + bar + `</a>`
		}
		b.WriteString(bar)
	}
}

// tickSteps are the axis's steps, the smallest that gives at most ten
// ticks is taken.
var tickSteps = []time.Duration{
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
	500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
	2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

func tickStep(total time.Duration) time.Duration {
	for _, s := range tickSteps {
		if total/s <= 10 {
			return s
		}
	}
	return total / 10
}

// elapsed is a duration as the axis says it: 0s, 450ms, 1m30s, 2h5m.
func elapsed(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	s := d.Round(time.Second).String()
	s = strings.TrimSuffix(s, "0s")
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
