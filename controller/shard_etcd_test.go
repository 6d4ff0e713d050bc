package controller_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/server"
	_ "github.com/fuelsync/fuelsync/server/prommetrics"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// shardRepo is a git repository of a generated configuration with six
// clusters, whose release every cluster uses.
func shardRepo(t *testing.T) (string, *git.Repository) {
	t.Helper()
	dir := t.TempDir()
	if err := repogen.WriteDir(repogen.Generate(repogen.Spec{Plugins: 2, Tasks: 60, Nodes: 24, Clusters: 6, Seed: 1}), dir); err != nil {
		t.Fatal(err)
	}
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	gittest.Commit(t, r, "generated")
	return dir, r
}

// releaseChange changes a task of the release that every cluster's
// controllers run: every cluster's artifacts change.
func releaseChange(t *testing.T, dir string, r *git.Repository, timeout string) string {
	t.Helper()
	name := filepath.Join(dir, "plugins", "gen-release", "graphs", "01-netconfig.yaml")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(data), "timeout: ")
	j := i + strings.Index(string(data[i:]), "\n")
	data = append(append(append([]byte{}, data[:i]...), "timeout: "+timeout...), data[j:]...)
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return gittest.Commit(t, r, "release timeout "+timeout)
}

func startShard(t *testing.T, c *etcdtest.Cluster, dir, id string) *testReplica {
	t.Helper()
	return startShardWith(t, c, dir, id, nil)
}

