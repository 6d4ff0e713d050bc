package decide

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/state"
)

// TestSamePlan: a saved plan holds while the revision renders to its
// artifacts and gives every cluster the status it planned.
func TestSamePlan(t *testing.T) {
	saved := &Plan{
		Artifacts: map[string]string{"a/cluster.yaml": "1", "b/cluster.yaml": "2"},
		Clusters:  []ClusterRecord{{Name: "a", Status: state.StatusSynced}, {Name: "b", Status: state.StatusHeld}},
	}
	for _, tc := range []struct {
		name      string
		artifacts map[string]string
		clusters  []ClusterRecord
		saved     *Plan
		want      string
	}{
		{name: "the same", clusters: saved.Clusters},
		{name: "a file renders otherwise", artifacts: map[string]string{"a/cluster.yaml": "9", "b/cluster.yaml": "2"}, clusters: saved.Clusters,
			want: "a/cluster.yaml no longer renders as planned"},
		{name: "a file more", artifacts: map[string]string{"a/cluster.yaml": "1", "b/cluster.yaml": "2", "c/cluster.yaml": "3"}, clusters: saved.Clusters,
			want: "c/cluster.yaml is rendered, but was not planned"},
		{name: "a cluster's status differs", clusters: []ClusterRecord{{Name: "a", Status: state.StatusSynced}, {Name: "b", Status: state.StatusSynced}},
			want: "cluster b would be synced, not held as planned"},
		{name: "a cluster not planned", clusters: []ClusterRecord{{Name: "a", Status: state.StatusSynced}, {Name: "b", Status: state.StatusHeld}, {Name: "c", Status: state.StatusSynced}},
			want: "cluster c would be synced, not absent as planned"},
		{name: "a plan made before clusters were units: statuses not compared",
			saved:    &Plan{Artifacts: saved.Artifacts},
			clusters: []ClusterRecord{{Name: "b", Status: state.StatusSynced}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := saved
			if tc.saved != nil {
				s = tc.saved
			}
			p := &Plan{Artifacts: tc.artifacts, Clusters: tc.clusters}
			if p.Artifacts == nil {
				p.Artifacts = saved.Artifacts
			}
			if got := SamePlan(s, p); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

// TestParsePlan: a plan file of another format_version, without artifacts
// or not JSON is refused.
func TestParsePlan(t *testing.T) {
	for _, tc := range []struct {
		name, data, err string
	}{
		{"format 1", `{"format_version": "1", "serial": 4, "artifacts": {"a/cluster.yaml": "x"}}`, ""},
		{"format 2", `{"format_version": "2", "artifacts": {}}`, "the.plan is not a fuelsync plan file of format_version 1"},
		{"no format", `{"artifacts": {}}`, "the.plan is not a fuelsync plan file of format_version 1"},
		{"no artifacts", `{"format_version": "1"}`, "the.plan is not a fuelsync plan file of format_version 1"},
		{"not JSON", `{"format_version": "1", "artifacts": {`, "the.plan is not a fuelsync plan file: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParsePlan([]byte(tc.data), "the.plan")
			switch {
			case tc.err == "" && (err != nil || p.Serial != 4):
				t.Errorf("%v, %+v", err, p)
			case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
				t.Errorf("error %v, want %q", err, tc.err)
			}
		})
	}
	p := &Plan{FormatVersion: PlanFormatVersion, Serial: 2, Artifacts: map[string]string{}}
	data, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := ParsePlan(data, "x"); err != nil || back.Serial != 2 {
		t.Errorf("a plan encoded and parsed: %v, %+v", err, back)
	}
}

// TestCheckFresh: a saved plan applies only to the state it was made
// against.
func TestCheckFresh(t *testing.T) {
	p := &Plan{Lineage: "l", Serial: 3}
	for _, tc := range []struct {
		lineage string
		serial  int64
		want    string
	}{
		{"l", 3, ""},
		{"l", 4, "the plan p is stale: it was made against state serial 3, but the state is now at serial 4"},
		{"m", 3, "the plan p is stale: it was made for state lineage l, but the work directory's state has lineage m"},
	} {
		err := p.CheckFresh(&state.State{Lineage: tc.lineage, Serial: tc.serial}, "p")
		var stale *StaleError
		if tc.want == "" && err != nil || tc.want != "" && (!errors.As(err, &stale) || !strings.HasPrefix(err.Error(), tc.want)) {
			t.Errorf("%s/%d: %v, want %q", tc.lineage, tc.serial, err, tc.want)
		}
	}
}

// TestOutcomeOf: how a run ended, in one word.
func TestOutcomeOf(t *testing.T) {
	bad := hcl.Diagnostics{{Severity: hcl.DiagError}}
	change := &diff.ClusterChange{Name: "a"}
	for _, tc := range []struct {
		name           string
		heldAll        string
		changes        bool
		clusters       []*ClusterResult
		apply, applied bool
		want           Outcome
	}{
		{name: "the guard holds the revision", heldAll: "x", changes: true, apply: true, applied: true, want: Held},
		{name: "applied", changes: true, apply: true, applied: true, want: Applied},
		{name: "a plan with changes", changes: true, want: Planned},
		{name: "nothing", clusters: []*ClusterResult{{Status: state.StatusSynced}}, apply: true, want: NoChange},
		{name: "a cluster held by errors", clusters: []*ClusterResult{{Status: state.StatusHeld, Diagnostics: bad}}, apply: true, want: Invalid},
		{name: "a cluster held by the guard", clusters: []*ClusterResult{{Status: state.StatusHeld}}, apply: true, want: Held},
		{name: "changes awaiting approval", clusters: []*ClusterResult{{Status: state.StatusAwaitingApproval}}, apply: true, want: Planned},
		{name: "changes waiting for a dependency", clusters: []*ClusterResult{{Status: state.StatusOutOfSync, Changes: change}}, apply: true, want: Planned},
		{name: "statuses only applied", clusters: []*ClusterResult{{Status: state.StatusSynced}}, apply: true, applied: false, want: NoChange},
	} {
		if got := OutcomeOf(tc.heldAll, tc.changes, tc.clusters, tc.apply, tc.applied); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestStatusChanged: applying a plan writes a state for a status, its
// problems or its pending plan even where no artifact changes.
func TestStatusChanged(t *testing.T) {
	st := &state.State{Clusters: map[string]*state.ClusterState{
		"a": {Nodes: map[string]state.NodeState{"n": {}}},                                                    // an older state: synced
		"h": {Nodes: map[string]state.NodeState{"n": {}}, Status: state.StatusHeld, Problems: []string{"x"}}, // held
		"e": {Nodes: map[string]state.NodeState{}, Status: state.StatusHeld},                                 // held, never applied
	}}
	for _, tc := range []struct {
		name string
		rec  ClusterRecord
		want bool
	}{
		{"the same status", ClusterRecord{Name: "a", Status: state.StatusSynced}, false},
		{"a status", ClusterRecord{Name: "a", Status: state.StatusHeld}, true},
		{"the same problems", ClusterRecord{Name: "h", Status: state.StatusHeld, Problems: []string{"x"}}, false},
		{"other problems", ClusterRecord{Name: "h", Status: state.StatusHeld, Problems: []string{"y"}}, true},
		{"a pending plan", ClusterRecord{Name: "a", Status: state.StatusSynced, Pending: &state.Pending{Revision: "r"}}, true},
		{"not targeted", ClusterRecord{Name: "a", Status: state.StatusHeld, Untouched: true}, false},
		{"a held cluster never applied, gone", ClusterRecord{Name: "e", Gone: true}, true},
		{"an applied cluster gone (its files change)", ClusterRecord{Name: "a", Gone: true}, false},
		{"a new cluster applied", ClusterRecord{Name: "n", Status: state.StatusSynced, Changed: true}, false},
		{"a new cluster held", ClusterRecord{Name: "n", Status: state.StatusHeld}, true},
	} {
		if got := StatusChanged(st, &Plan{Clusters: []ClusterRecord{tc.rec}}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
