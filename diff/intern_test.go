package diff

import (
	"fmt"
	"strings"
	"testing"
	"unsafe"

	"github.com/fuelsync/fuelsync/internal/repogen"
)

// TestFirstApplySharesTaskLists: in the change set of a first apply, the nodes
// of a cluster with the same tasks (a class of nodes) share one list of task
// ids, so that the change set grows with the classes, not with every node's
// tasks (some 1,500 ids a node in the heavy shape).
func TestFirstApplySharesTaskLists(t *testing.T) {
	newSide := renderAll(t, repogen.Generate(repogen.Heavy(40)))
	oldSide := &Side{Digests: map[string]string{}, Read: func(name string) ([]byte, error) { return nil, fmt.Errorf("%s: none", name) }}
	cs, err := Compute(oldSide, newSide)
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for _, cc := range cs.Clusters {
		lists := map[string]*string{} // graph and ids → the first list's array
		for _, nc := range cc.Nodes {
			for _, gc := range nc.Graphs {
				if len(gc.Added) == 0 {
					continue
				}
				key := gc.Graph + "\x00" + strings.Join(gc.Added, "\x00")
				first, seen := lists[key]
				switch {
				case !seen:
					lists[key] = unsafe.SliceData(gc.Added)
				case first != unsafe.SliceData(gc.Added):
					t.Errorf("cluster %s: node %s has its own list of the %d ids of graph %s another node has", cc.Name, nc.Node, len(gc.Added), gc.Graph)
				default:
					shared++
				}
			}
		}
	}
	if shared == 0 {
		t.Fatal("no two nodes of a cluster have the same tasks: the test shows nothing")
	}
}
