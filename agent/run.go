package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fuelsync/fuelsync/reports"
)

// TaskPrefix starts a task line: a line of the command's standard output
//
//	fuelsync-task <id> <status> [message]
//
// says task <id> is now <status> (running, success, failed or skipped), with
// an optional message (the rest of the line). The time the agent reads the
// line is the task's start (running) or end (the others).
const TaskPrefix = "fuelsync-task"

// maxLine bounds a line of the command's output that the agent reads for task
// lines; a longer line is passed on, not read.
const maxLine = 64 << 10

// runGraph writes graph to the graph file, reports running, runs the command
// and returns the run's final report (not yet sent).
func (a *Agent) runGraph(ctx context.Context, graph []byte, etag string) *reports.Report {
	start := a.now().UTC()
	r := &reports.Report{Graph: a.Graph, ETag: etag, Status: reports.Running, StartedAt: start}
	// One attempt at the running report: the result is what must arrive.
	if err := a.report(ctx, r); err != nil && ctx.Err() == nil {
		a.Log.Warn("agent: reporting running", "error", err.Error())
	}
	a.Log.Info("agent: running the graph", "graph", a.Graph, "etag", etag)
	tasks, runErr := a.exec(ctx, graph, etag)
	end := a.now().UTC()
	if end.Before(start) {
		end = start
	}
	r = &reports.Report{Graph: a.Graph, ETag: etag, Status: reports.Success, StartedAt: start, FinishedAt: &end}
	var failed []reports.Task
	for _, t := range tasks.list() {
		if t.Status == reports.Running {
			// The command ended before saying how the task ended.
			t.Status, t.FinishedAt = reports.Failed, &end
			if t.Message == "" {
				t.Message = "the command ended before the task did"
			}
		}
		if t.Status == reports.Failed {
			failed = append(failed, t)
		}
		r.Tasks = append(r.Tasks, t)
	}
	// The message says why, first line first (the cluster's health
	// problems show it after the failed tasks' ids): the first failed
	// task's message, then how the command ended.
	var msgs []string
	if len(failed) > 0 {
		r.Status = reports.Failed
		first := failed[0].Message
		if first == "" {
			first = "failed"
		}
		if len(failed) > 1 {
			first = fmt.Sprintf("%s: %s (and %d more failed tasks)", failed[0].ID, first, len(failed)-1)
		}
		msgs = append(msgs, first)
	}
	if runErr != nil {
		r.Status = reports.Failed
		msgs = append(msgs, runErr.Error())
	}
	if len(msgs) == 2 {
		msgs = []string{msgs[0] + " (" + msgs[1] + ")"}
	}
	r.Message = truncate(strings.Join(msgs, ""), reports.MaxMessage)
	a.Log.Info("agent: ran the graph", "graph", a.Graph, "etag", etag, "status", r.Status, "message", r.Message, "took", end.Sub(start).Round(time.Millisecond).String())
	return r
}

// exec runs the command with the graph in the graph file and on its standard
// input, and collects its task lines. Its error says how the command failed.
func (a *Agent) exec(ctx context.Context, graph []byte, etag string) (*taskSet, error) {
	tasks := &taskSet{byID: map[string]int{}}
	file := filepath.Join(a.Dir, GraphFile)
	if err := writeFileAtomic(file, graph); err != nil {
		return tasks, fmt.Errorf("writing the graph file: %w", err)
	}
	cmd := exec.Command(a.Command[0], a.Command[1:]...)
	env := a.Env
	if env == nil {
		env = os.Environ()
	}
	cmd.Env = append(slices.Clone(env),
		"FUELSYNC_GRAPH_FILE="+file,
		"FUELSYNC_CLUSTER="+a.Cluster,
		"FUELSYNC_NODE="+a.Node,
		"FUELSYNC_GRAPH="+a.Graph,
		"FUELSYNC_ETAG="+etag,
	)
	cmd.Stdin = bytes.NewReader(graph)
	cmd.Stderr = a.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return tasks, err
	}
	ownGroup(cmd) // so that stopping the agent stops its children
	if err := cmd.Start(); err != nil {
		return tasks, fmt.Errorf("starting %s: %w", a.Command[0], err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.readOutput(out, tasks)
	}()
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			terminate(cmd)
			select {
			case <-done:
			case <-time.After(a.KillGrace):
				kill(cmd)
			}
		case <-done:
		}
	}()
	wg.Wait() // the output is read to its end before Wait closes the pipe
	err = cmd.Wait()
	close(done)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return tasks, nil
	case errors.As(err, &ee):
		if sig := signaled(ee); sig != "" {
			return tasks, fmt.Errorf("the command was killed by signal %s", sig)
		}
		return tasks, fmt.Errorf("the command exited with status %d", ee.ExitCode())
	default:
		return tasks, fmt.Errorf("the command: %w", err)
	}
}

