package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Check checks a task report as serve does before it takes it: the agent
// checks its own the same way (one rule for both).
func (r *TaskReport) Check() error {
	switch {
	case r.Task == "" || len(r.Task) > MaxTaskID || !PrintableLine(r.Task):
		return fmt.Errorf("task: want the task's id (at most %d printable bytes)", MaxTaskID)
	case r.Attempt < 1:
		return errors.New("attempt: want the assignment's attempt (1 or more)")
	case r.Status != TaskRunning && r.Status != TaskSucceeded && r.Status != TaskFailed && r.Status != TaskSkipped:
		return fmt.Errorf("status: %q is not running, succeeded, failed or skipped", r.Status)
	case len(r.Message) > MaxMessage || !PrintableLine(r.Message):
		return fmt.Errorf("message: at most %d printable bytes on one line", MaxMessage)
	case len(r.Output) > MaxOutput || !utf8.ValidString(r.Output) || strings.ContainsRune(r.Output, 0):
		return fmt.Errorf("output: at most %d bytes of UTF-8, no NUL", MaxOutput)
	case r.StartedAt != nil && r.FinishedAt != nil && r.FinishedAt.Before(*r.StartedAt):
		return errors.New("finished_at is before started_at")
	}
	return nil
}

// MaxTaskID bounds a task id in a report.
const MaxTaskID = 256

// PrintableLine says s is UTF-8 without control or format characters.
func PrintableLine(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return true
}

// OneLine makes s a printable line of at most max bytes: control and format
// characters become blanks, invalid UTF-8 is dropped, the end is cut on a
// character's boundary.
func OneLine(s string, max int) string {
	s = strings.ToValidUTF8(s, "")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return ' '
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Fit makes a report one that Check passes and whose body is at most
// MaxReportBody bytes: the message made one printable line, the output
// made valid UTF-8 without NUL and cut from its start until the body fits.
// The status, task and attempt are never changed.
func (r *TaskReport) Fit() {
	r.Message = OneLine(r.Message, MaxMessage)
	out := strings.ReplaceAll(strings.ToValidUTF8(r.Output, ""), "\x00", "")
	for len(out) > MaxOutput || r.bodyLen(out) > MaxReportBody {
		cut := len(out) / 2
		for cut < len(out) && !utf8.RuneStart(out[cut]) {
			cut++
		}
		out = out[cut:]
	}
	r.Output = out
}

func (r *TaskReport) bodyLen(out string) int {
	c := *r
	c.Output = out
	b, _ := Marshal(&c)
	return len(b)
}

// Marshal writes v as the client sends it: JSON without HTML escaping.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
