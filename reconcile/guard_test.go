package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// TestLoopHoldsEmptyingRevision: a commit that removes every cluster (the
// clusters directory deleted, as when artifacts are committed over the sources)
// is held back: the applied set and state stay, the status says why, the
// revision is not retried; the next commit is reconciled as usual. With
// AllowEmpty, or allow_empty: true in the commit's fuelsync.yaml, it is applied.
func TestLoopHoldsEmptyingRevision(t *testing.T) {
	ctx := context.Background()
	for _, allow := range []string{"", "flag", "fuelsync.yaml"} {
		t.Run("allow="+allow, func(t *testing.T) {
			dir, repo := gittest.Quickstart(t)
			wd := filepath.Join(t.TempDir(), "wd")
			loop := &Loop{Workdir: state.Open(wd), Source: &source.LocalSource{Path: dir}, ToolVersion: "test", AllowEmpty: allow == "flag"}
			if o := loop.ReconcileOnce(ctx); o != Applied {
				t.Fatalf("first reconcile: %s", o)
			}
			before := loop.Status()
			if err := os.RemoveAll(filepath.Join(dir, "clusters")); err != nil {
				t.Fatal(err)
			}
			if allow == "fuelsync.yaml" {
				if err := os.WriteFile(filepath.Join(dir, "fuelsync.yaml"), []byte("allow_empty: true\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			emptied := gittest.Commit(t, repo, "no cluster")
			o := loop.ReconcileOnce(ctx)
			st := loop.Status()
			if allow != "" {
				if o != Applied || st.Applied != emptied || len(st.Errors) > 0 {
					t.Fatalf("allowed: %s, applied %s, errors %q", o, st.Applied, st.Errors)
				}
				if cs, err := state.Open(wd).ReadState(); err != nil || len(cs.Clusters) != 0 {
					t.Errorf("the state after an allowed empty revision: %v %+v", err, cs)
				}
				return
			}
			if o != Held || st.Applied != before.Applied || st.Serial != before.Serial {
				t.Fatalf("an emptying commit: %s, applied %s serial %d (before: %s %d)", o, st.Applied, st.Serial, before.Applied, before.Serial)
			}
			want := "held back: revision " + emptied[:12] + " removes every cluster's nodes (applied: demo, demo-hcl); it is applied only with --allow-empty, or allow_empty: true in fuelsync.yaml"
			if len(st.Errors) != 1 || st.Errors[0] != want || st.Changes == nil || st.Changes.Summary.Delete != 12 {
				t.Errorf("status errors %q (want %q), changes %+v", st.Errors, want, st.Changes)
			}
			if cs, err := state.Open(wd).ReadState(); err != nil || cs.Serial != before.Serial || len(cs.Clusters) != 2 {
				t.Errorf("the state changed: %v %+v", err, cs)
			}
			if o := loop.ReconcileOnce(ctx); o != Skipped {
				t.Errorf("the held revision again: %s, want skipped", o)
			}
			// The sources restored: reconciled (nothing to change).
			wt, _ := repo.Worktree()
			if err := wt.Checkout(&git.CheckoutOptions{Hash: plumbing.NewHash(before.Applied), Force: true}); err != nil {
				t.Fatal(err)
			}
			if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.Master, Keep: true}); err != nil {
				t.Fatal(err)
			}
			gittest.Commit(t, repo, "clusters back")
			if o := loop.ReconcileOnce(ctx); o != NoChange {
				t.Errorf("the sources restored: %s %q", o, loop.Status().Errors)
			}
		})
	}
}

// TestEmptying: which changes of the applied nodes hold a revision back.
func TestEmptying(t *testing.T) {
	state := func(clusters map[string]int) *state.State {
		st := &state.State{Clusters: map[string]*state.ClusterState{}}
		for name, n := range clusters {
			cs := &state.ClusterState{Nodes: map[string]state.NodeState{}}
			for i := range n {
				cs.Nodes[string(rune('a'+i))] = state.NodeState{ID: i}
			}
			st.Clusters[name] = cs
		}
		return st
	}
	rendered := func(clusters map[string]int) []*render.Rendered {
		var rs []*render.Rendered
		for name, n := range clusters {
			c := &loader.Cluster{Name: name}
			for i := range n {
				c.Nodes = append(c.Nodes, &loader.Node{Name: string(rune('a' + i)), ID: i})
			}
			rs = append(rs, &render.Rendered{Model: &render.Model{Cluster: c}})
		}
		return rs
	}
	for _, tc := range []struct {
		name            string
		applied, render map[string]int
		want            string
	}{
		{"nothing applied", nil, nil, ""},
		{"first apply", map[string]int{}, map[string]int{"a": 2}, ""},
		{"every cluster gone", map[string]int{"a": 2, "b": 1}, nil, "removes every cluster's nodes (applied: a, b)"},
		{"every cluster empty", map[string]int{"a": 2}, map[string]int{"a": 0}, "removes every cluster's nodes (applied: a)"},
		{"one cluster emptied", map[string]int{"a": 2, "b": 1}, map[string]int{"a": 0, "b": 1}, "removes every node of cluster a (2 applied)"},
		{"two clusters emptied", map[string]int{"a": 2, "b": 1, "c": 1}, map[string]int{"a": 0, "b": 0, "c": 1}, "removes every node of cluster a (2 applied), cluster b (1 applied)"},
		{"one cluster removed, one kept", map[string]int{"a": 2, "b": 1}, map[string]int{"b": 1}, ""},
		{"nodes removed, one kept", map[string]int{"a": 3}, map[string]int{"a": 1}, ""},
		{"an empty cluster stays empty", map[string]int{"a": 0, "b": 1}, map[string]int{"a": 0, "b": 1}, ""},
	} {
		if got := emptying(state(tc.applied), rendered(tc.render), nil); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