// readOutput copies the command's standard output to a.Stdout, reading its
// task lines into tasks.
func (a *Agent) readOutput(out io.Reader, tasks *taskSet) {
	br := bufio.NewReaderSize(out, maxLine)
	long := false // within a line longer than maxLine
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			a.Stdout.Write(line)
			if !long {
				if !errors.Is(err, bufio.ErrBufferFull) {
					a.taskLine(string(line), tasks)
				}
			}
			long = errors.Is(err, bufio.ErrBufferFull)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// taskLine reads line when it is a task line.
func (a *Agent) taskLine(line string, tasks *taskSet) {
	line = strings.TrimRight(line, "\r\n")
	rest, ok := strings.CutPrefix(line, TaskPrefix+" ")
	if !ok {
		return
	}
	fields := strings.SplitN(strings.TrimLeft(rest, " \t"), " ", 3)
	if len(fields) < 2 {
		a.Log.Warn("agent: a task line without a status; ignored", "line", sanitize(line, 200))
		return
	}
	id, status := fields[0], fields[1]
	switch status {
	case reports.Running, reports.Success, reports.Failed, reports.Skipped:
	default:
		a.Log.Warn("agent: a task line's status is not running, success, failed or skipped; ignored", "line", sanitize(line, 200))
		return
	}
	if len(id) > reports.MaxTaskID || !utf8.ValidString(id) || strings.IndexFunc(id, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) >= 0 {
		a.Log.Warn("agent: a task line's id is over 256 bytes or holds a control character; ignored", "line", sanitize(line, 200))
		return
	}
	msg := ""
	if len(fields) == 3 {
		msg = sanitize(strings.TrimSpace(fields[2]), reports.MaxTaskMessage)
	}
	if !tasks.set(id, status, msg, a.now().UTC()) {
		a.Log.Warn("agent: over 5,000 tasks; the others are not reported", "task", id)
	}
}

// taskSet is the tasks of one run, in the order first named.
type taskSet struct {
	mu    sync.Mutex
	tasks []reports.Task
	byID  map[string]int
}

func (s *taskSet) set(id, status, msg string, at time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.byID[id]
	if !ok {
		if len(s.tasks) >= reports.MaxTasks {
			return false
		}
		i = len(s.tasks)
		s.byID[id] = i
		s.tasks = append(s.tasks, reports.Task{ID: id})
	}
	t := &s.tasks[i]
	t.Status = status
	if msg != "" {
		t.Message = msg
	}
	if status == reports.Running {
		t.StartedAt, t.FinishedAt = &at, nil
	} else {
		t.FinishedAt = &at
		if t.StartedAt == nil {
			t.StartedAt = &at
		}
	}
	return true
}

func (s *taskSet) list() []reports.Task {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tasks)
}

// sanitize makes s valid UTF-8 without control characters, at most n bytes.
func sanitize(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return truncate(s, n)
}

// truncate cuts s to at most n bytes on a rune boundary, ending with "…" when
// cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
