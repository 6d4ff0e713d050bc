package render

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// ViewDigest identifies the expanded view of node file name in the artifact set
// whose digests are a: the node file's own digest in the expanded layout (format
// 1, where the file is the view); in the stored layout, a digest of the digests
// of what the view is computed from (the node file and its graph's task
// catalogue; for sync, every node file of the graph and cluster.yaml too), so
// that it changes whenever the view does. ok is false when there is no such file.
func ViewDigest(a map[string]string, name string) (string, bool) {
	sum, ok := a[name]
	if !ok {
		return "", false
	}
	parts := strings.Split(name, "/")
	if len(parts) != 4 || parts[1] != "nodes" {
		return sum, true
	}
	cluster, node, graph := parts[0], parts[2], strings.TrimSuffix(parts[3], ".yaml")
	catalogue, ok := a[CataloguePath(cluster, graph)]
	if !ok {
		return sum, true // format 1
	}
	inputs := []string{name + " " + sum, "catalogue " + catalogue}
	if node == SyncNode {
		inputs = append(inputs, "cluster "+a[cluster+"/cluster.yaml"])
		prefix, suffix := cluster+"/nodes/", "/"+parts[3]
		for file, digest := range a {
			if rest, ok := strings.CutPrefix(file, prefix); ok && strings.HasSuffix(rest, suffix) && strings.Count(rest, "/") == 1 {
				inputs = append(inputs, file+" "+digest)
			}
		}
		slices.Sort(inputs[3:])
	}
	h := sha256.Sum256([]byte(strings.Join(inputs, "\n")))
	return "view-" + hex.EncodeToString(h[:]), true
}
