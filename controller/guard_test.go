package controller

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
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
			if o := loop.ReconcileOnce(ctx); o != operation.Applied {
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
				if o != operation.Applied || st.Applied != emptied || len(st.Errors) > 0 {
					t.Fatalf("allowed: %s, applied %s, errors %q", o, st.Applied, st.Errors)
				}
				if cs, err := state.Open(wd).ReadState(); err != nil || len(cs.Clusters) != 0 {
					t.Errorf("the state after an allowed empty revision: %v %+v", err, cs)
				}
				return
			}
			if o != operation.Held || st.Applied != before.Applied || st.Serial != before.Serial {
				t.Fatalf("an emptying commit: %s, applied %s serial %d (before: %s %d)", o, st.Applied, st.Serial, before.Applied, before.Serial)
			}
			want := "held back: revision " + emptied[:12] + " removes every cluster's nodes (applied: demo, demo-hcl); it is applied only with --allow-empty, or allow_empty: true in fuelsync.yaml"
			if len(st.Errors) != 1 || st.Errors[0] != want || st.Changes == nil || st.Changes.Summary.Delete != 12 {
				t.Errorf("status errors %q (want %q), changes %+v", st.Errors, want, st.Changes)
			}
			if cs, err := state.Open(wd).ReadState(); err != nil || cs.Serial != before.Serial || len(cs.Clusters) != 2 {
				t.Errorf("the state changed: %v %+v", err, cs)
			}
			if o := loop.ReconcileOnce(ctx); o != operation.Skipped {
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
			if o := loop.ReconcileOnce(ctx); o != operation.NoChange {
				t.Errorf("the sources restored: %s %q", o, loop.Status().Errors)
			}
		})
	}
}
