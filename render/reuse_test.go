package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"slices"
	"testing"

	"github.com/fuelsync/fuelsync/loader"
)

// TestManifestOfKeptClusters: the manifest made from the digests of a whole
// artifact set is the one Stream writes, and the models of clusters built
// alone are those of a full render.
func TestManifestOfKeptClusters(t *testing.T) {
	repo, diags := loader.Load(os.DirFS("../examples/quickstart"), loader.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	rs, diags := Render(repo, Options{})
	if diags.HasErrors() || len(rs) < 2 {
		t.Fatalf("render: %d clusters, %v", len(rs), diags)
	}
	files, err := Files(rs, "rev1", "v1")
	if err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	for name, data := range files {
		sum := sha256.Sum256(data)
		digests[name] = hex.EncodeToString(sum[:])
	}
	got, err := Manifest(digests, "rev1", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, files["manifest.json"]) {
		t.Errorf("Manifest:\n%s\nStream's manifest.json:\n%s", got, files["manifest.json"])
	}
	if other, _ := Manifest(digests, "rev2", "v1"); bytes.Equal(other, got) {
		t.Error("another revision: the same manifest")
	}

	name := rs[1].Model.Cluster.Name
	ms, diags := Models(repo, []string{name}, Options{})
	if diags.HasErrors() || len(ms) != 1 || ms[0].Cluster.Name != name {
		t.Fatalf("Models(%s): %d models, %v", name, len(ms), diags)
	}
	for node, nt := range rs[1].Model.NodeTags {
		mt := ms[0].NodeTags[node]
		if mt == nil || !slices.Equal(mt.Roles, nt.Roles) || !slices.Equal(mt.Resolution, nt.Resolution) || !slices.Equal(mt.Primary, nt.Primary) {
			t.Errorf("node %s: model alone %+v, in the render %+v", node, mt, nt)
		}
	}
}
