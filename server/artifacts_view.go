package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/state"
)

// The artifact API serves a node's graph as its expanded view (every task's
// definition inline, the stages' requirements in full), computed from the
// applied set: in the stored layout (format 2) a node file refers to its
// cluster's task catalogue, and the sync node's stages leave out what the
// catalogue implies.

// viewDigest is render.ViewDigest: it identifies the expanded view of node
// file name in the artifact set whose digests are a.
func viewDigest(a map[string]string, name string) (string, bool) { return render.ViewDigest(a, name) }

// expandedGraph returns the expanded view of node file name of the applied set
// set (SetFS), whose digests are a: every file it is computed from is checked
// against its digest as it is read.
func expandedGraph(set fs.FS, a map[string]string, name string) ([]byte, error) {
	addr, err := render.ParseAddress(name)
	if err != nil {
		return nil, fmt.Errorf("%s is not a node's graph", name)
	}
	return render.ExpandNode(verifiedFS{set, a}, addr.Cluster, addr.Node, addr.Graph)
}

// verifiedFS reads the files of an applied set, each checked against the digest
// the state records for it: a file changed by hand is an error, never served.
type verifiedFS struct {
	fs.FS
	digests map[string]string
}

// ReadDir lists a directory of the set as the set's file system does (a node
// directory linked to a tree is a directory).
func (v verifiedFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(v.FS, name) }

func (v verifiedFS) ReadFile(name string) ([]byte, error) {
	data, err := fs.ReadFile(v.FS, name)
	if err != nil {
		return nil, err
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != v.digests[name] {
		return nil, fmt.Errorf("the applied artifact %s does not match the state's digest: the work directory was changed by hand", name)
	}
	return data, nil
}

// viewOf is viewDigest of st's artifacts ("" when there is no such file).
func viewOf(st *state.State, name string) string {
	d, _ := viewDigest(st.Artifacts, name)
	return d
}
