package etcdstate

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

// unitsState is a small state of five clusters whose cluster-002 has
// problems and a pending plan, so that every field of a record is set, and
// cluster-003 an empty map of primary tags and a node of no roles (not
// null).
func unitsState() *state.State {
	st := fleetState("lin", 1, 5, 50)
	cs := st.Clusters["cluster-002"]
	cs.Status, cs.Problems = state.StatusAwaitingApproval, []string{"a.hcl:1:1: error: one"}
	cs.Pending = &state.Pending{Revision: "r1", Digest: "d1", Base: "b1", Summary: diff.Summary{Deploy: 2}}
	cs = st.Clusters["cluster-003"]
	cs.Primary = map[string]string{}
	cs.Nodes["node-000030"] = state.NodeState{ID: 31, Roles: []string{}}
	return st
}

// stored is what a reader of st gets: st encoded and parsed.
func stored(t *testing.T, st *state.State) *state.State {
	t.Helper()
	data, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	out, err := state.Parse("test", data)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// node returns a node of cluster c in st.
func node(st *state.State, c string) string {
	for n := range st.Clusters[c].Nodes {
		return n
	}
	return ""
}

// artifactOf returns an artifact path of cluster c in st.
func artifactOf(st *state.State, c string) string {
	for p := range st.Artifacts {
		if strings.HasPrefix(p, c+"/nodes/") {
			return p
		}
	}
	return ""
}

// stateChanges are changes a caller may make to a state it read, in place,
// and the cluster units a commit of it writes (besides the rest).
var stateChanges = []struct {
	name   string
	change func(st *state.State)
	units  int
}{
	{"nothing but the serial", func(st *state.State) {}, 0},
	{"a node's role, in place", func(st *state.State) {
		n := node(st, "cluster-002")
		st.Clusters["cluster-002"].Nodes[n].Roles[0] = "controller"
	}, 1},
	{"a node's id", func(st *state.State) {
		cs := st.Clusters["cluster-002"]
		n := node(st, "cluster-002")
		ns := cs.Nodes[n]
		ns.ID += 1000
		cs.Nodes[n] = ns
	}, 1},
	{"a node's roles, nil", func(st *state.State) {
		cs := st.Clusters["cluster-002"]
		n := node(st, "cluster-002")
		cs.Nodes[n] = state.NodeState{ID: cs.Nodes[n].ID}
	}, 1},
	{"a node added", func(st *state.State) {
		st.Clusters["cluster-002"].Nodes["node-new"] = state.NodeState{ID: 99999, Roles: []string{"compute"}}
	}, 1},
	{"a node removed", func(st *state.State) { delete(st.Clusters["cluster-002"].Nodes, node(st, "cluster-002")) }, 1},
	{"a node's roles, null", func(st *state.State) {
		st.Clusters["cluster-003"].Nodes["node-000030"] = state.NodeState{ID: 31}
	}, 1},
	{"empty primary tags, null", func(st *state.State) { st.Clusters["cluster-003"].Primary = nil }, 1},
	{"a primary tag, in place", func(st *state.State) { st.Clusters["cluster-002"].Primary["controller"] = "node-other" }, 1},
	{"a primary tag added", func(st *state.State) { st.Clusters["cluster-002"].Primary["mongo"] = "node-other" }, 1},
	{"the revision", func(st *state.State) { st.Clusters["cluster-002"].Revision = "other" }, 1},
	{"the cluster's serial", func(st *state.State) { st.Clusters["cluster-002"].Serial++ }, 1},
	{"the status", func(st *state.State) { st.Clusters["cluster-002"].Status = state.StatusHeld }, 1},
	{"the file", func(st *state.State) { st.Clusters["cluster-002"].File = "clusters/other.hcl" }, 1},
	{"a problem, in place", func(st *state.State) { st.Clusters["cluster-002"].Problems[0] = "b.hcl:2:2: error: two" }, 1},
	{"problems removed", func(st *state.State) { st.Clusters["cluster-002"].Problems = nil }, 1},
	{"the pending plan, in place", func(st *state.State) { st.Clusters["cluster-002"].Pending.Summary.Deploy++ }, 1},
	{"the pending plan removed", func(st *state.State) { st.Clusters["cluster-002"].Pending = nil }, 1},
	{"the record, null", func(st *state.State) { st.Clusters["cluster-002"] = nil }, 1},
	{"an artifact changed", func(st *state.State) { st.Artifacts[artifactOf(st, "cluster-003")] = strings.Repeat("f", 64) }, 1},
	{"an artifact added", func(st *state.State) { st.Artifacts["cluster-003/new.yaml"] = strings.Repeat("f", 64) }, 1},
	{"an artifact removed", func(st *state.State) { delete(st.Artifacts, artifactOf(st, "cluster-003")) }, 1},
	{"an artifact moved", func(st *state.State) {
		p := artifactOf(st, "cluster-003")
		st.Artifacts[p+".moved"] = st.Artifacts[p]
		delete(st.Artifacts, p)
	}, 1},
	{"an input fingerprint changed", func(st *state.State) { st.ClusterInputs["cluster-001"] = "other" }, 1},
	{"an input fingerprint removed", func(st *state.State) { delete(st.ClusterInputs, "cluster-001") }, 1},
	{"every input fingerprint removed", func(st *state.State) { st.ClusterInputs = nil }, 5},
	{"a cluster removed", func(st *state.State) {
		delete(st.Clusters, "cluster-004")
		delete(st.ClusterInputs, "cluster-004")
		for p := range st.Artifacts {
			if strings.HasPrefix(p, "cluster-004/") {
				delete(st.Artifacts, p)
			}
		}
	}, 0},
	{"a cluster's record removed, its files kept", func(st *state.State) { delete(st.Clusters, "cluster-004") }, 0},
	{"a cluster added", func(st *state.State) {
		st.Clusters["cluster-new"] = &state.ClusterState{Nodes: map[string]state.NodeState{"n": {ID: 1}}}
		st.Artifacts["cluster-new/cluster.yaml"] = strings.Repeat("e", 64)
	}, 1},
	{"a cluster renamed", func(st *state.State) {
		st.Clusters["cluster-444"] = st.Clusters["cluster-004"]
		delete(st.Clusters, "cluster-004")
	}, 1},
	{"the rest: the manifest", func(st *state.State) { st.Artifacts["manifest.json"] = strings.Repeat("0", 64) }, 0},
	{"the rest: the inputs", func(st *state.State) { st.Inputs = "other" }, 0},
	{"the rest: a file of no cluster", func(st *state.State) { st.Artifacts["ghost/x"] = strings.Repeat("1", 64) }, 0},
	{"two clusters", func(st *state.State) {
		st.Clusters["cluster-000"].Status = state.StatusHeld
		st.Artifacts[artifactOf(st, "cluster-001")] = strings.Repeat("f", 64)
	}, 2},
}

// changeNamed is the change of stateChanges of that name.
func changeNamed(t *testing.T, name string) func(*state.State) {
	for _, tc := range stateChanges {
		if tc.name == name {
			return tc.change
		}
	}
	t.Fatalf("no change %q", name)
	return nil
}

// A commit writes every change of a state read (changed in place, as a caller
// may), and writes only the units that changed: a unit compared equal with
// the one read is named again, and only then. Another process reads what
// was committed.
func TestEtcdCommitWritesEveryChange(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	for i, tc := range stateChanges {
		for _, afterRead := range []bool{true, false} {
			name := tc.name + map[bool]string{true: ", after a read", false: ", after its commit"}[afterRead]
			t.Run(name, func(t *testing.T) {
				prefix := "change-" + strconv.Itoa(i) + "-" + strconv.FormatBool(afterRead)
				w := etcdAt(t, c, prefix)
				st := unitsState()
				if err := w.Commit(ctx, 0, st); err != nil {
					t.Fatal(err)
				}
				if afterRead {
					// Another process, as apply is: its units are those it
					// read.
					var err error
					w = etcdAt(t, c, prefix)
					if st, err = w.ReadState(ctx); err != nil {
						t.Fatal(err)
					}
				}
				commitChange(t, c, w, prefix, st, tc.change, tc.units)
			})
		}
	}
}

// commitChange changes st, read or committed by w, commits it, and checks
// that another process and w read it as committed, and that the commit put
// the rest and units cluster units.
func commitChange(t *testing.T, c *etcdtest.Cluster, w *Etcd, prefix string, st *state.State, change func(*state.State), units int) {
	t.Helper()
	ctx := context.Background()
	change(st)
	st.Serial++
	want := stored(t, st)
	stop := putBytes(t, w, "/"+prefix+"/")
	if err := w.Commit(ctx, st.Serial-1, st); err != nil {
		t.Fatal(err)
	}
	_, keys := stop()
	r := etcdAt(t, c, prefix)
	r.cfg.Timeout = w.cfg.Timeout // a bucketed state's thousand parts
	got, err := r.ReadState(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the state another process reads (-committed +read):\n%s", d)
	}
	if again, err := w.ReadState(ctx); err != nil || !cmp.Equal(want, again) {
		t.Errorf("the state the writer reads again differs (%v):\n%s", err, cmp.Diff(want, again))
	}
	parts := 0
	for _, k := range keys {
		if strings.Contains(k, "/parts/") {
			parts++
		}
	}
	if parts != units+1 {
		t.Errorf("%d parts put; want %d (the rest and %d cluster units)", parts, units+1, units)
	}
}

// A state a read returns is the caller's: a change to it, in place, changes
// neither the next read nor what the next commit compares with; nor does a
// change to a state after its commit.
func TestEtcdReadReturnsACopy(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	for i, tc := range stateChanges[1:] {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "copy-" + strconv.Itoa(i)
			w := etcdAt(t, c, prefix)
			committed := unitsState()
			want := stored(t, committed)
			if err := w.Commit(ctx, 0, committed); err != nil {
				t.Fatal(err)
			}
			tc.change(committed) // after its commit
			r := etcdAt(t, c, prefix)
			for who, e := range map[string]*Etcd{"the writer": w, "a reader": r} {
				st, err := e.ReadState(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, st); d != "" {
					t.Fatalf("%s's first read (-committed +read):\n%s", who, d)
				}
				tc.change(st)
				again, err := e.ReadState(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, again); d != "" {
					t.Errorf("%s's read after a change to the state it read before (-committed +read):\n%s", who, d)
				}
			}
		})
	}
}

