package decide

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/state"
)

// TestAttribution: which clusters an error at a file holds.
func TestAttribution(t *testing.T) {
	sdn := &loader.Plugin{Name: "sdn", Dir: "plugins/sdn"}
	rel := &loader.Plugin{Name: "rel", Dir: "plugins/rel"}
	repo := &loader.Repo{
		Settings: loader.Settings{File: "fuelsync.yaml"},
		Plugins:  []*loader.Plugin{sdn, rel, {Name: "unused", Dir: "plugins/unused"}},
		Releases: []*loader.Release{{Name: "mitaka", Version: "9.0", Plugin: rel}},
		Clusters: []*loader.Cluster{
			{Name: "a", File: "clusters/a.yaml", TasksPath: "common/*.yaml", Release: "9.0"},
			{Name: "b", File: "clusters/b/cluster.yaml", TasksPath: "../common/*.yaml", Plugins: []loader.Ref{{Name: "sdn"}}},
			{Name: "c", File: "clusters/c.yaml"},
		},
	}
	st := &state.State{Clusters: map[string]*state.ClusterState{
		"old":    {File: "clusters/old.yaml"},
		"legacy": {}, // recorded before states named the spec file
	}}
	every := []string{"a", "b", "c", "legacy", "old"}
	for _, tc := range []struct {
		file string
		want []string // nil: an orphan
	}{
		{"", every},
		{"fuelsync.yaml", every},
		{"fuelsync.hcl", every},
		{"clusters/a.yaml", []string{"a"}},
		{"clusters/b/cluster.yaml", []string{"b"}},
		{"clusters/b/extra.yaml", []string{"b"}},
		{"clusters/old.yaml", []string{"old"}},
		// A file clusters read through tasks_path holds its readers, and
		// only them.
		{"clusters/common/tasks.yaml", []string{"a", "b"}},
		{"clusters/common/other.txt", every},
		// A spec that no longer loads: the cluster it would define, and an
		// applied cluster of an older state the revision lacks.
		{"clusters/new.yaml", []string{"legacy", "new"}},
		{"clusters/gone/cluster.yaml", []string{"gone", "legacy"}},
		{"plugins/sdn/deployment_tasks.yaml", []string{"b"}},
		{"plugins/rel/metadata.yaml", []string{"a"}},
		{"plugins/unused/metadata.yaml", nil},
		{"heat/env.yaml", every},
	} {
		t.Run(tc.file, func(t *testing.T) {
			d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "bad"}
			if tc.file != "" {
				d.Subject = &hcl.Range{Filename: tc.file}
			}
			held, orphans := Hold(repo, st, hcl.Diagnostics{d, {Severity: hcl.DiagWarning, Summary: "a warning holds nothing"}})
			var got []string
			for c, ds := range held {
				if len(ds) != 1 {
					t.Errorf("cluster %s holds %d errors", c, len(ds))
				}
				got = append(got, c)
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("held %v, want %v", got, tc.want)
			}
			if (len(orphans) == 1) != (tc.want == nil) {
				t.Errorf("orphans %v", orphans)
			}
		})
	}
}

// TestProblemLines: a status line lists at most max errors, then counts the
// rest.
func TestProblemLines(t *testing.T) {
	errs := func(n int) hcl.Diagnostics {
		var out hcl.Diagnostics
		for i := range n {
			out = append(out, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprint("e", i), Subject: &hcl.Range{Filename: "f.yaml", Start: hcl.Pos{Line: i + 1, Column: 2}}})
		}
		return append(out, &hcl.Diagnostic{Severity: hcl.DiagWarning, Summary: "w"})
	}
	for _, tc := range []struct {
		n, max int
		want   []string
	}{
		{0, 3, nil},
		{2, 3, []string{"f.yaml:1:2: error: e0", "f.yaml:2:2: error: e1"}},
		{3, 3, []string{"f.yaml:1:2: error: e0", "f.yaml:2:2: error: e1", "f.yaml:3:2: error: e2"}},
		{4, 3, []string{"f.yaml:1:2: error: e0", "f.yaml:2:2: error: e1", "f.yaml:3:2: error: e2", "and 1 more error"}},
		{6, 3, []string{"f.yaml:1:2: error: e0", "f.yaml:2:2: error: e1", "f.yaml:3:2: error: e2", "and 3 more errors"}},
		{4, 0, []string{"f.yaml:1:2: error: e0", "f.yaml:2:2: error: e1", "f.yaml:3:2: error: e2", "f.yaml:4:2: error: e3"}},
	} {
		if got := ProblemLines(errs(tc.n), tc.max); !slices.Equal(got, tc.want) {
			t.Errorf("%d errors, at most %d: %q, want %q", tc.n, tc.max, got, tc.want)
		}
	}
	if got := ProblemLines(hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "nowhere"}}, 1); !slices.Equal(got, []string{"error: nowhere"}) {
		t.Errorf("an error without a place: %q", got)
	}
}
