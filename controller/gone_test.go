package controller_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
)

// A replica that leads with an empty work directory after the applied
// revision left git (history rewritten, the old commits collected) reconciles
// the new HEAD anyway: it cannot make the applied set again, so it plans
// against the state's digests and publishes a whole new set. It was stuck for
// good: every reconcile failed "reading the applied revision".
func TestEtcdAppliedRevisionGone(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, _ := gittest.Quickstart(t)
	a := startReplica(t, c, dir, "replica-a", nil)
	waitLong(t, 10*time.Second, "serial 1 applied", func() bool { return a.count(operation.Applied) == 1 })
	gone := a.loop.Status().Applied
	a.stop()

	// History rewritten: a new repository with one commit, the old one gone.
	if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "node-4: {id: 4, roles: [compute]}", "node-4: {id: 4, roles: [compute, storage]}")
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	head := gittest.Commit(t, r, "history rewritten")
	if _, err := r.CommitObject(plumbing.NewHash(gone)); err == nil {
		t.Fatalf("the applied commit %s is still there", gone)
	}

	b := startReplicaOn(t, etcdWorkdir(t, c, "replicas", 2*time.Second, 5*time.Second), dir, "replica-b", nil, "test")
	waitLong(t, 20*time.Second, "the new HEAD applied by the new leader", func() bool { return b.loop.Status().Applied == head })
	st, err := b.w.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	if st.Serial != 2 || st.Revision != head {
		t.Fatalf("the state: serial %d revision %s, want 2 %s", st.Serial, st.Revision, head)
	}
	// The whole set is in the new leader's work directory, and it serves it.
	for name := range st.Artifacts {
		if _, err := os.Stat(filepath.Join(b.w.SetDir(st.Serial), filepath.FromSlash(name))); err != nil {
			t.Errorf("the new set lacks %s: %v", name, err)
		}
	}
	gittest.WaitFor(t, "the new leader ready", func() bool { code, _ := b.get(t, "/readyz"); return code == 200 })
	if cs := st.Clusters["demo-hcl"]; cs == nil || cs.Revision != head || len(cs.Nodes) != 6 {
		t.Errorf("cluster demo-hcl: %+v", cs)
	}
}
