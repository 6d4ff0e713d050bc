package gittest

import (
	"path/filepath"
	"testing"

	git "github.com/go-git/go-git/v5"

	"github.com/fuelsync/fuelsync/internal/repogen"
)

// ReleaseChange commits into dir a small fleet of the repogen heavy shape (4
// clusters of 100 nodes, ReleaseChangeSpec: large enough that the renders of
// its clusters, rather than the loaded repository, decide the peak of the
// heap) as revA, then a change to the
// release as revD: hiera's timeout, and hiera runs on every node, so every
// node of every cluster changes. The memory tests of a release change use it.
func ReleaseChange(t testing.TB, dir string) (revA, revD string) {
	t.Helper()
	if err := repogen.WriteDir(repogen.Generate(ReleaseChangeSpec), dir); err != nil {
		t.Fatal(err)
	}
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	revA = Commit(t, repo, "generated")
	EditFile(t, filepath.Join(dir, "plugins", repogen.ReleasePlugin, "graphs", "00-stages.yaml"), "timeout: 120\n", "timeout: 121\n")
	revD = Commit(t, repo, "release: hiera's timeout")
	return revA, revD
}

// ReleaseChangeSpec is the fleet ReleaseChange generates.
var ReleaseChangeSpec = repogen.Spec{Plugins: 11, Tasks: 1000, Nodes: 400, Clusters: 4, Seed: 1, CrossDepends: 60, StageFanIn: true}
