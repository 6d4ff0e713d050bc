package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/base/safetext"
)

// progress shows how far a run or a wait is. On a terminal (text output) it
// redraws a few lines in place, each cut to the terminal's width; otherwise
// it prints its first line each time that changes: on stdout in text, on
// stderr with --format json (whose stdout is the answer alone).
type progress struct {
	w     io.Writer
	tty   bool
	width int
	drawn int    // lines drawn last (terminal)
	last  string // the first line printed last (plain)
}

// newProgress makes the progress of a command with output format, writing
// to stdout (text) or stderr (json).
func newProgress(format outputFormat, stdout, stderr io.Writer) *progress {
	if format == formatJSON {
		return &progress{w: stderr}
	}
	p := &progress{w: stdout}
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(int(f.Fd())) && os.Getenv("TERM") != "dumb" {
		p.tty, p.width = true, 80
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			p.width = w
		}
	}
	return p
}

// show shows where things are: plain, one line, printed when it changed
// (not a terminal), or lines drawn in place of the last ones (a terminal).
func (p *progress) show(plain string, lines []string) {
	if !p.tty {
		if plain != p.last {
			fmt.Fprintln(p.w, plain)
			p.last = plain
		}
		return
	}
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dF", p.drawn) // to the first line drawn
	}
	b.WriteString("\x1b[J") // erase it and below
	for _, l := range lines {
		b.WriteString(safetext.Cut(l, p.width-1))
		b.WriteByte('\n')
	}
	io.WriteString(p.w, b.String())
	p.drawn = len(lines)
}

// runCounts are a run's tasks done and in all, and its nodes (those with
// tasks in the run, sync left out) done and in all.
func runCounts(run *api.Run) (tasksDone, tasks, nodesDone, nodes int) {
	for st, n := range run.Counts {
		tasks += n
		if st != "pending" && st != api.TaskRunning {
			tasksDone += n
		}
	}
	for _, n := range run.Nodes {
		if n.Name == "sync" || n.Status == api.TaskSkipped {
			continue
		}
		nodes++
		if n.Status == api.TaskSucceeded || n.Status == api.TaskFailed {
			nodesDone++
		}
	}
	return
}

// runningTasks are a run's running tasks, "task@node", with when each started
// (from its nodes' tasks; from its list of running tasks, without their
// times, when it was read without its tasks).
func runningTasks(run *api.Run) (names []string, starts []*time.Time) {
	for _, n := range run.Nodes {
		for _, t := range n.Tasks {
			if t.Status == api.TaskRunning {
				names = append(names, safetext.Line(t.ID+"@"+n.Name))
				starts = append(starts, t.Start)
			}
		}
	}
	if len(names) == 0 {
		for _, t := range run.Running {
			names = append(names, safetext.Line(t))
			starts = append(starts, nil)
		}
	}
	return names, starts
}

// progressLine says in one line how far a run is: its tasks and nodes done,
// and the tasks running.
func progressLine(run *api.Run) string {
	done, total, nodesDone, nodes := runCounts(run)
	line := fmt.Sprintf("run %s of %s: %s, %d/%d tasks done", run.ID, safetext.Line(run.Cluster), run.Status, done, total)
	if nodes > 0 {
		line += fmt.Sprintf(", %d/%d nodes", nodesDone, nodes)
	}
	if running, _ := runningTasks(run); len(running) > 0 {
		if len(running) > 5 {
			running = append(running[:5], fmt.Sprintf("and %d more", len(running)-5))
		}
		line += "; running " + strings.Join(running, ", ")
	}
	return line
}

// maxRunningLines bounds the running tasks a terminal shows, one a line.
const maxRunningLines = 8

// showRun shows how far run is.
func (p *progress) showRun(run *api.Run) {
	p.show(progressLine(run), progressLines(run, time.Now()))
}

// progressLines are what a terminal shows of a run: a bar with the tasks and
// nodes done, the running tasks with how long each has run, the failed ones.
func progressLines(run *api.Run, now time.Time) []string {
	done, total, nodesDone, nodes := runCounts(run)
	const barWidth = 24
	filled := 0
	if total > 0 {
		filled = done * barWidth / total
	}
	lines := []string{fmt.Sprintf("run %s of %s (%s): %s [%s%s] %d/%d tasks, %d/%d nodes",
		run.ID, safetext.Line(run.Cluster), run.Graph, run.Status, strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled),
		done, total, nodesDone, nodes)}
	names, starts := runningTasks(run)
	for i, name := range names {
		if i == maxRunningLines-1 && len(names) > maxRunningLines {
			lines = append(lines, fmt.Sprintf("  … and %d more running", len(names)-i))
			break
		}
		since := ""
		if starts[i] != nil {
			since = " " + now.Sub(*starts[i]).Round(time.Second).String()
		}
		lines = append(lines, "  running "+name+since)
	}
	var failed []string
	for _, n := range run.Nodes {
		for _, t := range n.Tasks {
			if t.Status == api.TaskFailed {
				failed = append(failed, safetext.Line(t.ID+"@"+n.Name))
			}
		}
	}
	if len(failed) > 0 {
		slices.Sort(failed)
		lines = append(lines, "  failed "+strings.Join(failed, ", "))
	}
	return lines
}
