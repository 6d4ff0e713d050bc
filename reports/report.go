package reports

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/reports/health"
)

// The bounds of a report: a larger or longer one is refused whole (400, or 413
// for the body).
const (
	// MaxBody is the largest report body, in bytes.
	MaxBody = 1 << 20
	// MaxTasks is the most tasks a report may list (a Fuel node's graph has
	// a few hundred).
	MaxTasks = 5000
	// MaxMessage is the longest message of a report, in bytes.
	MaxMessage = 4096
	// MaxTaskMessage is the longest message of a task, in bytes.
	MaxTaskMessage = 1024
	// MaxTaskID is the longest task id, in bytes.
	MaxTaskID = 256
)

// The statuses of a report (running, success, failed) and of a task (those,
// and skipped). Success and Failed are those package health decides from;
// Failed is a node's state too.
const (
	Running = "running"
	Success = health.Success
	Failed  = health.Failed
	Skipped = "skipped"
)

// Report is what a node's agent says of one run of a graph: POST
// /api/v1/clusters/<cluster>/nodes/<node>/reports. The agent sends Graph,
// ETag, Status, StartedAt, FinishedAt, Message and Tasks; the server adds
// the rest.
type Report struct {
	// Cluster and Node are the URL's.
	Cluster string `json:"cluster,omitempty"`
	Node    string `json:"node,omitempty"`
	// Graph is the graph type run (default, provision, ...).
	Graph string `json:"graph"`
	// ETag is the ETag of the artifact the node ran, as the artifact API
	// served it (its 64 hexadecimal digits, without quotes).
	ETag string `json:"etag"`
	// Status is running, success or failed.
	Status     string     `json:"status"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Message    string     `json:"message,omitempty"`
	Tasks      []Task     `json:"tasks,omitempty"`

	// ReceivedAt is when the server accepted it.
	ReceivedAt time.Time `json:"received_at,omitzero"`
	// Serial and Revision are the applied set whose graph has ETag (the
	// current one or one of the kept sets), View that graph's view digest
	// (render.ViewDigest): the node converged when it is still the view of
	// its graph in the applied set.
	Serial   int64  `json:"serial,omitempty"`
	Revision string `json:"revision,omitempty"`
	View     string `json:"view,omitempty"`
	// GraphDigest is the node's own graph in that set (render.GraphDigest):
	// the node converged when it is still its graph's, though the view
	// changed (a commit changed other nodes' tasks).
	GraphDigest string `json:"graph_digest,omitempty"`
	// Seq numbers the node's reports (its history's order). Reports of the
	// same run (same graph, ETag and start) share one: a run's result
	// replaces its running report in the history.
	Seq int64 `json:"seq,omitempty"`
	// TasksDropped says that the report's tasks were not kept: the server
	// kept its status, message, task counts and first failed tasks only
	// (its node wrote over its budget of bytes; see the server).
	TasksDropped bool `json:"tasks_dropped,omitempty"`

	// FailedTasks and TaskCounts are what a Store keeps of Tasks in memory
	// (the failed tasks' ids, at most maxFailedNames, and the count of each
	// status); not stored.
	FailedTasks []string       `json:"-"`
	TaskCounts  map[string]int `json:"-"`
}

// Task is one task's status in a report.
type Task struct {
	ID         string     `json:"id"`
	Status     string     `json:"status"`
	StartedAt  *time.Time `json:"started_at,omitempty"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	Message    string     `json:"message,omitempty"`
}

// Error is a report refused for its content (400): Field says where
// ("tasks[3].status"), Problem what is wrong.
type Error struct {
	Field, Problem string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Problem
	}
	return e.Field + ": " + e.Problem
}

