package controller

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// recording is a strategy that records what the loop asks of it, owns the
// clusters in own, and answers leading with notLeading.
type recording struct {
	events     []string
	own        []string
	notLeading error
}

func (s *recording) begin() func() {
	s.events = append(s.events, "begin")
	return func() { s.events = append(s.events, "end") }
}

func (s *recording) prepare(ctx context.Context, st *state.State) error {
	s.events = append(s.events, "prepare")
	return nil
}

func (s *recording) leading() error {
	s.events = append(s.events, "leading")
	return s.notLeading
}

func (s *recording) owns(clusters []string) []string {
	s.events = append(s.events, "owns "+strings.Join(clusters, ","))
	var mine []string
	for _, c := range clusters {
		if slices.Contains(s.own, c) {
			mine = append(mine, c)
		}
	}
	return mine
}

func (s *recording) clusters(st *state.State, live []*operation.ClusterResult, head string) []operation.ClusterInfo {
	s.events = append(s.events, "clusters")
	return nil
}

// TestLoopStrategy: a loop given a strategy asks it around each reconcile
// (begin first, its end last, a skipped reconcile too), prepares and asks
// whether it leads through it, reconciles only the clusters it owns, and
// makes its status lines with it; a strategy that no longer leads stops the
// reconcile before it writes.
func TestLoopStrategy(t *testing.T) {
	ctx := context.Background()
	dir, repo := gittest.Quickstart(t)
	wd := state.Open(filepath.Join(t.TempDir(), "wd"))
	loop := &Loop{Workdir: wd, Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	s := &recording{own: []string{"demo"}}
	loop.use(s)
	if o := loop.ReconcileOnce(ctx); o != operation.Applied {
		t.Fatalf("first reconcile: %s %q", o, loop.Status().Errors)
	}
	if n := len(s.events); n < 2 || s.events[0] != "begin" || s.events[n-1] != "end" {
		t.Errorf("events %q: want begin first and end last", s.events)
	}
	for _, want := range []string{"prepare", "leading"} {
		if !slices.Contains(s.events, want) {
			t.Errorf("events %q: no %s", s.events, want)
		}
	}
	var owns string
	for _, e := range s.events {
		if strings.HasPrefix(e, "owns ") {
			owns = e
		}
	}
	if !strings.Contains(owns, "demo,") && !strings.HasSuffix(owns, ",demo") {
		t.Errorf("events %q: owns was not asked of every cluster", s.events)
	}
	st, err := wd.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(st.Clusters)); !slices.Equal(got, []string{"demo"}) {
		t.Errorf("the state records the clusters %q; want demo alone (the one owned)", got)
	}

	s.events = nil
	if o := loop.ReconcileOnce(ctx); o != operation.Skipped || !slices.Equal(s.events, []string{"begin", "end"}) {
		t.Errorf("the same commit again: %s, events %q; want skipped between begin and end", o, s.events)
	}
	s.events = nil
	if infos := loop.Clusters(st); len(infos) != 0 || !slices.Equal(s.events, []string{"clusters"}) {
		t.Errorf("status lines %v, events %q; want the strategy's", infos, s.events)
	}

	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute]}\n  node-7: {id: 7, roles: [compute]}")
	gittest.Commit(t, repo, "a new node")
	s.notLeading = errors.New("no longer leads")
	if o := loop.ReconcileOnce(ctx); o != operation.Failed || !strings.Contains(strings.Join(loop.Status().Errors, "\n"), "no longer leads") {
		t.Errorf("a change while no longer leading: %s %q; want failed, saying why", o, loop.Status().Errors)
	}
	if after, err := wd.ReadState(); err != nil || after.Serial != st.Serial {
		t.Errorf("the state after: %v; want serial %d still", err, st.Serial)
	}
}
