package operation

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// Apply checks that the plan is fresh itself, under the lock the caller holds,
// whoever calls it (apply's own check comes before it loads anything): a plan
// made against serial 0, applied once, is stale at serial 1, and applying it
// again fails and changes nothing.
func TestApplyRefusesAStalePlan(t *testing.T) {
	w := state.Open(filepath.Join(t.TempDir(), "wd"))
	repo, diags := loader.Load(os.DirFS("../examples/quickstart"), loader.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rs, diags := render.Render(repo, render.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	l, err := w.Lock(context.Background(), "test", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	st, err := w.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	p, err := MakePlan(w, st, rs, nil, "working-tree", "test")
	if err != nil {
		t.Fatal(err)
	}
	next, err := Apply(w, l, st, p, rs)
	if err != nil || next.Serial != 1 {
		t.Fatalf("the first apply: %v", err)
	}
	_, err = Apply(w, l, next, p, rs)
	var stale *StaleError
	if !errors.As(err, &stale) || err.Error() != "the plan plan is stale: it was made against state serial 0, but the state is now at serial 1 (applied revision working-tree); run plan again" {
		t.Errorf("the stale plan applied again: %v", err)
	}
	if st, err := w.ReadState(); err != nil || st.Serial != 1 {
		t.Errorf("after the refusal: serial %d, %v", st.Serial, err)
	}
}

func TestStalePlan(t *testing.T) {
	p := &Plan{Lineage: "l1", Serial: 3}
	if err := p.CheckFresh(&state.State{Lineage: "l1", Serial: 3}, "x.plan"); err != nil {
		t.Errorf("fresh plan: %v", err)
	}
	err := p.CheckFresh(&state.State{Lineage: "l1", Serial: 4, Revision: "0123456789abcdef"}, "x.plan")
	want := "the plan x.plan is stale: it was made against state serial 3, but the state is now at serial 4 (applied revision 0123456789ab); run plan again"
	if err == nil || err.Error() != want {
		t.Errorf("stale plan:\n got %v\nwant %s", err, want)
	}
	if err := p.CheckFresh(&state.State{Lineage: "l2", Serial: 3}, "x.plan"); err == nil || !strings.Contains(err.Error(), "lineage l1") {
		t.Errorf("another lineage: %v", err)
	}
}

// Apply checks every file it publishes against the plan's digests, whatever
// its caller checked before: a file that renders otherwise than planned, a
// planned file the render no longer gives and a rendered file the plan lacks
// each stop the apply before anything is switched.
func TestApplyChecksEveryFile(t *testing.T) {
	repo, diags := loader.Load(os.DirFS("../examples/quickstart"), loader.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rs, diags := render.Render(repo, render.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	const node = "demo/nodes/node-1/default.yaml"
	for _, tc := range []struct {
		name string
		edit func(map[string]string)
		want string
	}{
		{"a file rendered otherwise", func(a map[string]string) { a[node] = strings.Repeat("0", 64) }, node + " differs from the plan"},
		{"a planned file no longer rendered", func(a map[string]string) { a["demo/nodes/node-9/default.yaml"] = strings.Repeat("0", 64) }, "the render no longer produces demo/nodes/node-9/default.yaml"},
		{"a rendered file not planned", func(a map[string]string) { delete(a, node) }, node + " differs from the plan"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := state.Open(filepath.Join(t.TempDir(), "wd"))
			l, err := w.Lock(context.Background(), "test", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Unlock()
			st, err := w.ReadState()
			if err != nil {
				t.Fatal(err)
			}
			p, err := MakePlan(w, st, rs, nil, "working-tree", "test")
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(p.Artifacts)
			if _, err := Apply(w, l, st, p, rs); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("apply: %v, want %q", err, tc.want)
			}
			if st, err := w.ReadState(); err != nil || st.Serial != 0 {
				t.Errorf("after the refusal: serial %d, %v", st.Serial, err)
			}
		})
	}
}
