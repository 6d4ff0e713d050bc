package reports

import (
	"strings"
	"testing"
)

// FuzzParse: a report body from the network either is refused with a
// reports.Error, or is a report within its bounds (tasks, status, stored
// size, its summary's) — never a panic.
func FuzzParse(f *testing.F) {
	etag := strings.Repeat("ab", 32)
	f.Add([]byte(`{"graph":"default","etag":"` + etag + `","status":"running","started_at":"2026-01-02T03:04:05Z"}`))
	f.Add([]byte(`{"graph":"default","etag":"\"` + etag + `\"","status":"failed","started_at":"2026-01-02T03:04:05Z","finished_at":"2026-01-02T03:05:05Z","message":"m","tasks":[{"id":"a","status":"failed","message":"x"}]}`))
	f.Add([]byte(`{"graph":"d","etag":"x"} {}`))
	f.Add([]byte("\xff\xfe"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := Parse(body)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Parse's error is a %T, not a reports.Error: %v", err, err)
			}
			return
		}
		if len(r.Tasks) > MaxTasks || (r.Status != Running && r.Status != Success && r.Status != Failed) {
			t.Fatalf("accepted out of bounds: %+v", r)
		}
		data, err := Marshal(r)
		if err != nil || len(data) > MaxBody {
			t.Fatalf("the accepted report stores as %d bytes (%v)", len(data), err)
		}
		if data, err := MarshalSummary(r); err != nil || len(data) > MaxSummary {
			t.Fatalf("the accepted report's summary stores as %d bytes (%v)", len(data), err)
		}
	})
}
