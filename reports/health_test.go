package reports

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// graphSet is an applied set of cluster c in the stored layout: node n-1 runs
// task a (whose definition is params), and the catalogue holds other, a task
// of no node here.
func graphSet(serial int64, params, other string) (*state.State, fs.FS) {
	files := map[string]string{
		"c/nodes/n-1/default.yaml": "cluster: c\nformat_version: 2\ngraph: default\ninstances: {}\nnode: n-1\nroles: []\ntags: []\ntasks:\n  - id: a\n",
		"c/tasks/default.yaml":     "format_version: 2\ntasks:\n  a:\n    parameters:\n      cmd: " + params + "\n    type: shell\n  other:\n    parameters:\n      cmd: " + other + "\n    type: shell\n",
	}
	st := &state.State{Serial: serial, Artifacts: map[string]string{},
		Clusters: map[string]*state.ClusterState{"c": {Nodes: map[string]state.NodeState{"n-1": {ID: 1}}}}}
	set := fstest.MapFS{}
	for name, data := range files {
		sum := sha256.Sum256([]byte(data))
		st.Artifacts[name] = hex.EncodeToString(sum[:])
		set[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return st, set
}

// TestConvergence: a node converged when its last report is a success on its
// graph applied now: the same view, or, when the view changed, the same own
// graph (render.GraphDigest: its node file and its tasks' definitions) —
// which a Convergence without the applied sets cannot tell.
func TestConvergence(t *testing.T) {
	ran, ranSet := graphSet(1, "a.sh", "o.sh")
	sets := map[int64]fs.FS{1: ranSet}
	conv := &Convergence{Sets: func(n int64) fs.FS { return sets[n] }}
	const name = "c/nodes/n-1/default.yaml"
	view := func(st *state.State) string { v, _ := render.ViewDigest(st.Artifacts, name); return v }
	report := func(st *state.State, status string) *Report {
		return &Report{Node: "n-1", Graph: "default", Status: status, View: view(st), GraphDigest: conv.GraphDigest(st, name)}
	}
	otherChanged, otherSet := graphSet(2, "a.sh", "o2.sh")
	ownChanged, ownSet := graphSet(3, "a2.sh", "o.sh")
	unread, _ := graphSet(4, "a.sh", "o3.sh")
	sets[2], sets[3], sets[4] = otherSet, ownSet, fstest.MapFS{}
	if view(otherChanged) == view(ran) {
		t.Fatal("a change of another task left the view digest as it was")
	}
	for name, tc := range map[string]struct {
		conv *Convergence
		st   *state.State
		last *Report
		want string
	}{
		"no report":                           {conv, ran, nil, Progressing},
		"success on the view":                 {conv, ran, report(ran, Success), Converged},
		"failure on the view":                 {conv, ran, report(ran, Failed), Failed},
		"running":                             {conv, ran, report(ran, Running), Progressing},
		"another task changed":                {conv, otherChanged, report(ran, Success), Converged},
		"another task changed, failed":        {conv, otherChanged, report(ran, Failed), Failed},
		"its own task changed":                {conv, ownChanged, report(ran, Success), Progressing},
		"another task changed, no Sets":       {&Convergence{}, otherChanged, report(ran, Success), Progressing},
		"another task changed, nil":           {nil, otherChanged, report(ran, Success), Progressing},
		"a report without its graph's digest": {conv, otherChanged, &Report{Graph: "default", Status: Success, View: view(ran)}, Progressing},
		"another graph":                       {conv, ran, &Report{Graph: "provision", Status: Success, View: view(ran)}, Progressing},
		"its set unreadable":                  {conv, unread, report(ran, Success), Progressing},
	} {
		t.Run(name, func(t *testing.T) {
			if got := tc.conv.NodeState(tc.st, "c", "n-1", tc.last); got != tc.want {
				t.Errorf("%s, want %s", got, tc.want)
			}
		})
	}
}
