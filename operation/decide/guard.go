package decide

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fuelsync/fuelsync/state"
)

// Emptying says how the rendered clusters empty the applied state st (nodes:
// each rendered cluster's count of nodes; kept: the clusters kept as applied):
// every cluster gone, or clusters left without a node; "" when they do not. A
// cluster removed while others remain is not emptying (deleting a cluster's
// file is how a cluster is retired).
func Emptying(st *state.State, nodes map[string]int, kept []string) string {
	var applied []string
	for name, cs := range st.Clusters {
		if len(cs.Nodes) > 0 {
			applied = append(applied, name)
		}
	}
	if len(applied) == 0 {
		return ""
	}
	slices.Sort(applied)
	nodes = maps.Clone(nodes)
	if nodes == nil {
		nodes = map[string]int{}
	}
	total := 0
	for _, n := range nodes {
		total += n
	}
	for _, c := range kept { // the same nodes as applied
		if cs := st.Clusters[c]; cs != nil {
			nodes[c] = len(cs.Nodes)
			total += len(cs.Nodes)
		}
	}
	if total == 0 {
		return fmt.Sprintf("removes every cluster's nodes (applied: %s)", strings.Join(applied, ", "))
	}
	var emptied []string
	for _, name := range applied {
		if n, ok := nodes[name]; ok && n == 0 {
			emptied = append(emptied, fmt.Sprintf("%s (%d applied)", name, len(st.Clusters[name].Nodes)))
		}
	}
	if len(emptied) == 0 {
		return ""
	}
	return "removes every node of cluster " + strings.Join(emptied, ", cluster ")
}
