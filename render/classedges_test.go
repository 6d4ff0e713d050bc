package render

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/loader"
)

// TestClassEdges: the tasks at one position on the nodes of one signature hold
// one list of local edges (classEdges), each reading as the edges to its own
// node's tasks; a task whose definition has cross-node entries, and one given
// an edge by another's cross-depended-by entry, holds a list of its own. Each
// reads its edges as they are bound.
func TestClassEdges(t *testing.T) {
	repo, ld := loader.Load(mapFS(graphFiles(semRelease, map[string]string{"default": `- {id: a, type: shell, role: [cinder]}
- {id: x, type: shell, role: [controller]}
- {id: b, type: shell, role: [cinder], requires: [a]}
- id: c
  type: shell
  role: [cinder]
  requires: [a]
  cross-depends: [{name: x, role: [controller]}]
- {id: d, type: shell, role: [cinder], requires: [a, b]}
- id: e
  type: shell
  role: [controller]
  requires: [x]
  cross-depended-by: [{name: d, role: [cinder]}]
`}, classCluster)), loader.Options{})
	noErrors(t, ld)
	g := loadRender(t, repo, ld)[0].Graph("default")
	// node-5, -6 and -7 are of one class (cinder); node-4 and node-8 of another.
	cinders := []string{"node-5", "node-6", "node-7"}
	same := func(id string) bool {
		first := g.Node(cinders[0]).Task(id).requires
		for _, n := range cinders[1:] {
			if l := g.Node(n).Task(id).requires; &l[0] != &first[0] {
				return false
			}
		}
		return true
	}
	tests := []struct {
		id   string
		same bool // held once for the class
		want string
	}{
		{"b", true, "a@%[1]s"},
		{"c", false, "x@node-2 a@%[1]s"}, // node-1 is the primary controller
		{"d", false, "e@node-2 a@%[1]s b@%[1]s"},
	}
	for _, tt := range tests {
		if got := same(tt.id); got != tt.same {
			t.Errorf("%s: held once for the class: %v, want %v", tt.id, got, tt.same)
		}
		for _, n := range cinders {
			var got string
			for e := range g.Node(n).Task(tt.id).Requires() {
				if got != "" {
					got += " "
				}
				got += e.Task() + "@" + e.Node()
			}
			if d := cmp.Diff(fmt.Sprintf(tt.want, n), got); d != "" {
				t.Errorf("%s@%s requires (-want +got):\n%s", tt.id, n, d)
			}
		}
	}
	// The order reads the class's list as each node's edges.
	for _, n := range cinders {
		pos := map[string]int{}
		for i, pt := range g.Node(n).Tasks {
			pos[pt.ID()] = i
		}
		if !(pos["a"] < pos["b"] && pos["b"] < pos["d"]) {
			t.Errorf("%s: tasks in order %v, want a before b before d", n, pos)
		}
	}
}