func errorf(field, format string, args ...any) error {
	return &Error{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Parse reads a report body (at most MaxBody bytes: the caller limits the
// reader) and checks it: known fields only, one JSON object, every bound and
// status. The fields the server sets are refused when the agent sends them.
func Parse(body []byte) (*Report, error) {
	if len(body) > MaxBody {
		return nil, errorf("", "the body is %d bytes, over the %d a report may be", len(body), MaxBody)
	}
	in, err := decodeBody(body)
	if err != nil {
		return nil, err
	}
	r := &Report{Graph: in.Graph, Status: in.Status, FinishedAt: in.FinishedAt, Message: in.Message, Tasks: in.Tasks}
	if err := checkRun(r, in); err != nil {
		return nil, err
	}
	if err := checkTasks(r.Tasks); err != nil {
		return nil, err
	}
	// What JSON's decoder made of bytes that are not UTF-8 (U+FFFD, three
	// bytes for one) may make the stored report larger than its body.
	if data, err := Marshal(r); err != nil || len(data) > MaxBody {
		return nil, errorf("", "the report is over %d bytes once stored (its text had bytes that are not UTF-8)", MaxBody)
	}
	return r, nil
}

// reportBody is a report as the agent sends it.
type reportBody struct {
	Graph      string     `json:"graph"`
	ETag       string     `json:"etag"`
	Status     string     `json:"status"`
	StartedAt  *time.Time `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Message    string     `json:"message"`
	Tasks      []Task     `json:"tasks"`
}

// decodeBody decodes body: one JSON object, of the fields of reportBody only.
func decodeBody(body []byte) (*reportBody, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var in reportBody
	if err := dec.Decode(&in); err != nil {
		return nil, errorf("", "the body is not a report (a JSON object with graph, etag, status, started_at, finished_at, message, tasks): %s", jsonProblem(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errorf("", "the body holds more than one JSON value")
	}
	return &in, nil
}

// checkRun checks what the report says of the whole run and sets r's ETag
// and StartedAt from in: the graph type, the ETag, the status, the start and
// finish times (a finished run has both, in order; a running one no finish)
// and the message.
func checkRun(r *Report, in *reportBody) error {
	if !loader.IsName(r.Graph) {
		return errorf("graph", "%s is not a graph type: %s", quote(r.Graph), nameRule)
	}
	etag, ok := NormalizeETag(in.ETag)
	if !ok {
		return errorf("etag", "%s is not an ETag of the artifact API (64 hexadecimal digits, quoted or not)", quote(in.ETag))
	}
	r.ETag = etag
	switch r.Status {
	case Running, Success, Failed:
	default:
		return errorf("status", "%s is not running, success or failed", quote(r.Status))
	}
	if in.StartedAt == nil {
		return errorf("started_at", "missing (an RFC 3339 time: when the run started)")
	}
	r.StartedAt = *in.StartedAt
	switch {
	case r.Status != Running && r.FinishedAt == nil:
		return errorf("finished_at", "missing: a %s report says when the run finished", r.Status)
	case r.Status == Running && r.FinishedAt != nil:
		return errorf("finished_at", "a running report has no finish time")
	case r.FinishedAt != nil && r.FinishedAt.Before(r.StartedAt):
		return errorf("finished_at", "%s is before started_at %s", r.FinishedAt.Format(time.RFC3339), r.StartedAt.Format(time.RFC3339))
	}
	return checkText("message", r.Message, MaxMessage)
}

// checkTasks checks the report's tasks: at most MaxTasks, each ID once.
func checkTasks(tasks []Task) error {
	if len(tasks) > MaxTasks {
		return errorf("tasks", "%d tasks, over the %d a report may list", len(tasks), MaxTasks)
	}
	seen := make(map[string]int, len(tasks))
	for i, t := range tasks {
		field := fmt.Sprintf("tasks[%d]", i)
		if err := checkTaskID(field, t.ID); err != nil {
			return err
		}
		if j, dup := seen[t.ID]; dup {
			return errorf(field+".id", "%s is listed twice (tasks[%d] too)", quote(t.ID), j)
		}
		seen[t.ID] = i
		if err := checkTask(field, t); err != nil {
			return err
		}
	}
	return nil
}

// checkTaskID checks the ID of the task at field ("tasks[3]"): present, at
// most MaxTaskID bytes, printable and without blanks.
func checkTaskID(field, id string) error {
	switch {
	case id == "":
		return errorf(field+".id", "missing")
	case len(id) > MaxTaskID:
		return errorf(field+".id", "%d bytes, over %d", len(id), MaxTaskID)
	case !printable(id) || strings.ContainsAny(id, " \t"):
		return errorf(field+".id", "%s holds a blank, a control character or bytes that are not UTF-8", quote(id))
	}
	return nil
}

// checkTask checks the rest of the task t at field: its status, its times
// in order, its message.
func checkTask(field string, t Task) error {
	switch t.Status {
	case Running, Success, Failed, Skipped:
	default:
		return errorf(field+".status", "%s is not running, success, failed or skipped", quote(t.Status))
	}
	if t.StartedAt != nil && t.FinishedAt != nil && t.FinishedAt.Before(*t.StartedAt) {
		return errorf(field+".finished_at", "before its started_at")
	}
	return checkText(field+".message", t.Message, MaxTaskMessage)
}

// nameRule is the rule of a graph type, for messages.
var nameRule = fmt.Sprintf("names start with a lowercase letter or digit and continue with lowercase letters, digits, '.', '_' or '-' (%s), at most %d characters", loader.NamePattern, loader.MaxNameLength)

// NormalizeETag returns the 64 hexadecimal digits of an ETag as the artifact
// API serves it ("\"<sha256>\""), given quoted or not, weak or not; ok is false
// for anything else.
func NormalizeETag(s string) (string, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "W/")
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	if len(s) != 64 {
		return "", false
	}
	if _, err := hex.DecodeString(s); err != nil || strings.ToLower(s) != s {
		return "", false
	}
	return s, true
}

// checkText refuses a message over max bytes, or with a NUL or bytes that are
// not UTF-8 (newlines and tabs are kept; everything is escaped where shown).
func checkText(field, s string, max int) error {
	if len(s) > max {
		return errorf(field, "%d bytes, over the %d it may be", len(s), max)
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return errorf(field, "holds a NUL or bytes that are not UTF-8")
	}
	return nil
}

// printable reports whether s is UTF-8 without control or format characters.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return false
		}
	}
	return true
}

// quote quotes s for a message, cut to 80 bytes.
func quote(s string) string {
	if len(s) > 80 {
		cut := 80
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return fmt.Sprintf("%q…", s[:cut])
	}
	return fmt.Sprintf("%q", s)
}

// jsonProblem says what encoding/json found, without quoting the body.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("%s (at byte %d)", syn.Error(), syn.Offset)
	case errors.As(err, &typ) && typ.Field == "":
		return fmt.Sprintf("the body is a JSON %s, not an object", typ.Value)
	case errors.As(err, &typ):
		kind := typ.Type.Kind().String()
		switch typ.Type.Kind() {
		case reflect.Slice:
			kind = "list"
		case reflect.Struct, reflect.Pointer:
			kind = "object"
		}
		return fmt.Sprintf("%s must be a %s, not a JSON %s", typ.Field, kind, typ.Value)
	case errors.Is(err, io.EOF):
		return "the body is empty"
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		return "unknown field " + strings.TrimPrefix(msg, "json: unknown field ") + " (the server sets cluster, node, received_at, serial, revision, view, graph_digest and seq itself)"
	}
	if strings.HasPrefix(msg, "parsing time ") {
		return "a time is not RFC 3339 (2006-01-02T15:04:05Z): " + quote(msg)
	}
	return strings.TrimPrefix(msg, "json: ")
}

// MaxSummary bounds a report's summary as stored (MarshalSummary): a
// message of MaxMessage control characters escaped to six bytes each, five
// failed task ids of MaxTaskID quotes, the longest names
// (TestSummaryBound). The history of a node keeps at most its --report-history
// of them, and one report whole.
const MaxSummary = 32 << 10

// maxFailedNames is how many failed tasks' ids a Store keeps in memory per node.
const maxFailedNames = 5

// Summarize returns a copy of r without its tasks, with their counts and the
// first failed ones' ids: what a Store keeps in memory.
func Summarize(r *Report) *Report {
	s := *r
	s.Tasks = nil
	s.TaskCounts = map[string]int{}
	s.FailedTasks = nil
	for _, t := range r.Tasks {
		s.TaskCounts[t.Status]++
		if t.Status == Failed && len(s.FailedTasks) < maxFailedNames {
			s.FailedTasks = append(s.FailedTasks, t.ID)
		}
	}
	if r.TaskCounts != nil && len(r.Tasks) == 0 {
		s.TaskCounts, s.FailedTasks = r.TaskCounts, slices.Clone(r.FailedTasks)
	}
	if len(s.TaskCounts) == 0 {
		s.TaskCounts = nil
	}
	return &s
}

// SameRun reports whether next is a later report of prev's run: the same
// graph, ETag and start, and prev still running. It takes prev's place in
// the history.
func SameRun(prev, next *Report) bool {
	return prev != nil && prev.Status == Running && prev.Graph == next.Graph && prev.ETag == next.ETag && prev.StartedAt.Equal(next.StartedAt)
}

// summaryJSON is how a summary (Summarize) is stored where a backend keeps
// one apart from the report (etcd's last report of each node).
type summaryJSON struct {
	*Report
	FailedTasks []string       `json:"failed_tasks,omitempty"`
	TaskCounts  map[string]int `json:"task_counts,omitempty"`
}

// MarshalSummary encodes r's summary (Summarize), tasks left out.
func MarshalSummary(r *Report) ([]byte, error) {
	s := Summarize(r)
	return Marshal(summaryJSON{Report: s, FailedTasks: s.FailedTasks, TaskCounts: s.TaskCounts})
}

// UnmarshalSummary decodes what MarshalSummary encoded; a report stored
// whole (MarshalWhole, or Marshal as backends kept their history before) is
// summarized.
func UnmarshalSummary(data []byte) (*Report, error) {
	r, err := UnmarshalWhole(data)
	if err != nil {
		return nil, err
	}
	return Summarize(r), nil
}

// MarshalWhole encodes r whole, its tasks with their counts and first
// failed ones (a backend's last report of a node, which UnmarshalWhole
// reads).
func MarshalWhole(r *Report) ([]byte, error) {
	s := Summarize(r)
	return Marshal(summaryJSON{Report: r, FailedTasks: s.FailedTasks, TaskCounts: s.TaskCounts})
}

// UnmarshalWhole decodes a report stored whole (MarshalWhole, or Marshal as
// backends kept their history before), or a summary (MarshalSummary), with
// its task counts and failed tasks either way.
func UnmarshalWhole(data []byte) (*Report, error) {
	in := summaryJSON{Report: &Report{}}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, err
	}
	r := in.Report
	if len(r.Tasks) > 0 {
		s := Summarize(r)
		r.FailedTasks, r.TaskCounts = s.FailedTasks, s.TaskCounts
	} else {
		r.FailedTasks, r.TaskCounts = in.FailedTasks, in.TaskCounts
	}
	return r, nil
}

// Marshal encodes a report or a reconcile as stored: JSON, HTML characters
// not escaped (a stored report is no bigger than its body).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// SeqKey is the name of seq in a backend's keys and file names: 16 decimal
// digits, so that names sort as numbers do.
func SeqKey(seq int64) string { return fmt.Sprintf("%016d", seq) }