// A reader that holds the units of the state it read takes again only the
// units of the same parts: a unit changed, added or removed, the rest
// changed, a state of format 1 are read as stored, fetching only what
// changed.
func TestEtcdReadTakesOnlyUnitsOfTheSameParts(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	for i, tc := range []struct {
		name    string
		change  func(st *state.State)
		fetched int64
		v1      bool
	}{
		{"one cluster changed, to the same size", func(st *state.State) { st.Clusters["cluster-001"].Revision = strings.Repeat("c", 40) }, 2, false},
		{"a node's role", stateChanges[1].change, 2, false},
		{"a cluster removed", func(st *state.State) { delete(st.Clusters, "cluster-004") }, 1, false},
		{"a cluster added", changeNamed(t, "a cluster added"), 2, false},
		{"the rest", func(st *state.State) { st.Inputs = "other" }, 1, false},
		{"two clusters", changeNamed(t, "two clusters"), 3, false},
		{"format 1", stateChanges[1].change, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "same-" + strconv.Itoa(i)
			w, r := etcdAt(t, c, prefix), etcdAt(t, c, prefix)
			if err := w.Commit(ctx, 0, unitsState()); err != nil {
				t.Fatal(err)
			}
			if _, err := r.ReadState(ctx); err != nil {
				t.Fatal(err)
			}
			st, err := w.ReadState(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(st)
			st.Serial++
			want := stored(t, st)
			if tc.v1 {
				v1Layout(t, w, st, w.key)
			} else if err := w.Commit(ctx, 1, st); err != nil {
				t.Fatal(err)
			}
			r.fetched.Store(0)
			got, err := r.ReadState(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("the state read (-stored +read):\n%s", d)
			}
			if n := r.fetched.Load(); !tc.v1 && n != tc.fetched {
				t.Errorf("%d parts fetched; want %d", n, tc.fetched)
			}
		})
	}
}

