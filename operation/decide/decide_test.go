package decide

import (
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/state"
)

// cl is one cluster of a table's world: in the revision and the applied
// state, as rendered and compared.
type cl struct {
	name    string
	nodes   int    // nodes in the revision; -1: not in the revision
	applied int    // nodes applied; -1: not in the applied state
	status  string // its recorded status ("": as an older state records it)
	rev     string // its recorded revision ("": the state's)
	changed bool   // its render differs from its applied artifacts
	sync    string
	suspend bool
	deps    []loader.Dependency
	errs    int // errors that hold it
}

// world builds the input of a decision: the revision rev, the applied state,
// each cluster's disposition, what its render and compare found.
func world(clusters []cl, scope Scope, guard, apply bool, health map[string]string) Input {
	repo := &loader.Repo{}
	st := &state.State{Serial: 3, Lineage: "l", Revision: "0000000000000000000000000000000000000001", Clusters: map[string]*state.ClusterState{}, Artifacts: map[string]string{}}
	holds := map[string]hcl.Diagnostics{}
	for _, c := range clusters {
		if c.nodes >= 0 {
			lc := &loader.Cluster{Name: c.name, File: "clusters/" + c.name + ".yaml", Sync: c.sync, Suspend: c.suspend, SuspendSet: c.suspend, DependsOn: c.deps}
			for i := range c.nodes {
				lc.Nodes = append(lc.Nodes, &loader.Node{Name: string(rune('a' + i)), ID: i + 1})
			}
			repo.Clusters = append(repo.Clusters, lc)
		}
		if c.applied >= 0 {
			cs := &state.ClusterState{Nodes: map[string]state.NodeState{}, Status: c.status, Revision: c.rev, File: "clusters/" + c.name + ".yaml"}
			for i := range c.applied {
				cs.Nodes[string(rune('a'+i))] = state.NodeState{ID: i + 1}
			}
			st.Clusters[c.name] = cs
			st.Artifacts[c.name+"/cluster.yaml"] = "old-" + c.name
		}
		for i := range c.errs {
			holds[c.name] = append(holds[c.name], &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "bad " + string(rune('0'+i)),
				Subject: &hcl.Range{Filename: "clusters/" + c.name + ".yaml", Start: hcl.Pos{Line: i + 1, Column: 1}}})
		}
	}
	names := Names(NewAttribution(repo, st).All(), holds)
	disp, _ := Dispose(repo, names, scope, holds, nil)
	compared := map[string]*Compared{}
	for _, c := range clusters {
		if disp[c.name] != Render {
			continue
		}
		cmp := &Compared{Cluster: repo.Cluster(c.name), Digests: map[string]string{c.name + "/cluster.yaml": "old-" + c.name}}
		switch {
		case guard && Emptied(st, c.name, c.nodes):
			cmp.Emptied, cmp.Digests = true, nil
		case c.changed:
			cmp.Digests[c.name+"/cluster.yaml"] = "new-" + c.name
			cmp.Change = &diff.ClusterChange{Name: c.name, Action: diff.Update}
		}
		compared[c.name] = cmp
	}
	return Input{
		Revision: "00000000000000000000000000000000000000aa", Repo: repo, State: st,
		Names: names, Disp: disp, Holds: holds, Compared: compared, Scope: scope, Guard: guard, Apply: apply,
		Health: func(c string) reports.Health {
			if h := health[c]; h != "" {
				return reports.Health{Health: h, Converged: 1, Failed: 1}
			}
			return reports.Health{Health: reports.Unknown}
		},
	}
}

