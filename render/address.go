package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fuelsync/fuelsync/base/names"
)

// YAML is the format of the node files fuelsync writes, the only one an
// Address has today.
const YAML = "yaml"

// addressFormats are the formats ParseAddress accepts.
var addressFormats = []string{YAML}

// nodesSegment is the directory of a cluster's node directories.
const nodesSegment = "nodes"

// Address is the address of a node's graph file in an artifact set:
// <cluster>/nodes/<node>/<graph>.<format> (docs/artifact-format.md). Every
// piece of code that builds or reads such a name goes through it.
type Address struct {
	Cluster, Node, Graph string
	// Format is the file's format, YAML.
	Format string
}

// NodeAddress is the address of node's file of graph type graph in cluster,
// in the format fuelsync writes (YAML).
func NodeAddress(cluster, node, graph string) Address {
	return Address{Cluster: cluster, Node: node, Graph: graph, Format: YAML}
}

// String is the address as an artifact name (a slash-separated path).
func (a Address) String() string {
	return NodeDir(a.Cluster, a.Node) + "/" + a.Graph + "." + a.Format
}

// NodesDir is the directory of cluster's node directories, <cluster>/nodes.
func NodesDir(cluster string) string { return cluster + "/" + nodesSegment }

// NodeDir is the directory of node's files in cluster, <cluster>/nodes/<node>.
func NodeDir(cluster, node string) string { return NodesDir(cluster) + "/" + node }

// ParseAddress reads an artifact name of exactly the shape
// <cluster>/nodes/<node>/<graph>.<format>, with valid names (base/names;
// a graph's name may hold dots: the format follows the last one) and a
// format ParseAddress knows. Anything else is an error.
func ParseAddress(s string) (Address, error) {
	cluster, rest, _ := strings.Cut(s, "/")
	seg, rest, _ := strings.Cut(rest, "/")
	node, file, ok := strings.Cut(rest, "/")
	if !ok || seg != nodesSegment || strings.Contains(file, "/") {
		return Address{}, fmt.Errorf("%q is not a node's file <cluster>/nodes/<node>/<graph>.<format>", s)
	}
	dot := strings.LastIndexByte(file, '.')
	if dot < 0 {
		return Address{}, fmt.Errorf("%q: the file %q has no format", s, file)
	}
	a := Address{Cluster: cluster, Node: node, Graph: file[:dot], Format: file[dot+1:]}
	if !slices.Contains(addressFormats, a.Format) {
		return Address{}, fmt.Errorf("%q: the format %q is not one of %s", s, a.Format, strings.Join(addressFormats, ", "))
	}
	for _, n := range [...]struct{ what, name string }{{"cluster", a.Cluster}, {"node", a.Node}, {"graph", a.Graph}} {
		if !names.Valid(n.name) {
			return Address{}, fmt.Errorf("%q: the %s name %q does not match %s (at most %d bytes)", s, n.what, n.name, names.Pattern, names.MaxLength)
		}
	}
	return a, nil
}

// ParseNodeDir reads a node's directory of exactly the shape
// <cluster>/nodes/<node>, with valid names; ok is false for anything else.
func ParseNodeDir(dir string) (cluster, node string, ok bool) {
	parts := strings.Split(dir, "/")
	if len(parts) != 3 || parts[1] != nodesSegment || !names.Valid(parts[0]) || !names.Valid(parts[2]) {
		return "", "", false
	}
	return parts[0], parts[2], true
}