// A reader that holds a unit checks it as the header names it: with another
// plain size, or under another key (where it holds another key's cluster), it
// is refused, as by a reader that does not hold it.
func TestEtcdReadChecksAUnitHeld(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	for i, tc := range []struct {
		name   string
		change func(h *etcdHeader)
		want   string
	}{
		{"another plain size", func(h *etcdHeader) {
			h.Clusters["cluster-001"].PlainSize++
			h.PlainSize++
		}, "where its header says"},
		{"another key", func(h *etcdHeader) {
			h.Size -= h.Clusters["cluster-003"].Size
			h.PlainSize -= h.Clusters["cluster-003"].PlainSize
			h.Clusters["cluster-003"] = h.Clusters["cluster-001"]
			delete(h.Clusters, "cluster-001")
		}, `its unit "cluster-003" holds cluster "cluster-001"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "held-" + strconv.Itoa(i)
			w, r := etcdAt(t, c, prefix), etcdAt(t, c, prefix)
			if err := w.Commit(ctx, 0, unitsState()); err != nil {
				t.Fatal(err)
			}
			if _, err := r.ReadState(ctx); err != nil {
				t.Fatal(err)
			}
			h := storedHeader(t, w)
			tc.change(&h)
			header, _ := json.Marshal(h)
			if _, err := w.client.Put(ctx, w.key("state"), string(header)); err != nil {
				t.Fatal(err)
			}
			if _, err := r.ReadState(ctx); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("a unit held, named with %s: %v; want %q", tc.name, err, tc.want)
			}
		})
	}
}

// A path in a cluster unit and in the rest is refused, by a reader that held
// the unit too.
func TestEtcdReadRefusesAPathTwice(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	w, r := etcdAt(t, c, "twice"), etcdAt(t, c, "twice")
	st := unitsState()
	if err := w.Commit(ctx, 0, st); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadState(ctx); err != nil {
		t.Fatal(err)
	}
	// The rest again, with a path of cluster-001's unit.
	p := artifactOf(st, "cluster-001")
	rest, _ := planUnits(st, &prior{})
	rest.Artifacts[p] = st.Artifacts[p]
	pu, err := (&unitPacker{zw: gzip.NewWriter(nil)}).pack("", rest)
	if err != nil {
		t.Fatal(err)
	}
	for i, part := range pu.parts {
		if _, err := w.client.Put(ctx, w.key("parts/"+pu.ref.Parts[i]), string(part)); err != nil {
			t.Fatal(err)
		}
	}
	h := storedHeader(t, w)
	h.Size += pu.ref.Size - h.Rest.Size
	h.PlainSize += pu.ref.PlainSize - h.Rest.PlainSize
	h.Rest = pu.ref
	header, _ := json.Marshal(h)
	if _, err := w.client.Put(ctx, w.key("state"), string(header)); err != nil {
		t.Fatal(err)
	}
	want := "the artifact \"" + p + "\" is in two units"
	for who, e := range map[string]*Etcd{"a reader that held the unit": r, "another": etcdAt(t, c, "twice")} {
		if _, err := e.ReadState(ctx); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", who, err, want)
		}
	}
}

// Above maxUnits clusters, where a unit holds several clusters, a commit
// writes a bucket whose cluster went, came or changed, and only that bucket.
func TestEtcdCommitBuckets(t *testing.T) {
	c := etcdtest.StartWith(t, 1, "--election-timeout", "2500")
	ctx := context.Background()
	w := etcdAt(t, c, "buckets")
	w.cfg.Timeout = 30 * time.Second
	st := fleetState("lin", 1, maxUnits+1, maxUnits+1)
	st.Clusters["lonely"] = &state.ClusterState{Status: state.StatusHeld} // no file, no input
	// Two clusters of a bucket, the second without an input fingerprint.
	var a, b string
	byKey := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(st.Clusters)) {
		k := unitKey(name, len(st.Clusters))
		if other, ok := byKey[k]; ok && a == "" {
			a, b = other, name
		}
		byKey[k] = name
	}
	delete(st.ClusterInputs, b)
	if err := w.Commit(ctx, 0, st); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(st *state.State)
	}{
		{"a cluster of nothing but its record removed", func(st *state.State) { delete(st.Clusters, "lonely") }},
		{"a cluster of nothing but its record added", func(st *state.State) { st.Clusters["lonely"] = &state.ClusterState{} }},
		{"a cluster changed", func(st *state.State) { st.Clusters["cluster-007"].Status = state.StatusHeld }},
		{"an artifact removed", func(st *state.State) { delete(st.Artifacts, "cluster-009/cluster.yaml") }},
		{"an input fingerprint moved to another cluster of its bucket", func(st *state.State) {
			st.ClusterInputs[b] = st.ClusterInputs[a]
			delete(st.ClusterInputs, a)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, err := w.ReadState(ctx)
			if err != nil {
				t.Fatal(err)
			}
			commitChange(t, c, w, "buckets", cur, tc.change, 1)
		})
	}
}

// recordFields names every field of state.ClusterState, and of the structs
// it holds ("Nodes.Roles", "Pending.Summary.Deploy").
func recordFields() map[string]bool {
	fields := map[string]bool{}
	var walk func(prefix string, ty reflect.Type)
	walk = func(prefix string, ty reflect.Type) {
		for i := range ty.NumField() {
			f := ty.Field(i)
			name := prefix + f.Name
			fields[name] = true
			switch {
			case f.Type.Kind() == reflect.Map && f.Type.Elem().Kind() == reflect.Struct:
				walk(name+".", f.Type.Elem())
			case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct:
				walk(name+".", f.Type.Elem())
			case f.Type.Kind() == reflect.Struct:
				walk(name+".", f.Type)
			}
		}
	}
	walk("", reflect.TypeFor[state.ClusterState]())
	return fields
}

// sameCluster tells null and empty apart where JSON does ("nodes":null,
// "nodes":{}).
func TestSameClusterNullAndEmpty(t *testing.T) {
	for name, change := range map[string]func(cs *state.ClusterState){
		"Nodes":       func(cs *state.ClusterState) { cs.Nodes = nil },
		"Nodes.Roles": func(cs *state.ClusterState) { cs.Nodes["n1"] = state.NodeState{ID: 1} },
		"Primary":     func(cs *state.ClusterState) { cs.Primary = nil },
	} {
		empty := func() *state.ClusterState {
			return &state.ClusterState{Nodes: map[string]state.NodeState{"n1": {ID: 1, Roles: []string{}}}, Primary: map[string]string{}}
		}
		if name == "Nodes" {
			empty = func() *state.ClusterState { return &state.ClusterState{Nodes: map[string]state.NodeState{}} }
		}
		b := empty()
		change(b)
		if sameCluster(empty(), b) || sameCluster(b, empty()) {
			t.Errorf("%s: sameCluster says null and empty are the same", name)
		}
	}
}

// sameCluster tells apart records that differ in any field. Its table names
// every field of ClusterState, NodeState and Pending: a field added to them
// fails this test until sameCluster compares it and the table changes it.
func TestSameClusterEveryField(t *testing.T) {
	fields := recordFields()
	base := func() *state.ClusterState {
		return &state.ClusterState{
			Nodes:   map[string]state.NodeState{"n1": {ID: 1, Roles: []string{"compute"}}},
			Primary: map[string]string{"controller": "n1"}, Revision: "r", Serial: 3, Status: "synced",
			Problems: []string{"p"}, File: "f", Pending: &state.Pending{Revision: "r", Digest: "d", Base: "b"},
		}
	}
	changes := map[string][]func(cs *state.ClusterState){
		"Nodes": {func(cs *state.ClusterState) { cs.Nodes["n2"] = state.NodeState{} },
			func(cs *state.ClusterState) { cs.Nodes = nil },
			func(cs *state.ClusterState) { cs.Nodes = map[string]state.NodeState{"n2": cs.Nodes["n1"]} }},
		"Nodes.ID": {func(cs *state.ClusterState) { cs.Nodes["n1"] = state.NodeState{ID: 2, Roles: []string{"compute"}} }},
		"Nodes.Roles": {func(cs *state.ClusterState) { cs.Nodes["n1"] = state.NodeState{ID: 1, Roles: []string{"controller"}} },
			func(cs *state.ClusterState) { cs.Nodes["n1"] = state.NodeState{ID: 1} },
			func(cs *state.ClusterState) { cs.Nodes["n1"] = state.NodeState{ID: 1, Roles: []string{}} }},
		"Primary": {func(cs *state.ClusterState) { cs.Primary["controller"] = "n2" },
			func(cs *state.ClusterState) { cs.Primary = nil },
			func(cs *state.ClusterState) { cs.Primary = map[string]string{"mongo": "n1"} }},
		"Revision": {func(cs *state.ClusterState) { cs.Revision = "r2" }},
		"Serial":   {func(cs *state.ClusterState) { cs.Serial++ }},
		"Status":   {func(cs *state.ClusterState) { cs.Status = "held" }},
		"Problems": {func(cs *state.ClusterState) { cs.Problems = []string{"q"} },
			func(cs *state.ClusterState) { cs.Problems = nil },
			func(cs *state.ClusterState) { cs.Problems = append(cs.Problems, "q") }},
		"File":             {func(cs *state.ClusterState) { cs.File = "g" }},
		"Pending":          {func(cs *state.ClusterState) { cs.Pending = nil }},
		"Pending.Revision": {func(cs *state.ClusterState) { cs.Pending.Revision = "x" }},
		"Pending.Digest":   {func(cs *state.ClusterState) { cs.Pending.Digest = "x" }},
		"Pending.Base":     {func(cs *state.ClusterState) { cs.Pending.Base = "x" }},
		"Pending.Summary": {func(cs *state.ClusterState) { cs.Pending.Summary = diff.Summary{Delete: 1} },
			func(cs *state.ClusterState) { cs.Pending.Summary.TasksChanged++ }},
	}
	for name := range fields {
		// Summary's fields are ints compared as one (a struct ==): any
		// will do.
		if _, ok := changes[name]; !ok && !strings.HasPrefix(name, "Pending.Summary.") {
			t.Errorf("no change of the field %s in this table: does sameCluster compare it?", name)
		}
	}
	if !sameCluster(base(), base()) || !sameCluster(nil, nil) {
		t.Fatal("sameCluster: equal records differ")
	}
	if sameCluster(base(), nil) || sameCluster(nil, base()) {
		t.Error("sameCluster: a record and none are the same")
	}
	for _, name := range slices.Sorted(maps.Keys(changes)) {
		for i, change := range changes[name] {
			b := base()
			change(b)
			if sameCluster(base(), b) || sameCluster(b, base()) {
				t.Errorf("%s, change %d: sameCluster says the records are the same", name, i)
			}
		}
	}
}

// A header whose cluster unit names the parts of its rest (a rest of no
// cluster and no file reads as an empty unit) is read alike twice by one
// process: the units it holds are kept by kind, a rest never taken for a
// cluster unit nor the reverse.
func TestEtcdReadKeepsRestAndUnitsApart(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	w := etcdAt(t, c, "apart")
	st := state.Empty()
	st.Lineage, st.Serial = "lin", 1
	if err := w.Commit(ctx, 0, st); err != nil {
		t.Fatal(err)
	}
	h := storedHeader(t, w)
	h.Clusters = map[string]*etcdUnit{"cluster-x": h.Rest}
	h.Size, h.PlainSize = 2*h.Size, 2*h.PlainSize
	header, _ := json.Marshal(h)
	if _, err := w.client.Put(ctx, w.key("state"), string(header)); err != nil {
		t.Fatal(err)
	}
	r := etcdAt(t, c, "apart")
	for i := range 2 {
		if got, err := r.ReadState(ctx); err != nil || !cmp.Equal(stored(t, st), got) {
			t.Errorf("read %d: %v\n%s", i, err, cmp.Diff(stored(t, st), got))
		}
	}
}

// A path in two cluster units (a bucket's and a cluster's) is refused by a
// reader that held the units, and that reader then reads the good state
// again as stored.
func TestEtcdReadRefusesAPathInTwoUnits(t *testing.T) {
	c := etcdtest.Start(t, 1)
	ctx := context.Background()
	w, r := etcdAt(t, c, "two"), etcdAt(t, c, "two")
	st := unitsState()
	if err := w.Commit(ctx, 0, st); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadState(ctx); err != nil {
		t.Fatal(err)
	}
	good, err := w.client.Get(ctx, w.key("state"))
	if err != nil {
		t.Fatal(err)
	}
	// cluster-001's bucket, holding one of its paths and another.
	p := artifactOf(st, "cluster-001")
	k := unitKey("cluster-001", maxUnits+1)
	doc := &unitDoc{Artifacts: map[string]string{p: st.Artifacts[p], "cluster-001/extra": strings.Repeat("e", 64)}}
	pu, err := (&unitPacker{zw: gzip.NewWriter(nil)}).pack(k, doc)
	if err != nil {
		t.Fatal(err)
	}
	for i, part := range pu.parts {
		if _, err := w.client.Put(ctx, w.key("parts/"+pu.ref.Parts[i]), string(part)); err != nil {
			t.Fatal(err)
		}
	}
	h := storedHeader(t, w)
	h.Clusters[k] = pu.ref
	h.Size += pu.ref.Size
	h.PlainSize += pu.ref.PlainSize
	header, _ := json.Marshal(h)
	if _, err := w.client.Put(ctx, w.key("state"), string(header)); err != nil {
		t.Fatal(err)
	}
	want := "the artifact \"" + p + "\" is in two units"
	if _, err := r.ReadState(ctx); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a path in two units: %v; want %q", err, want)
	}
	if _, err := w.client.Put(ctx, w.key("state"), string(good.Kvs[0].Value)); err != nil {
		t.Fatal(err)
	}
	if got, err := r.ReadState(ctx); err != nil || !cmp.Equal(stored(t, st), got) {
		t.Errorf("the good state read after the refusal (%v):\n%s", err, cmp.Diff(stored(t, st), got))
	}
}
