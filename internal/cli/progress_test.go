//go:build linux

package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fuelsync/fuelsync/api"
)

// progressRun is a run of two nodes: node-1 done, node-2 running keystone.
func progressRun(status string, running bool) *api.Run {
	start := time.Now().Add(-12 * time.Second)
	keystone := api.RunTask{ID: "keystone", Status: api.TaskSucceeded}
	n2 := "succeeded"
	if running {
		keystone, n2 = api.RunTask{ID: "keystone", Status: api.TaskRunning, Start: &start}, api.TaskRunning
	}
	return &api.Run{ID: "3", Cluster: "demo", Graph: "default", Status: status,
		Counts: map[string]int{"succeeded": 3, "running": 1, "skipped": 2},
		Nodes: []api.RunNode{
			{Name: "node-1", Status: api.TaskSucceeded, Tasks: []api.RunTask{{ID: "hiera", Status: api.TaskSucceeded}}},
			{Name: "node-2", Status: n2, Tasks: []api.RunTask{{ID: "hiera", Status: api.TaskSucceeded}, keystone}},
			{Name: "node-3", Status: api.TaskSkipped},
			{Name: "sync", Status: api.TaskSucceeded, Tasks: []api.RunTask{{ID: "deploy_end", Status: "skipped"}}},
		}}
}

// TestProgressPlain: not on a terminal, a line each time it changes (on
// stdout in text, on stderr in JSON), with the nodes done of those in the
// run (sync and nodes without tasks left out).
func TestProgressPlain(t *testing.T) {
	var out, errs bytes.Buffer
	p := newProgress("text", &out, &errs)
	p.showRun(progressRun("running", true))
	p.showRun(progressRun("running", true))
	p.showRun(progressRun("stopping", true))
	want := "run 3 of demo: running, 5/6 tasks done, 1/2 nodes; running keystone@node-2\n" +
		"run 3 of demo: stopping, 5/6 tasks done, 1/2 nodes; running keystone@node-2\n"
	if out.String() != want || errs.Len() != 0 {
		t.Errorf("stdout:\n%s\nstderr:\n%s\nwant stdout:\n%s", &out, &errs, want)
	}
	// Read without its tasks (deploy --watch polls so): its list of running
	// tasks says which run.
	bare := progressRun("running", true)
	for i := range bare.Nodes {
		bare.Nodes[i].Tasks = nil
	}
	bare.Running = []string{"keystone@node-2"}
	if got := progressLine(bare); got != "run 3 of demo: running, 5/6 tasks done, 1/2 nodes; running keystone@node-2" {
		t.Errorf("a run without its tasks: %q", got)
	}
	out.Reset()
	p = newProgress("json", &out, &errs)
	p.showRun(progressRun("running", false))
	if out.Len() != 0 || !strings.HasPrefix(errs.String(), "run 3 of demo: running, 5/6 tasks done, 2/2 nodes\n") {
		t.Errorf("json: stdout %q, stderr %q", &out, &errs)
	}
}

// TestProgressTerminal: on a terminal (a real pseudo-terminal) the progress
// is drawn, then redrawn in its place (the cursor taken back over the lines
// drawn, which are erased), each line cut to the terminal's width.
func TestProgressTerminal(t *testing.T) {
	master, slave := openPTY(t)
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 50}); err != nil {
		t.Fatal(err)
	}
	p := newProgress("text", slave, nil)
	if !p.tty || p.width != 50 {
		t.Fatalf("on a pseudo-terminal of 50 columns: tty %v, width %d", p.tty, p.width)
	}
	p.showRun(progressRun("running", true))
	p.showRun(progressRun("running", false))
	slave.Close()
	var got bytes.Buffer
	buf := make([]byte, 4096)
	for {
		n, err := master.Read(buf)
		got.Write(buf[:n])
		if err != nil || strings.Count(got.String(), "\x1b[J") == 2 && strings.HasSuffix(got.String(), "\n") {
			break
		}
	}
	s := strings.ReplaceAll(got.String(), "\r\n", "\n")
	first, second, ok := strings.Cut(s, "\x1b[2F")
	if !ok {
		t.Fatalf("the second drawing does not go back over the two lines of the first:\n%q", s)
	}
	if !strings.HasPrefix(first, "\x1b[J") || !strings.Contains(first, "  running keystone@node-2 12s\n") {
		t.Errorf("the first drawing:\n%q", first)
	}
	for _, line := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(second, "\x1b[J"), "\n"), "\n") {
		if n := len([]rune(line)); n > 49 {
			t.Errorf("a line of %d characters on a terminal of 50: %q", n, line)
		}
	}
	if !strings.Contains(second, "run 3 of demo (default): running [####") || !strings.HasSuffix(second, "…\n") || strings.Contains(second, "running keystone") {
		t.Errorf("the second drawing:\n%q", second)
	}
}
