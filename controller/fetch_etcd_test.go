package controller_test

import (
	"bufio"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/server"
	"github.com/fuelsync/fuelsync/state"
)

// renderCount counts the clusters each replica renders, by replica.
type renderCount struct {
	mu sync.Mutex
	by map[string]map[string]int
}

func (rc *renderCount) hook(id string) func([]string) {
	return func(clusters []string) {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if rc.by[id] == nil {
			rc.by[id] = map[string]int{}
		}
		for _, c := range clusters {
			rc.by[id][c]++
		}
	}
}

// reset forgets the counts and returns them, sorted names by replica.
func (rc *renderCount) reset() map[string][]string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := map[string][]string{}
	for id, m := range rc.by {
		out[id] = slices.Sorted(maps.Keys(m))
	}
	rc.by = map[string]map[string]int{}
	return out
}

// checkServes asserts that r's set of st's serial holds every file of st at
// its committed digest.
func checkServes(t *testing.T, r *testReplica, st *state.State) {
	t.Helper()
	for name, sum := range st.Artifacts {
		data, err := os.ReadFile(filepath.Join(r.w.SetDir(st.Serial), filepath.FromSlash(name)))
		if err != nil || sha256hex(data) != sum {
			t.Fatalf("%s in %s's set of serial %d: %v, not the committed digest", name, r.id, st.Serial, err)
		}
	}
}

// Three shard replicas with an API token: after a release change (every
// cluster's files change), each replica has rendered only the clusters it
// owns, and fetched the others' files from their owners; every replica
// serves every cluster's files at the committed digests.
func TestEtcdShardsFetchOthersFiles(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, repo := shardRepo(t)
	counts := &renderCount{by: map[string]map[string]int{}}
	withToken := func(tr *testReplica, srv *server.Server) {
		srv.APIToken, tr.rep.APIToken = []byte("t0ken"), []byte("t0ken")
		controller.SetOnRender(tr.loop, counts.hook(tr.id))
	}
	ids := []string{"shard-a", "shard-b", "shard-c"}
	var reps []*testReplica
	for _, id := range ids {
		reps = append(reps, startShardWith(t, c, dir, id, withToken))
	}
	head, _ := repo.Head()
	waitLong(t, 60*time.Second, "every cluster synced at the first commit, served by all", func() bool { return synced(t, reps, head.Hash().String(), 6) })
	owners := map[string][]string{}
	all := []string{"c-01", "c-02", "c-03", "c-04", "c-05", "c-06"}
	assigned := controller.Assign(all, ids)
	for _, cl := range all {
		o := assigned[cl]
		owners[o] = append(owners[o], cl)
	}
	counts.reset()
	before := map[string]int{}
	for _, r := range reps {
		before[r.id] = len(logged(t, r, "shard: fetched the other owners' clusters", nil))
	}

	second := releaseChange(t, dir, repo, "3601")
	for _, r := range reps {
		r.loop.Trigger()
	}
	waitLong(t, 60*time.Second, "every cluster synced at the release change, served by all", func() bool { return synced(t, reps, second, 6) })
	rendered := counts.reset()
	st, err := reps[0].w.Backend.ReadState(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if !slices.Equal(rendered[r.id], owners[r.id]) {
			t.Errorf("%s rendered %v at the release change; want only its own clusters %v", r.id, rendered[r.id], owners[r.id])
		}
		fetches := logged(t, r, "shard: fetched the other owners' clusters", nil)[before[r.id]:]
		if len(fetches) == 0 {
			t.Errorf("%s fetched no other owner's clusters", r.id)
		}
		// Only the files it lacked: fewer bytes than the clusters' files.
		for _, rec := range fetches {
			var all int
			for _, cl := range rec["clusters"].([]any) {
				for name := range st.Artifacts {
					if state.ClusterOf(name) == cl {
						data, err := fs.ReadFile(r.w.SetFS(st.Serial), name)
						if err != nil {
							t.Fatal(err)
						}
						all += len(data)
					}
				}
			}
			if got := int(rec["bytes"].(float64)); got <= 0 || got >= all {
				t.Errorf("%s fetched %d bytes of %v at the release change; want more than none, less than all their files' %d", r.id, got, rec["clusters"], all)
			}
		}
		checkServes(t, r, st)
	}
	// The objects need the API token.
	resp, err := http.Post(reps[0].base+"/api/v1/objects", "text/plain", strings.NewReader(st.Artifacts["manifest.json"]+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /api/v1/objects without the token: %s; want 401", resp.Status)
	}
}

// A hostile owner: shard-a advertises a server that answers with its files
// as shard-a holds them, one byte changed. shard-b refuses that file (its
// sha256 is not the committed digest), says why, renders shard-a's clusters
// itself, and serves every cluster at the committed digests.
func TestEtcdShardsRefuseWrongFile(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, repo := shardRepo(t)
	counts := &renderCount{by: map[string]map[string]int{}}
	hostile := func(tr *testReplica, srv *server.Server) {
		controller.SetOnRender(tr.loop, counts.hook(tr.id))
		w := tr.w
		hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			sc := bufio.NewScanner(r.Body)
			first := true
			for sc.Scan() {
				sum := strings.TrimSpace(sc.Text())
				data, err := w.ReadObject(sum)
				if err != nil {
					http.Error(rw, err.Error(), http.StatusNotFound)
					return
				}
				if first {
					data = append([]byte{}, data...)
					data[len(data)/2] ^= 1
					first = false
				}
				fmt.Fprintf(rw, "%s %d\n", sum, len(data))
				rw.Write(data)
			}
		}))
		t.Cleanup(hs.Close)
		tr.rep.AdvertiseURL = hs.URL
	}
	a := startShardWith(t, c, dir, "shard-a", hostile)
	b := startShardWith(t, c, dir, "shard-b", func(tr *testReplica, srv *server.Server) {
		controller.SetOnRender(tr.loop, counts.hook(tr.id))
	})
	reps := []*testReplica{a, b}
	head, _ := repo.Head()
	waitLong(t, 60*time.Second, "every cluster synced at the first commit, served by both", func() bool { return synced(t, reps, head.Hash().String(), 6) })
	var ofA []string
	all := []string{"c-01", "c-02", "c-03", "c-04", "c-05", "c-06"}
	assigned := controller.Assign(all, []string{"shard-a", "shard-b"})
	for _, cl := range all {
		if assigned[cl] == "shard-a" {
			ofA = append(ofA, cl)
		}
	}
	counts.reset()
	second := releaseChange(t, dir, repo, "3601")
	a.loop.Trigger()
	b.loop.Trigger()
	waitLong(t, 60*time.Second, "every cluster synced at the release change, served by both", func() bool { return synced(t, reps, second, 6) })
	rendered := counts.reset()
	refused := logged(t, b, "shard: fetching a cluster's files from its owner failed; rendering them", map[string]any{"owner": "shard-a"})
	if len(refused) == 0 {
		t.Fatal("shard-b did not refuse shard-a's wrong file")
	}
	if msg, _ := refused[0]["error"].(string); !strings.Contains(msg, "does not match the committed digest") {
		t.Errorf("shard-b refused shard-a's files for %q; want a digest mismatch", msg)
	}
	for _, cl := range ofA {
		if !slices.Contains(rendered["shard-b"], cl) {
			t.Errorf("shard-b did not render shard-a's cluster %s (rendered %v)", cl, rendered["shard-b"])
		}
	}
	st, err := b.w.Backend.ReadState(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	checkServes(t, b, st)
	checkServes(t, a, st)
}
