package diff

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// syncSides returns the artifacts of a cluster of nodes nodes with tasks tasks
// each, whose sync node has stages stages each requiring every (node, task)
// pair, as a cluster's stages do; and the same cluster with one more task on
// node-0 (so one more requirement in each stage).
func syncSides(nodes, tasks, stages int) (old, new *Side) {
	build := func(extra bool) *Side {
		files := map[string][]byte{}
		var cluster strings.Builder
		cluster.WriteString("cluster: c\nnodes:\n")
		for n := range nodes {
			fmt.Fprintf(&cluster, "  node-%d: {id: %d, roles: [compute], tags: [compute]}\n", n, n+1)
		}
		files["c/cluster.yaml"] = []byte(cluster.String())
		taskIDs := func(n int) []string {
			var ids []string
			for t := range tasks {
				ids = append(ids, fmt.Sprintf("task-%d", t))
			}
			if extra && n == 0 {
				ids = append(ids, "cinder")
			}
			return ids
		}
		for n := range nodes {
			var b strings.Builder
			b.WriteString("tasks:\n")
			for i, id := range taskIDs(n) {
				fmt.Fprintf(&b, "- id: %s\n  type: puppet\n", id)
				if i > 0 {
					fmt.Fprintf(&b, "  requires:\n  - {task: task-%d, node: node-%d}\n", i-1, n)
				}
			}
			files[fmt.Sprintf("c/nodes/node-%d/default.yaml", n)] = []byte(b.String())
		}
		var sync strings.Builder
		sync.WriteString("tasks:\n")
		for s := range stages {
			fmt.Fprintf(&sync, "- id: stage-%d_end\n  type: stage\n  requires:\n", s)
			for n := range nodes {
				for _, id := range taskIDs(n) {
					fmt.Fprintf(&sync, "  - {task: %s, node: node-%d}\n", id, n)
				}
			}
		}
		files["c/nodes/sync/default.yaml"] = []byte(sync.String())
		digests := map[string]string{}
		for name, data := range files {
			sum := sha256.Sum256(data)
			digests[name] = hex.EncodeToString(sum[:])
		}
		return &Side{Digests: digests, Read: func(name string) ([]byte, error) { return files[name], nil }}
	}
	return build(false), build(true)
}

// syncTasks and syncStages shape the clusters of the tests below: 65 tasks on
// each node and 10 stages on sync, so 650 requirements of sync per node (some
// 325,000 at 500 nodes).
const syncTasks, syncStages = 65, 10

// BenchmarkComputeOneNodeChange compares a cluster before and after one task is
// added to one node, at 125, 250 and 500 nodes: the time per node (ns/node)
// stays flat when the comparison is linear in the cluster's size.
func BenchmarkComputeOneNodeChange(b *testing.B) {
	for _, nodes := range []int{125, 250, 500} {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			old, new := syncSides(nodes, syncTasks, syncStages)
			for b.Loop() {
				if _, err := Compute(old, new); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nodes), "ns/node")
		})
	}
}

// TestComputeLinearInNodes: comparing a cluster whose sync stages require every
// (node, task) pair costs time linear in the number of nodes, not quadratic (a
// linear search of the requirement lists took minutes at 500 nodes). Four times
// the nodes must cost less than ten times the time (16 when quadratic; 4 when
// linear, with room for a loaded machine), the best of three runs each.
func TestComputeLinearInNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("large input")
	}
	timeOf := func(nodes int) time.Duration {
		old, new := syncSides(nodes, syncTasks, syncStages)
		var runs []float64
		for range 3 {
			start := time.Now()
			cs, err := Compute(old, new)
			runs = append(runs, float64(time.Since(start)))
			if err != nil {
				t.Fatal(err)
			}
			// node-0 gains the task; sync's new requirements are left out.
			if len(cs.Clusters) != 1 || len(cs.Clusters[0].Nodes) != 1 || cs.Summary.TasksAdded != 1 {
				t.Fatalf("%d nodes: %v", nodes, lines(cs))
			}
		}
		return time.Duration(slices.Min(runs))
	}
	small, large := timeOf(125), timeOf(500)
	t.Logf("125 nodes: %v, 500 nodes: %v (×%.1f)", small, large, float64(large)/float64(small))
	if large > 10*small {
		t.Errorf("500 nodes take %v, more than 10 times the %v of 125 nodes", large, small)
	}
}
