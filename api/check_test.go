package api

import (
	"strings"
	"testing"
	"time"
)

// TestCheck: each of a task report's rules, by a report that breaks it
// alone.
func TestCheck(t *testing.T) {
	now := time.Now()
	before := now.Add(-time.Second)
	good := func() TaskReport {
		return TaskReport{Task: "keystone", Attempt: 1, Status: TaskSucceeded, Message: "puppet exited 0", Output: "ok\n", StartedAt: &before, FinishedAt: &now}
	}
	for _, c := range []struct {
		name string
		edit func(*TaskReport)
		want string // "" for none
	}{
		{"a good report", func(*TaskReport) {}, ""},
		{"no task", func(r *TaskReport) { r.Task = "" }, "task:"},
		{"a task id too long", func(r *TaskReport) { r.Task = strings.Repeat("t", MaxTaskID+1) }, "task:"},
		{"a task id with a format character", func(r *TaskReport) { r.Task = "key\u00adstone" }, "task:"},
		{"attempt 0", func(r *TaskReport) { r.Attempt = 0 }, "attempt:"},
		{"an unknown status", func(r *TaskReport) { r.Status = "done" }, `status: "done"`},
		{"running is a status", func(r *TaskReport) { r.Status = TaskRunning }, ""},
		{"a message too long", func(r *TaskReport) { r.Message = strings.Repeat("m", MaxMessage+1) }, "message:"},
		{"a message of two lines", func(r *TaskReport) { r.Message = "a\nb" }, "message:"},
		{"an output too long", func(r *TaskReport) { r.Output = strings.Repeat("o", MaxOutput+1) }, "output:"},
		{"an output with NUL", func(r *TaskReport) { r.Output = "a\x00b" }, "output:"},
		{"an output not UTF-8", func(r *TaskReport) { r.Output = "a\xffb" }, "output:"},
		{"an output of many lines", func(r *TaskReport) { r.Output = "a\nb\n\tc" }, ""},
		{"finished before started", func(r *TaskReport) { r.StartedAt, r.FinishedAt = &now, &before }, "finished_at is before started_at"},
	} {
		r := good()
		c.edit(&r)
		err := r.Check()
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestOneLine: control and format characters become blanks, invalid UTF-8
// goes, the ends are trimmed, and the cut falls on a character's boundary.
func TestOneLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain", 10, "plain"},
		{" a\nb\tc ", 10, "a b c"},
		{"soft\u00adhyphen", 20, "soft hyphen"},
		{"a\xffb", 10, "ab"},
		{"äöü", 3, "ä"},
		{"abcdef", 4, "abcd"},
	} {
		if got := OneLine(c.in, c.max); got != c.want || !PrintableLine(got) {
			t.Errorf("OneLine(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

// TestFit: a report that breaks the message, output and size rules is made
// one that passes, its task, attempt and status unchanged, its output's end
// kept.
func TestFit(t *testing.T) {
	r := TaskReport{Task: "keystone", Attempt: 2, Status: TaskFailed,
		Message: "line one\nline two\x1b[2J" + strings.Repeat("<", MaxMessage),
		Output:  strings.Repeat("<x\x00\xff", MaxReportBody) + "the end"}
	r.Fit()
	if err := r.Check(); err != nil {
		t.Fatalf("after Fit: %v", err)
	}
	if b, _ := Marshal(&r); len(b) > MaxReportBody {
		t.Errorf("the body is %d bytes, over %d", len(b), MaxReportBody)
	}
	if r.Task != "keystone" || r.Attempt != 2 || r.Status != TaskFailed || !strings.HasSuffix(r.Output, "the end") {
		t.Errorf("Fit changed what it keeps: %q %d %q, output ends %q", r.Task, r.Attempt, r.Status, r.Output[max(0, len(r.Output)-10):])
	}
}

// FuzzFit: whatever its message and output, a report Fit made passes Check
// and fits the body's bound.
func FuzzFit(f *testing.F) {
	f.Add("ok", "done\n")
	f.Add("a\x00\n\u202e", "\xff\xfe<<>>")
	f.Fuzz(func(t *testing.T, message, output string) {
		r := TaskReport{Task: "t", Attempt: 1, Status: TaskFailed, Message: message, Output: output}
		r.Fit()
		if err := r.Check(); err != nil {
			t.Fatalf("Fit(%q, %q): %v", message, output, err)
		}
		if b, _ := Marshal(&r); len(b) > MaxReportBody {
			t.Fatalf("body of %d bytes", len(b))
		}
	})
}
