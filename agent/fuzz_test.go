package agent

import (
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/reports"
)

// FuzzTaskLines: whatever a command prints, the tasks read from it are each a
// valid task of a report (an id and a status reports.Parse accepts, bounded
// message), at most reports.MaxTasks of them — never a panic.
func FuzzTaskLines(f *testing.F) {
	f.Add("fuelsync-task hiera success\nfuelsync-task keystone failed puppet exited 1\r\n")
	f.Add("fuelsync-task " + strings.Repeat("x", 300) + " success\n")
	f.Add("fuelsync-task a\x00b running\nfuelsync-task é skipped \xff\n")
	f.Fuzz(func(t *testing.T, out string) {
		a := &Agent{}
		a.init()
		a.now = func() time.Time { return time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC) }
		tasks := &taskSet{byID: map[string]int{}}
		a.readOutput(strings.NewReader(out), tasks)
		list := tasks.list()
		if len(list) > reports.MaxTasks {
			t.Fatalf("%d tasks", len(list))
		}
		for _, task := range list {
			switch {
			case task.ID == "" || len(task.ID) > reports.MaxTaskID || strings.ContainsAny(task.ID, " \t\r\n\x00"):
				t.Fatalf("task id %q", task.ID)
			case task.Status != reports.Running && task.Status != reports.Success && task.Status != reports.Failed && task.Status != reports.Skipped:
				t.Fatalf("task status %q", task.Status)
			case len(task.Message) > reports.MaxTaskMessage:
				t.Fatalf("message of %d bytes", len(task.Message))
			}
		}
	})
}
