package render

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
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
	addr, err := ParseAddress(name)
	if err != nil {
		return sum, true
	}
	cluster, node, graph := addr.Cluster, addr.Node, addr.Graph
	catalogue, ok := a[CataloguePath(cluster, graph)]
	if !ok {
		return sum, true // format 1
	}
	inputs := []string{name + " " + sum, "catalogue " + catalogue}
	if node == SyncNode {
		inputs = append(inputs, "cluster "+a[cluster+"/cluster.yaml"])
		prefix := NodesDir(cluster) + "/"
		for file, digest := range a {
			if !strings.HasPrefix(file, prefix) {
				continue // most files, passed over before they are parsed
			}
			if other, err := ParseAddress(file); err == nil && other.Graph == graph && other.Format == addr.Format {
				inputs = append(inputs, file+" "+digest)
			}
		}
		slices.Sort(inputs[3:])
	}
	h := sha256.Sum256([]byte(strings.Join(inputs, "\n")))
	return "view-" + hex.EncodeToString(h[:]), true
}

// GraphDigest identifies a node's own graph, node file name of the artifact set
// fsys whose digests are a: unlike ViewDigest, which covers the graph's whole
// task catalogue, it covers only what the node's expanded view is computed from
// (the node file, and the catalogue entries of its own tasks: their condition,
// dynamic_requires, parameters and type), so that a change to another node's
// tasks leaves it as it was. A node has converged when it ran the graph of
// this digest. For the sync node (whose view reads every node file of the
// graph), a file of the expanded layout (format 1) and any other file, it is
// ViewDigest. Files are checked against a as they are read; the result is
// kept by the digests of the node file and its catalogue, so that asking again
// reads nothing.
func GraphDigest(fsys fs.FS, a map[string]string, name string) (string, error) {
	view, ok := ViewDigest(a, name)
	if !ok {
		return "", fs.ErrNotExist
	}
	addr, err := ParseAddress(name)
	if !strings.HasPrefix(view, "view-") || err != nil || addr.Node == SyncNode {
		return view, nil
	}
	cluster, graph := addr.Cluster, addr.Graph
	catName := CataloguePath(cluster, graph)
	key := sha256.Sum256([]byte(name + "\n" + a[name] + "\n" + a[catName]))
	gd := &graphDigests
	gd.Lock()
	d, ok := gd.m[key]
	gd.Unlock()
	if ok {
		return d, nil
	}
	data, err := readChecked(fsys, name, a[name])
	if err != nil {
		return "", err
	}
	nf, ok := ScanNodeFile(data)
	if !ok {
		if nf, err = ParseNodeFile(data); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
	}
	catData, err := readChecked(fsys, catName, a[catName])
	if err != nil {
		return "", err
	}
	cat, err := parsedCatalogue(catData)
	if err != nil {
		return "", fmt.Errorf("%s: %w", catName, err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s\n", name, a[name])
	for _, t := range nf.Tasks {
		ent := cat.entries[t.ID]
		if t.def != nil || ent == nil {
			continue // an inline definition is the node file's; a missing one an error of the view
		}
		fmt.Fprintf(h, "%s %d %d %d\n", t.ID, len(ent.before), len(ent.params), len(ent.typ))
		h.Write(ent.before)
		h.Write(ent.params)
		h.Write(ent.typ)
	}
	d = "graph-" + hex.EncodeToString(h.Sum(nil))
	gd.Lock()
	if gd.m == nil || len(gd.m) >= maxGraphDigests {
		gd.m = map[[sha256.Size]byte]string{} // start over: a new applied set fills it again
	}
	gd.m[key] = d
	gd.Unlock()
	return d, nil
}

// graphDigests keeps GraphDigest's results by the digest of the node file's
// name, its digest and its catalogue's digest.
var graphDigests struct {
	sync.Mutex
	m map[[sha256.Size]byte]string
}

// maxGraphDigests bounds graphDigests (about 150 bytes an entry): every
// node's graphs in a fleet of 20,000 nodes with four graph types.
const maxGraphDigests = 1 << 17

// readChecked reads file name of fsys, which must have the sha256 sum.
func readChecked(fsys fs.FS, name, sum string) ([]byte, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != sum {
		return nil, fmt.Errorf("%s does not match its digest: the artifact set was changed", name)
	}
	return data, nil
}