// startShardWith starts a shard replica; configure, when set, sets it up
// before it runs (its server listens already at tr.base).
func startShardWith(t *testing.T, c *etcdtest.Cluster, dir, id string, configure func(tr *testReplica, srv *server.Server)) *testReplica {
	t.Helper()
	w := etcdWorkdir(t, c, "shards", 2*time.Second, 5*time.Second)
	etcd := w.Backend
	logs := &controller.LogBuffer{}
	loop := &controller.Loop{Workdir: w, Source: &source.LocalSource{Path: dir}, ToolVersion: "test", Interval: time.Hour, Log: logs.Logger()}
	tr := &testReplica{id: id, w: w, loop: loop, outcomes: map[operation.Outcome]int{}, done: make(chan struct{}), logs: logs}
	tr.rep = controller.NewShard(loop, etcd.(state.Sharder), id)
	srv := server.New(loop, []byte("s3cret"))
	srv.Replica = tr.rep
	count := loop.OnReconcile
	loop.OnReconcile = func(o operation.Outcome, d time.Duration) {
		count(o, d)
		tr.mu.Lock()
		tr.outcomes[o]++
		tr.sequence = append(tr.sequence, o)
		tr.mu.Unlock()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	tr.base = "http://" + ln.Addr().String()
	tr.rep.AdvertiseURL = tr.base
	if configure != nil {
		configure(tr, srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tr.cancel = cancel
	go func() { tr.rep.Run(ctx); close(tr.done) }()
	t.Cleanup(func() { tr.stop(); hs.Close() })
	return tr
}

// clustersOf reads /api/v1/clusters of a replica.
func clustersOf(t *testing.T, tr *testReplica) []operation.ClusterInfo {
	t.Helper()
	code, body := tr.get(t, "/api/v1/clusters")
	var infos []operation.ClusterInfo
	if err := json.Unmarshal([]byte(body), &infos); code != 200 || err != nil {
		t.Fatalf("/api/v1/clusters of %s: %d %v\n%s", tr.id, code, err, body)
	}
	return infos
}

// synced says whether every cluster of the state on etcd is synced at rev,
// and each replica serves that state.
func synced(t *testing.T, reps []*testReplica, rev string, n int) bool {
	st, err := reps[0].w.Backend.ReadState(context.Background())
	if err != nil || len(st.Clusters) != n {
		return false
	}
	for _, cs := range st.Clusters {
		if cs.Revision != rev || cs.StatusOf() != state.StatusSynced {
			return false
		}
	}
	for _, r := range reps {
		if serving, problem := r.rep.Serving(); serving != st.Serial || problem != nil {
			return false
		}
	}
	return true
}

// Two shard replicas share six clusters: each cluster is applied by the
// replica rendezvous hashing gives it, and named its owner in both
// replicas' API and metrics; both serve every cluster, ready. A release
// change sent to one replica's webhook is applied by both owners, each its
// own clusters, and no cluster's update is lost. When one replica stops, the
// other takes its clusters over and applies the next change.
func TestEtcdShardsShareClusters(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, repo := shardRepo(t)
	head, _ := repo.Head()
	first := head.Hash().String()
	a := startShard(t, c, dir, "shard-a")
	b := startShard(t, c, dir, "shard-b")
	reps := []*testReplica{a, b}
	clusters := []string{"c-01", "c-02", "c-03", "c-04", "c-05", "c-06"}
	members := []string{"shard-a", "shard-b"}
	waitLong(t, 30*time.Second, "every cluster synced at the first commit, served by both", func() bool { return synced(t, reps, first, 6) })
	owners := map[string][]string{}
	assigned := controller.Assign(clusters, members)
	for _, cl := range clusters {
		o := assigned[cl]
		owners[o] = append(owners[o], cl)
	}
	if len(owners["shard-a"]) == 0 || len(owners["shard-b"]) == 0 {
		t.Fatalf("rendezvous gives every cluster to one replica: %v (pick other names)", owners)
	}
	// Every replica names each cluster's owner; each claimed only its own.
	for _, r := range reps {
		waitLong(t, 10*time.Second, "the owners named by "+r.id, func() bool {
			for _, info := range clustersOf(t, r) {
				if info.Owner != assigned[info.Name] {
					return false
				}
			}
			return true
		})
		// A replica that reconciled before the other joined claimed every
		// cluster, and gives the other's up at its next reconcile (the
		// members changed): wait for that, then each holds only its own.
		waitLong(t, 10*time.Second, "the clusters held by "+r.id, func() bool {
			return slices.Equal(r.status(t).Replica.Clusters, owners[r.id])
		})
		for _, cl := range owners[r.id] {
			if len(logged(t, r, "shard: cluster claimed", map[string]any{"cluster": cl})) == 0 {
				t.Errorf("%s never logged claiming its cluster %s", r.id, cl)
			}
		}
		st := r.status(t)
		if st.Replica.Role != controller.RoleShard || !slices.Equal(st.Replica.Members, members) || !slices.Equal(st.Replica.Clusters, owners[r.id]) {
			t.Errorf("status of %s: %+v; want role shard, members %v, clusters %v", r.id, *st.Replica, members, owners[r.id])
		}
		// The status page names each cluster's owner.
		if code, page := r.get(t, "/"); code != 200 || !strings.Contains(page, "<th>owner</th>") ||
			!strings.Contains(page, "<code>shard-a</code>") || !strings.Contains(page, "<code>shard-b</code>") {
			t.Errorf("the status page of %s (%d) names no owners:\n%s", r.id, code, page)
		}
		if code, body := r.get(t, "/readyz"); code != 200 {
			t.Errorf("/readyz of %s: %d %s", r.id, code, body)
		}
		_, metrics := r.get(t, "/metrics")
		for o, cls := range owners {
			if want := `fuelsync_replica_clusters{replica="` + o + `"} ` + strconv.Itoa(len(cls)); !strings.Contains(metrics, want) {
				t.Errorf("the metrics of %s lack %s", r.id, want)
			}
		}
	}
	// Both replicas serve the same bytes for every file of the state.
	st, _ := a.w.ReadState()
	for name := range st.Artifacts {
		if !strings.Contains(name, "/nodes/") || !strings.HasSuffix(name, ".yaml") {
			continue
		}
		for _, r := range reps {
			data, err := os.ReadFile(filepath.Join(r.w.SetDir(st.Serial), name))
			if err != nil || sha256hex(data) != st.Artifacts[name] {
				t.Fatalf("%s in %s's set: %v, not the state's digest", name, r.id, err)
			}
		}
	}

	// A release change, its webhook sent to shard-b: both owners apply.
	before := map[string]int{}
	for _, r := range reps {
		before[r.id] = r.count(operation.Applied)
	}
	second := releaseChange(t, dir, repo, "3601")
	if err := b.rep.Trigger(); err != nil {
		t.Fatal(err)
	}
	waitLong(t, 30*time.Second, "every cluster synced at the release change", func() bool { return synced(t, reps, second, 6) })
	for _, r := range reps {
		if n := r.count(operation.Applied) - before[r.id]; n < 1 {
			t.Errorf("%s applied %d times at the release change; want its own clusters applied", r.id, n)
		}
	}

	// shard-b stops (it leaves: its lease is revoked): shard-a owns every
	// cluster and applies the next change to all of them.
	b.stop()
	third := releaseChange(t, dir, repo, "3602")
	a.loop.Trigger()
	waitLong(t, 30*time.Second, "every cluster synced by shard-a alone", func() bool { return synced(t, reps[:1], third, 6) })
	for _, info := range clustersOf(t, a) {
		if info.Owner != "shard-a" {
			t.Errorf("cluster %s's owner after shard-b stopped: %q", info.Name, info.Owner)
		}
	}
}

func sha256hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// A cluster removed from the repository changes the shares. The reconciles
// of the removal still count it (it is applied until they delete it); at the
// next one, a remaining cluster whose owner the assignment changes is given
// up by its old owner and claimed by its new one (retrying while the old
// owner still holds it), the removed cluster's key is given up, and every
// remaining cluster is applied.
func TestEtcdShardsClusterRemovedMovesOwners(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, repo := shardRepo(t)
	members := []string{"shard-a", "shard-b"}
	all := []string{"c-01", "c-02", "c-03", "c-04", "c-05", "c-06"}
	before := controller.Assign(all, members)
	// A cluster whose removal moves another cluster to the other member.
	removed, moves := "", ""
	var rest []string
	for i, cl := range all {
		left := slices.Delete(slices.Clone(all), i, i+1)
		after := controller.Assign(left, members)
		for _, o := range left {
			if after[o] != before[o] {
				removed, moves, rest = cl, o, left
				break
			}
		}
		if removed != "" {
			break
		}
	}
	if removed == "" {
		t.Fatal("no removal of one of six clusters moves another between two members (pick other names)")
	}
	allowEmpty := func(tr *testReplica, _ *server.Server) { tr.loop.AllowEmpty = true }
	a := startShardWith(t, c, dir, "shard-a", allowEmpty)
	b := startShardWith(t, c, dir, "shard-b", allowEmpty)
	reps := []*testReplica{a, b}
	head, _ := repo.Head()
	waitLong(t, 30*time.Second, "every cluster synced at the first commit", func() bool { return synced(t, reps, head.Hash().String(), 6) })
	held := func(assign map[string]string) bool {
		for _, r := range reps {
			var want []string
			for _, cl := range slices.Sorted(maps.Keys(assign)) {
				if assign[cl] == r.id {
					want = append(want, cl)
				}
			}
			if !slices.Equal(r.status(t).Replica.Clusters, want) {
				return false
			}
		}
		return true
	}
	waitLong(t, 10*time.Second, "each replica holding its share of six", func() bool { return held(before) })

	if err := os.Remove(filepath.Join(dir, repogen.ClusterFile(slices.Index(all, removed)+1))); err != nil {
		t.Fatal(err)
	}
	third := gittest.Commit(t, repo, "remove "+removed)
	a.loop.Trigger()
	b.loop.Trigger()
	waitLong(t, 30*time.Second, removed+" removed", func() bool {
		st, err := a.w.Backend.ReadState(context.Background())
		return err == nil && st.Revision == third && len(st.Clusters) == 5
	})
	// The reconciles of the removal counted the removed cluster (still
	// applied) among the clusters; the next one moves the owners.
	after := controller.Assign(rest, members)
	defer func() {
		if t.Failed() {
			st, _ := a.w.ReadState()
			for _, cl := range slices.Sorted(maps.Keys(st.Clusters)) {
				t.Logf("%s: %s at %.12s", cl, st.Clusters[cl].StatusOf(), st.Clusters[cl].Revision)
			}
			for _, r := range reps {
				t.Logf("%s holds %v", r.id, r.status(t).Replica.Clusters)
				for _, l := range r.logs.Lines(t, "") {
					t.Logf("%s: %v", r.id, l)
				}
			}
		}
	}()
	fourth := releaseChange(t, dir, repo, "3601")
	a.loop.Trigger()
	b.loop.Trigger()
	waitLong(t, 30*time.Second, "every remaining cluster synced at the next change, "+moves+" moved from "+before[moves]+" to "+after[moves], func() bool {
		return synced(t, reps, fourth, 5) && held(after)
	})
}
