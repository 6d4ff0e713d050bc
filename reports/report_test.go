package reports

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/loader"
)

const etag = "5f0c2b1d7e3a9c8b4f6d0e1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e"

func TestParse(t *testing.T) {
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	end := start.Add(time.Minute)
	good := `{"graph":"default","etag":"\"` + etag + `\"","status":"failed","started_at":"2026-03-01T10:00:00Z","finished_at":"2026-03-01T10:01:00Z","message":"one task failed",
	  "tasks":[{"id":"keystone","status":"failed","message":"exit 1"},{"id":"netconfig","status":"success","started_at":"2026-03-01T10:00:00Z","finished_at":"2026-03-01T10:00:30Z"}]}`
	r, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	t30 := start.Add(30 * time.Second)
	want := &Report{Graph: "default", ETag: etag, Status: Failed, StartedAt: start, FinishedAt: &end, Message: "one task failed",
		Tasks: []Task{{ID: "keystone", Status: Failed, Message: "exit 1"}, {ID: "netconfig", Status: Success, StartedAt: &start, FinishedAt: &t30}}}
	if d := cmp.Diff(want, r); d != "" {
		t.Errorf("Parse (-want +got):\n%s", d)
	}

	many := make([]string, MaxTasks+1)
	for i := range many {
		many[i] = `{"id":"t` + strconv.Itoa(i) + `","status":"success"}`
	}
	notUTF8 := make([]string, 2600)
	for i := range notUTF8 {
		notUTF8[i] = `{"id":"t` + strconv.Itoa(i) + `","status":"success","message":"` + strings.Repeat("\xff", MaxTaskMessage/3) + `"}`
	}
	for name, tc := range map[string]struct{ body, want string }{
		"empty":            {``, "the body is empty"},
		"not json":         {`graph=default`, "invalid character"},
		"array":            {`[]`, "the body is a JSON array, not an object"},
		"two values":       {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z"} {}`, "more than one JSON value"},
		"unknown field":    {`{"graph":"default","colour":"red"}`, `unknown field "colour"`},
		"server field":     {`{"graph":"default","serial":3}`, `unknown field "serial"`},
		"bad graph":        {`{"graph":"../x","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z"}`, `graph: "../x" is not a graph type`},
		"short etag":       {`{"graph":"default","etag":"abc","status":"running","started_at":"2026-03-01T10:00:00Z"}`, `etag: "abc" is not an ETag`},
		"upper etag":       {`{"graph":"default","etag":"` + strings.ToUpper(etag) + `","status":"running","started_at":"2026-03-01T10:00:00Z"}`, `is not an ETag`},
		"bad status":       {`{"graph":"default","etag":"` + etag + `","status":"ok","started_at":"2026-03-01T10:00:00Z"}`, `status: "ok" is not running, success or failed`},
		"no start":         {`{"graph":"default","etag":"` + etag + `","status":"running"}`, "started_at: missing"},
		"bad time":         {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"yesterday"}`, "not RFC 3339"},
		"no finish":        {`{"graph":"default","etag":"` + etag + `","status":"success","started_at":"2026-03-01T10:00:00Z"}`, "finished_at: missing: a success report"},
		"running finished": {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","finished_at":"2026-03-01T10:00:00Z"}`, "a running report has no finish time"},
		"ends before":      {`{"graph":"default","etag":"` + etag + `","status":"success","started_at":"2026-03-01T10:00:00Z","finished_at":"2026-03-01T09:00:00Z"}`, "before started_at"},
		"long message":     {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","message":"` + strings.Repeat("m", MaxMessage+1) + `"}`, "message: 4097 bytes, over the 4096"},
		"nul message":      {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","message":"a\u0000b"}`, "message: holds a NUL"},
		"too many tasks":   {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":[` + strings.Join(many, ",") + `]}`, "5001 tasks, over the 5000"},
		"task no id":       {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":[{"status":"success"}]}`, "tasks[0].id: missing"},
		"task id control":  {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":[{"id":"a\u001b[31m","status":"success"}]}`, "tasks[0].id"},
		"task id long":     {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":[{"id":"` + strings.Repeat("t", MaxTaskID+1) + `","status":"success"}]}`, "tasks[0].id: 257 bytes"},
		"task twice":       {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":[{"id":"a","status":"success"},{"id":"a","status":"failed"}]}`, `tasks[1].id: "a" is listed twice`},
		"task status":      {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":[{"id":"a","status":"done"}]}`, `tasks[0].status: "done" is not running, success, failed or skipped`},
		"task message":     {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":[{"id":"a","status":"failed","message":"` + strings.Repeat("m", MaxTaskMessage+1) + `"}]}`, "tasks[0].message: 1025 bytes"},
		"tasks not list":   {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":{}}`, "tasks must be a list, not a JSON object"},
		"task ends before": {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":[{"id":"a","status":"success","started_at":"2026-03-01T10:00:00Z","finished_at":"2026-03-01T09:00:00Z"}]}`, "tasks[0].finished_at: before its started_at"},
		"task id blank":    {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":[{"id":"a b","status":"success"}]}`, `tasks[0].id: "a b" holds a blank`},
		// Each byte that is not UTF-8 is stored as U+FFFD, three bytes.
		"over once stored": {`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-03-01T10:00:00Z","tasks":[` + strings.Join(notUTF8, ",") + `]}`, "the report is over 1048576 bytes once stored"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse: %v; want an error with %q", err, tc.want)
			}
		})
	}
	if _, err := Parse(make([]byte, MaxBody+1)); err == nil || !strings.Contains(err.Error(), "over the 1048576") {
		t.Errorf("a body over MaxBody: %v", err)
	}
}

func TestNormalizeETag(t *testing.T) {
	for in, ok := range map[string]bool{
		etag: true, `"` + etag + `"`: true, `W/"` + etag + `"`: true, ` "` + etag + `" `: true,
		`"` + etag: false, etag[:63]: false, strings.ToUpper(etag): false, "": false, `"view-` + etag[:59] + `"`: false,
	} {
		got, gotOK := NormalizeETag(in)
		if gotOK != ok || ok && got != etag {
			t.Errorf("NormalizeETag(%q) = %q, %v; want ok %v", in, got, gotOK, ok)
		}
	}
}

func TestToken(t *testing.T) {
	secret := []byte("s3cret")
	tok := Token(secret, "demo", "node-1")
	if len(tok) != 64 {
		t.Fatalf("token %q: want 64 hex digits", tok)
	}
	if !CheckToken(secret, "demo", "node-1", tok) {
		t.Error("a node's own token is refused")
	}
	for _, tc := range []struct{ secret, cluster, node, token string }{
		{"s3cret", "demo", "node-2", tok},                    // another node's token
		{"s3cret", "demo-hcl", "node-1", tok},                // another cluster's node
		{"other", "demo", "node-1", tok},                     // another secret
		{"", "demo", "node-1", Token(nil, "demo", "node-1")}, // no secret: nothing passes
		{"s3cret", "demo", "node-1", ""},
	} {
		if CheckToken([]byte(tc.secret), tc.cluster, tc.node, tc.token) {
			t.Errorf("CheckToken(%q, %s, %s) accepted %q", tc.secret, tc.cluster, tc.node, tc.token)
		}
	}
	// The names are separated: ("a", "bc") and ("ab", "c") differ.
	if Token(secret, "a", "bc") == Token(secret, "ab", "c") {
		t.Error("the token of (a, bc) is that of (ab, c)")
	}
}

// TestSummaryBound: the largest summary a report can have (a message of
// 4,096 control characters, each escaped to six bytes; five failed task ids
// of 256 quotes; names of the longest) is at most MaxSummary bytes, the
// figure the bounds of what one node keeps are computed with.
func TestSummaryBound(t *testing.T) {
	long := func(c byte, n int) string { return strings.Repeat(string(c), n) }
	name := long('n', loader.MaxNameLength)
	end := time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.FixedZone("x", -12*3600))
	r := &Report{Cluster: name, Node: name, Graph: name, ETag: long('e', 64), Status: Failed, StartedAt: end, FinishedAt: &end,
		Message: long(1, MaxMessage), ReceivedAt: end, Serial: math.MaxInt64, Revision: long('r', 64), View: long('v', 64), Seq: math.MaxInt64, TasksDropped: true}
	for i := range MaxTasks {
		st := []string{Running, Success, Failed, Skipped}[i%4]
		r.Tasks = append(r.Tasks, Task{ID: long('"', MaxTaskID-4) + fmt.Sprintf("%04d", i), Status: st})
	}
	data, err := MarshalSummary(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the largest summary: %d bytes", len(data))
	if len(data) > MaxSummary {
		t.Errorf("a summary of %d bytes, over MaxSummary (%d)", len(data), MaxSummary)
	}
}