// TestDecide: each rule of the decisions, a row that fails when it is
// broken: what is held (errors, the guard), what waits (depends_on synced
// or healthy, sync: manual unless targeted), what a cluster not targeted,
// suspended or gone reads, and what the plan applies.
func TestDecide(t *testing.T) {
	const rev = "00000000000000000000000000000000000000aa"
	dep := func(c string) []loader.Dependency { return []loader.Dependency{{Cluster: c}} }
	healthy := func(c string) []loader.Dependency { return []loader.Dependency{{Cluster: c, Healthy: true}} }
	for _, tc := range []struct {
		name     string
		clusters []cl
		scope    Scope
		guard    bool
		health   map[string]string
		// want: each cluster's status and the record's; a problem of each
		// (a substring); the clusters the plan applies.
		status, record map[string]string
		problem        map[string]string
		planned        []string
		heldAll        string // a substring; "" for none
		again          bool
		waitingHealth  []string
	}{
		{name: "a change is planned, synced once applied",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true}, {name: "b", nodes: 1, applied: 1}},
			status:   map[string]string{"a": state.StatusOutOfSync, "b": state.StatusSynced},
			record:   map[string]string{"a": state.StatusSynced, "b": state.StatusSynced},
			planned:  []string{"a", "b"}},
		{name: "sync: manual awaits approval",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, sync: "manual"}},
			status:   map[string]string{"a": state.StatusAwaitingApproval},
			record:   map[string]string{"a": state.StatusAwaitingApproval}},
		{name: "sync: manual without a change is synced",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, sync: "manual"}},
			status:   map[string]string{"a": state.StatusSynced}, planned: []string{"a"}},
		{name: "sync: manual under --cluster is applied (the target is the approval)",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, sync: "manual"}},
			scope:    Scope{Targets: []string{"a"}},
			status:   map[string]string{"a": state.StatusOutOfSync},
			record:   map[string]string{"a": state.StatusSynced},
			planned:  []string{"a"}},
		{name: "depends_on a cluster this run changes: waits, and the next run may apply it",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, deps: dep("b")}, {name: "b", nodes: 1, applied: 1, changed: true}},
			status:   map[string]string{"a": state.StatusOutOfSync, "b": state.StatusOutOfSync},
			record:   map[string]string{"a": state.StatusOutOfSync, "b": state.StatusSynced},
			problem:  map[string]string{"a": "waiting for cluster b to be synced at revision 000000000000"},
			planned:  []string{"b"}, again: true},
		{name: "depends_on a cluster awaiting approval: waits, not again at once",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, deps: dep("b")}, {name: "b", nodes: 1, applied: 1, changed: true, sync: "manual"}},
			status:   map[string]string{"a": state.StatusOutOfSync, "b": state.StatusAwaitingApproval},
			problem:  map[string]string{"a": "waiting for cluster b"}},
		{name: "depends_on one cluster this run applies and one awaiting approval: again",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, deps: []loader.Dependency{{Cluster: "b"}, {Cluster: "c"}}},
				{name: "b", nodes: 1, applied: 1, changed: true}, {name: "c", nodes: 1, applied: 1, changed: true, sync: "manual"}},
			status:  map[string]string{"a": state.StatusOutOfSync, "b": state.StatusOutOfSync, "c": state.StatusAwaitingApproval},
			planned: []string{"b"}, again: true},
		{name: "depends_on a synced cluster: applied",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, deps: dep("b")}, {name: "b", nodes: 1, applied: 1}},
			status:   map[string]string{"a": state.StatusOutOfSync, "b": state.StatusSynced},
			record:   map[string]string{"a": state.StatusSynced},
			planned:  []string{"a", "b"}},
		{name: "depends_on a suspended cluster: waits until it is resumed",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, deps: dep("b")}, {name: "b", nodes: 1, applied: 1, suspend: true}},
			status:   map[string]string{"a": state.StatusOutOfSync, "b": state.StatusSuspended},
			problem:  map[string]string{"a": "it is suspended (suspend: true): a waits until b is resumed"}},
		{name: "depends_on healthy: a degraded dependency holds it",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, deps: healthy("b")}, {name: "b", nodes: 1, applied: 1}},
			health:   map[string]string{"b": reports.Degraded},
			status:   map[string]string{"a": state.StatusOutOfSync},
			record:   map[string]string{"a": state.StatusOutOfSync},
			problem:  map[string]string{"a": "waiting for cluster b to be healthy at revision 000000000000 (it is degraded: 1 of 2 nodes converged)"},
			planned:  []string{"b"}, waitingHealth: []string{"a"}},
		{name: "depends_on healthy: a healthy dependency lets it apply",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, deps: healthy("b")}, {name: "b", nodes: 1, applied: 1}},
			health:   map[string]string{"b": reports.Healthy},
			record:   map[string]string{"a": state.StatusSynced}, planned: []string{"a", "b"}},
		{name: "errors hold a cluster; the others are planned",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, errs: 2}, {name: "b", nodes: 1, applied: 1, changed: true}},
			status:   map[string]string{"a": state.StatusHeld, "b": state.StatusOutOfSync},
			record:   map[string]string{"a": state.StatusHeld},
			problem:  map[string]string{"a": "clusters/a.yaml:2:1: error: bad 1"},
			planned:  []string{"b"}},
		{name: "the guard holds a cluster left without a node",
			clusters: []cl{{name: "a", nodes: 0, applied: 2, changed: true}, {name: "b", nodes: 1, applied: 1, changed: true}},
			guard:    true,
			status:   map[string]string{"a": state.StatusHeld, "b": state.StatusOutOfSync},
			problem:  map[string]string{"a": "removes every node of cluster a (2 applied)"},
			planned:  []string{"b"}},
		{name: "the guard holds the revision that leaves no node",
			clusters: []cl{{name: "a", nodes: 0, applied: 2, changed: true}, {name: "b", nodes: -1, applied: 1}},
			guard:    true,
			status:   map[string]string{"a": state.StatusHeld, "b": state.StatusHeld},
			heldAll:  "removes every cluster's nodes (applied: a, b)"},
		{name: "without the guard a cluster is emptied",
			clusters: []cl{{name: "a", nodes: 0, applied: 2, changed: true}, {name: "b", nodes: 1, applied: 1}},
			status:   map[string]string{"a": state.StatusOutOfSync}, planned: []string{"a", "b"}},
		{name: "suspend: true keeps it as applied",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, suspend: true}},
			status:   map[string]string{"a": state.StatusSuspended}, record: map[string]string{"a": state.StatusSuspended}},
		{name: "a cluster the revision lacks is deleted",
			clusters: []cl{{name: "a", nodes: -1, applied: 1}, {name: "b", nodes: 1, applied: 1}},
			status:   map[string]string{"a": state.StatusSynced}, planned: []string{"b"}},
		{name: "not targeted: an older state's record without a status reads synced",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true}, {name: "b", nodes: 1, applied: 1, changed: true}},
			scope:    Scope{Targets: []string{"b"}},
			status:   map[string]string{"a": state.StatusSynced, "b": state.StatusOutOfSync},
			planned:  []string{"b"}},
		{name: "not targeted: its recorded status",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, status: state.StatusHeld}, {name: "b", nodes: 1, applied: 1}},
			scope:    Scope{Targets: []string{"b"}},
			status:   map[string]string{"a": state.StatusHeld}, planned: []string{"b"}},
		{name: "not targeted and never applied: out_of_sync",
			clusters: []cl{{name: "a", nodes: 1, applied: -1}, {name: "b", nodes: 1, applied: 1}},
			scope:    Scope{Targets: []string{"b"}},
			status:   map[string]string{"a": state.StatusOutOfSync}, planned: []string{"b"}},
		{name: "a shard: a dependency another shard recorded synced at the revision",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, deps: dep("b")}, {name: "b", nodes: 1, applied: 1, changed: true, status: state.StatusSynced, rev: rev}},
			scope:    Scope{Sharded: true, Owned: []string{"a"}},
			record:   map[string]string{"a": state.StatusSynced}, planned: []string{"a"}},
		{name: "a shard: a dependency another shard has not synced at the revision",
			clusters: []cl{{name: "a", nodes: 1, applied: 1, changed: true, deps: dep("b")}, {name: "b", nodes: 1, applied: 1, changed: true, status: state.StatusSynced}},
			scope:    Scope{Sharded: true, Owned: []string{"a"}},
			record:   map[string]string{"a": state.StatusOutOfSync}, problem: map[string]string{"a": "waiting for cluster b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := world(tc.clusters, tc.scope, tc.guard, true, tc.health)
			d := Decide(in)
			results, records := Statuses(in, d)
			if d.HeldAll != "" {
				HoldAll(in.State, results)
			}
			for i, r := range results {
				if want, ok := tc.status[r.Name]; ok && r.Status != want {
					t.Errorf("cluster %s: status %s, want %s (problems %q)", r.Name, r.Status, want, r.Problems)
				}
				if want, ok := tc.record[r.Name]; ok && records[i].Status != want {
					t.Errorf("cluster %s: recorded %s, want %s", r.Name, records[i].Status, want)
				}
				if want, ok := tc.problem[r.Name]; ok && !slices.ContainsFunc(r.Problems, func(p string) bool { return strings.Contains(p, want) }) {
					t.Errorf("cluster %s: problems %q, want one with %q", r.Name, r.Problems, want)
				}
				if r.Status == state.StatusAwaitingApproval && records[i].Pending == nil {
					t.Errorf("cluster %s awaits approval without a pending plan", r.Name)
				}
			}
			if !slices.Equal(d.Planned, tc.planned) {
				t.Errorf("planned %v, want %v", d.Planned, tc.planned)
			}
			if (tc.heldAll == "") != (d.HeldAll == "") || !strings.Contains(d.HeldAll, tc.heldAll) {
				t.Errorf("the whole revision held: %q, want %q", d.HeldAll, tc.heldAll)
			}
			if d.Again != tc.again {
				t.Errorf("again %v, want %v", d.Again, tc.again)
			}
			if !slices.Equal(d.WaitingHealth, tc.waitingHealth) {
				t.Errorf("waiting for health %v, want %v", d.WaitingHealth, tc.waitingHealth)
			}
		})
	}
}
