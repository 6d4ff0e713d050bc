// Package storetest checks a runs.Store (the work directory's, etcd's)
// against the contract its users rely on: one run a cluster at a time, ids
// in order, a log appended only after what its writer read, a run read back
// whole, the newest runs kept, the outputs.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/runs"
)

// Run checks the store open returns (a new store over the same data each
// time it is called: a restarted serve).
func Run(t *testing.T, open func() runs.Store) {
	ctx := context.Background()
	s := open()
	snap := []byte(strings.Repeat("snapshot ", 300000)) // over one part of etcd's
	h := &runs.Header{Cluster: "demo", Graph: "default", Serial: 3, Snapshot: strings.Repeat("ab", 32), Trigger: "request",
		Created: time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC), Carry: "SSFD"}
	id, err := s.Create(ctx, h, snap)
	if err != nil || id != "1" {
		t.Fatalf("Create: %q %v", id, err)
	}
	if _, err := s.Create(ctx, &runs.Header{Cluster: "demo", Snapshot: h.Snapshot}, snap); !errors.Is(err, runs.ErrBusy) {
		t.Fatalf("a second run of a busy cluster: %v, want ErrBusy", err)
	}
	if active, err := s.Active(ctx); err != nil || active["demo"] != "1" || len(active) != 1 {
		t.Fatalf("Active: %v %v", active, err)
	}
	ev := func(i int) runs.Event {
		return runs.Event{Kind: runs.KindDispatch, At: int64(i), Node: "n", Task: fmt.Sprint(i), Attempt: 1}
	}
	if err := s.Append(ctx, "demo", "1", 0, []runs.Event{ev(0), ev(1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(ctx, "demo", "1", 1, []runs.Event{ev(9)}); !errors.Is(err, runs.ErrConflict) {
		t.Fatalf("an append after a stale length: %v, want ErrConflict", err)
	}
	if err := open().Append(ctx, "demo", "1", 2, []runs.Event{ev(2)}); err != nil {
		t.Fatalf("another store appends after the length it reads: %v", err)
	}
	if err := s.Append(ctx, "demo", "1", 2, []runs.Event{ev(9)}); !errors.Is(err, runs.ErrConflict) {
		t.Fatalf("an append after another writer's: %v, want ErrConflict", err)
	}
	if err := s.PutOutput(ctx, "demo", "1", 7, []byte(strings.Repeat("x", runs.MaxOutput+10)+"end")); err != nil {
		t.Fatal(err)
	}
	rec, err := open().Read(ctx, "demo", "1")
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Snapshot) != string(snap) || rec.Header.Carry != "SSFD" || rec.Header.Serial != 3 || rec.Summary != nil ||
		!rec.Header.Created.Equal(h.Created) {
		t.Fatalf("read back: header %+v, snapshot %d bytes, summary %v", rec.Header, len(rec.Snapshot), rec.Summary)
	}
	if got := tasks(rec.Events); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Fatalf("the log read back: %v", got)
	}
	out, err := s.Output(ctx, "demo", "1", 7)
	if err != nil || len(out) != runs.MaxOutput || !strings.HasSuffix(string(out), "end") {
		t.Fatalf("the output: %d bytes, %v", len(out), err)
	}
	if out, err := s.Output(ctx, "demo", "1", 8); err != nil || out != nil {
		t.Fatalf("no output: %q %v", out, err)
	}
	if err := s.End(ctx, "demo", "1", &runs.Summary{Failed: true, Reason: "why", Counts: map[string]int{"failed": 1}}); err != nil {
		t.Fatal(err)
	}
	if active, err := s.Active(ctx); err != nil || len(active) != 0 {
		t.Fatalf("Active after the end: %v %v", active, err)
	}
	// More runs than are kept: the newest Keep, newest first.
	for i := 2; i <= runs.Keep+3; i++ {
		id, err := s.Create(ctx, &runs.Header{Cluster: "demo", Snapshot: h.Snapshot, Trigger: "request"}, snap)
		if err != nil || id != fmt.Sprint(i) {
			t.Fatalf("run %d: %q %v", i, id, err)
		}
		if err := s.End(ctx, "demo", id, &runs.Summary{}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := open().List(ctx, "demo")
	if err != nil || len(list) != runs.Keep || list[0].Header.ID != fmt.Sprint(runs.Keep+3) || list[0].Summary == nil {
		t.Fatalf("List: %d runs, %v", len(list), err)
	}
	if _, err := s.Read(ctx, "demo", "1"); !errors.Is(err, runs.ErrNotFound) {
		t.Fatalf("the oldest run is pruned: %v", err)
	}
	if _, err := s.Read(ctx, "demo", "../x"); err == nil {
		t.Fatal("a run id that is not a number was read")
	}
}

func tasks(evs []runs.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Task)
	}
	return out
}
