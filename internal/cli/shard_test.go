//go:build linux

package cli

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/base/failpoint"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/state"
)

// TestEtcdShardsOwnerKilled runs three `serve --shard` processes on one
// state on etcd (lease TTL 2s) sharing six clusters and, round after round,
// commits a change to one cluster and then SIGKILLs (odd rounds) or SIGSTOPs
// (even rounds) that cluster's owner 0-600ms later. Each time another
// replica takes the cluster over and applies the change within the lease
// TTL and a reconcile. A stopped owner, let run again afterwards, commits
// nothing of the cluster it lost (its record stays as the new owner wrote
// it) and joins again. Over the whole run the serials etcd recorded follow
// each other with no gap and no duplicate, and every cluster ends synced at
// its last change. 4 rounds; FUELSYNC_SHARD_KILLS=20 for more. The delay
// before the kill is at most FUELSYNC_SHARD_KILL_DELAY_MS (600; make takeover
// sets 0, so that the owner has not committed the change yet and every round
// is a takeover). The takeover times are summed up over every round and over
// the rounds whose owner was killed before its commit (the others' change
// was applied already).
func TestEtcdShardsOwnerKilled(t *testing.T) {
	rounds := 4
	if n, err := strconv.Atoi(os.Getenv("FUELSYNC_SHARD_KILLS")); err == nil && n > 0 {
		rounds = n
	}
	maxDelay := 600
	if n, err := strconv.Atoi(os.Getenv("FUELSYNC_SHARD_KILL_DELAY_MS")); err == nil && n >= 0 {
		maxDelay = n
	}
	c := etcdtest.Start(t, 1)
	url := c.URL("fuelsync/shards")
	dir, _, _, _ := applyRepoSpec(t, repogen.Spec{Plugins: 2, Tasks: 80, Nodes: 36, Clusters: 6, Seed: 3})
	if _, err := gitCommit(dir, "generated"); err != nil {
		t.Fatal(err)
	}
	cfg, e := openEtcdState(t, url, 5*time.Second)
	ctx := context.Background()

	args := []string{"--state", url, "--etcd-lock-ttl", "2s", "--repo", dir}
	replicas := map[string]*serveReplica{}
	for i := 1; i <= 3; i++ {
		r := &serveReplica{id: fmt.Sprintf("r%d", i), wd: filepath.Join(t.TempDir(), "wd"), args: args, shard: true}
		r.start(t)
		replicas[r.id] = r
	}
	t.Cleanup(func() {
		for _, r := range replicas {
			r.cmd.Process.Signal(syscall.SIGCONT)
			r.kill()
		}
	})
	waitState := func(what string, d time.Duration, cond func(*state.State) bool) *state.State {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			st, err := e.ReadState(ctx)
			if err == nil && cond(st) {
				return st
			}
			if time.Now().After(deadline) {
				serial := int64(-1)
				if st != nil {
					serial = st.Serial
				}
				t.Fatalf("after %s: %s (state at serial %d, %v)", d, what, serial, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The clusters whose spec is YAML, each changed in turn, of all six.
	var clusters, all []string
	for i := 1; i <= 6; i++ {
		all = append(all, fmt.Sprintf("c-%02d", i))
		if f := repogen.ClusterFile(i); filepath.Ext(f) == ".yaml" {
			clusters = append(clusters, fmt.Sprintf("c-%02d", i))
		}
	}
	st := waitState("all six clusters applied", 30*time.Second, func(st *state.State) bool {
		if len(st.Clusters) != 6 {
			return false
		}
		for _, cs := range st.Clusters {
			if cs.StatusOf() != state.StatusSynced {
				return false
			}
		}
		return true
	})
	t.Logf("six clusters applied by the shards: serial %d", st.Serial)

	var takeovers, beforeCommit []time.Duration
	lastRev := map[string]string{} // of each cluster changed
	var commits []string           // in order
	for round := 1; round <= rounds; round++ {
		cl := clusters[round%len(clusters)]
		// The cluster's owner (a replica back from the last round claims
		// its clusters at its first reconcile).
		var ownerID string
		deadline := time.Now().Add(20 * time.Second)
		for {
			owners, err := e.Owners(ctx)
			if err == nil && replicas[owners[cl]] != nil {
				ownerID = owners[cl]
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: cluster %s has no owner (%v, %v)", round, cl, owners, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		owner := replicas[ownerID]
		file := filepath.Join(dir, filepath.FromSlash(repogen.ClusterFile(clusterIndex(cl))))
		data, err := os.ReadFile(file)
		from, to := "common.debug.value: false", "common.debug.value: true"
		if bytes.Contains(data, []byte(to)) {
			from, to = to, from
		}
		if err != nil || !bytes.Contains(data, []byte(from)) {
			t.Fatalf("%s has no %q (%v)", file, from, err)
		}
		if err := os.WriteFile(file, bytes.Replace(data, []byte(from), []byte(to), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := gitCommit(dir, fmt.Sprintf("round %d: %s", round, to))
		if err != nil {
			t.Fatal(err)
		}
		lastRev[cl] = h.String()
		commits = append(commits, h.String())
		if maxDelay > 0 {
			time.Sleep(time.Duration(rand.IntN(maxDelay)) * time.Millisecond)
		}
		how := "SIGKILL"
		if round%2 == 0 {
			how = "SIGSTOP"
			owner.cmd.Process.Signal(syscall.SIGSTOP)
		} else {
			owner.kill()
		}
		killed := time.Now()
		before := "before its commit"
		if st, err := e.ReadState(ctx); err == nil && st.Clusters[cl] != nil && st.Clusters[cl].Revision == h.String() {
			before = "after its commit"
		}
		st = waitState(fmt.Sprintf("round %d: %s's change applied after its owner %s got %s", round, cl, ownerID, how), 20*time.Second, func(st *state.State) bool {
			cs := st.Clusters[cl]
			return cs != nil && cs.Revision == h.String() && cs.StatusOf() == state.StatusSynced
		})
		took := time.Since(killed)
		takeovers = append(takeovers, took)
		if before == "before its commit" {
			beforeCommit = append(beforeCommit, took)
		}
		now, _ := e.Owners(ctx)
		t.Logf("round %d: %s of %s's owner %s %s; %s applied it %s after, serial %d",
			round, how, cl, ownerID, before, now[cl], took.Round(time.Millisecond), st.Serial)
		if took > 2*time.Second+5*time.Second {
			t.Errorf("round %d: the takeover took %s; want within the lease TTL (2s) and a reconcile", round, took)
		}
		if how == "SIGSTOP" {
			// The paused owner runs again: it lost the cluster while it
			// was stopped, and commits nothing of it.
			record := *st.Clusters[cl]
			lines := owner.logLines()
			owner.cmd.Process.Signal(syscall.SIGCONT)
			deadline := time.Now().Add(20 * time.Second)
			for {
				rs, err := owner.status()
				if err == nil && rs.Role == controller.RoleShard && len(rs.Members) == 3 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: %s did not join again after SIGCONT: %+v, %v", round, ownerID, rs, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			// Its reconcile under way, if any, ends: it or the next one
			// logs its outcome.
			if !owner.waitLogged(reconcileLine, lines) {
				t.Fatalf("round %d: %s logged no reconcile after SIGCONT", round, ownerID)
			}
			if st, err := e.ReadState(ctx); err != nil || st.Clusters[cl].Serial != record.Serial {
				t.Errorf("round %d: cluster %s changed after %s ran again: %+v (was %+v), %v", round, cl, ownerID, st.Clusters[cl], record, err)
			}
		} else {
			owner.start(t)
		}
		// Every replica is a member again before the next round.
		deadline = time.Now().Add(20 * time.Second)
		for {
			ms, err := e.Members(ctx)
			if err == nil && len(ms) == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: members %v, %v; want all three", round, ms, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// Every cluster ends synced at its last change or later, each owned by its
	// assigned owner.
	members := []string{"r1", "r2", "r3"}
	defer func() {
		if t.Failed() {
			owners, _ := e.Owners(ctx)
			ms, _ := e.Members(ctx)
			st, _ := e.ReadState(ctx)
			for _, cl := range slices.Sorted(maps.Keys(st.Clusters)) {
				cs := st.Clusters[cl]
				t.Logf("%s: %s at %.12s (last change %.12s), owner %q, assigned %s of %v", cl, cs.StatusOf(), cs.Revision, lastRev[cl], owners[cl], controller.Assign(all, ms)[cl], ms)
			}
			for _, id := range slices.Sorted(maps.Keys(replicas)) {
				r := replicas[id]
				r.logMu.Lock()
				for _, l := range r.logs {
					if strings.Contains(l, "shard:") {
						t.Logf("%s: %s", id, l)
					}
				}
				r.logMu.Unlock()
			}
		}
	}()
	st = waitState("every cluster synced at its last change, owned by its assigned owner", 30*time.Second, func(st *state.State) bool {
		for name, cs := range st.Clusters {
			// At its last change, or a later commit (a later apply
			// records the revision of the clusters it keeps).
			if cs.StatusOf() != state.StatusSynced || slices.Index(commits, cs.Revision) < slices.Index(commits, lastRev[name]) {
				return false
			}
		}
		owners, _ := e.Owners(ctx)
		assigned := controller.Assign(all, members)
		for _, cl := range clusters {
			if owners[cl] != assigned[cl] {
				return false
			}
		}
		return true
	})
	// The serials etcd recorded, in order, from the first.
	checkSerialsGapless(t, c.Endpoints(), cfg.Prefix, st.Serial)
	for _, ds := range []struct {
		what string
		d    []time.Duration
	}{{"owner kills and stops", takeovers}, {"of them before the owner's commit", beforeCommit}} {
		if len(ds.d) == 0 {
			t.Logf("takeover over 0 %s", ds.what)
			continue
		}
		slices.Sort(ds.d)
		t.Logf("takeover over %d %s (lease TTL 2s): median %s, max %s", len(ds.d), ds.what, ds.d[len(ds.d)/2].Round(time.Millisecond), ds.d[len(ds.d)-1].Round(time.Millisecond))
	}
}

// clusterIndex is i of the generated cluster c-0i.
func clusterIndex(name string) int {
	n, _ := strconv.Atoi(name[2:])
	return n
}

// TestEtcdShardsPausedOwnerCommitRefused pauses a cluster's owner between
// its plan and its commit (the failpoint controller/shard-commit=pause(DIR)),
// stops it there with SIGSTOP until its lease expires and the other replica has
// taken the cluster over and applied the change, then lets it go on: its
// late commit is refused (the owner key is no longer on its lease), and the
// cluster's record stays as the new owner committed it.
func TestEtcdShardsPausedOwnerCommitRefused(t *testing.T) {
	requireTestHooks(t) // the pause is a failpoint
	c := etcdtest.Start(t, 1)
	url := c.URL("fuelsync/paused")
	dir, _, _, _ := applyRepoSpec(t, repogen.Spec{Plugins: 2, Tasks: 40, Nodes: 12, Clusters: 4, Seed: 5})
	if _, err := gitCommit(dir, "generated"); err != nil {
		t.Fatal(err)
	}
	_, e := openEtcdState(t, url, 5*time.Second)
	ctx := context.Background()
	args := []string{"--state", url, "--etcd-lock-ttl", "2s", "--repo", dir}
	replicas := map[string]*serveReplica{}
	hooks := map[string]string{}
	for i := 1; i <= 2; i++ {
		id := fmt.Sprintf("r%d", i)
		hooks[id] = t.TempDir()
		r := &serveReplica{id: id, wd: filepath.Join(t.TempDir(), "wd"), args: args, shard: true, env: []string{failpoint.EnvVar + "=" + failpoint.ShardCommit + "=pause(" + hooks[id] + ")"}}
		r.start(t)
		replicas[id] = r
	}
	t.Cleanup(func() {
		for _, r := range replicas {
			r.cmd.Process.Signal(syscall.SIGCONT)
			r.kill()
		}
	})
	waitState := func(what string, cond func(*state.State) bool) *state.State {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			st, err := e.ReadState(ctx)
			if err == nil && cond(st) {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("after 30s: %s (%v)", what, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitState("all four clusters applied", func(st *state.State) bool {
		if len(st.Clusters) != 4 {
			return false
		}
		for _, cs := range st.Clusters {
			if cs.StatusOf() != state.StatusSynced {
				return false
			}
		}
		return true
	})
	var cl string
	for i := 1; i <= 4 && cl == ""; i++ {
		if filepath.Ext(repogen.ClusterFile(i)) == ".yaml" {
			cl = fmt.Sprintf("c-%02d", i)
		}
	}
	owners, err := e.Owners(ctx)
	if err != nil || replicas[owners[cl]] == nil {
		t.Fatalf("cluster %s has no owner: %v, %v", cl, owners, err)
	}
	ownerID := owners[cl]
	owner := replicas[ownerID]
	// The owner pauses before its next commit: the change of cl.
	if err := os.WriteFile(filepath.Join(hooks[ownerID], "arm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, filepath.FromSlash(repogen.ClusterFile(clusterIndex(cl))))
	data, err := os.ReadFile(file)
	if err != nil || !bytes.Contains(data, []byte("common.debug.value: false")) {
		t.Fatalf("%s: %v", file, err)
	}
	if err := os.WriteFile(file, bytes.Replace(data, []byte("common.debug.value: false"), []byte("common.debug.value: true"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := gitCommit(dir, "debug on")
	if err != nil {
		t.Fatal(err)
	}
	paused := filepath.Join(hooks[ownerID], "paused")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got, err := os.ReadFile(paused); err == nil {
			if !strings.Contains(string(got), cl) {
				t.Fatalf("%s paused before a commit of %q; want one of %s", ownerID, got, cl)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not pause before its commit of %s", ownerID, cl)
		}
		time.Sleep(20 * time.Millisecond)
	}
	owner.cmd.Process.Signal(syscall.SIGSTOP)
	st := waitState(cl+"'s change applied by the other replica", func(st *state.State) bool {
		cs := st.Clusters[cl]
		return cs != nil && cs.Revision == h.String() && cs.StatusOf() == state.StatusSynced
	})
	record := *st.Clusters[cl]
	now, _ := e.Owners(ctx)
	if now[cl] == ownerID || now[cl] == "" {
		t.Fatalf("cluster %s is owned by %q after %s's lease expired", cl, now[cl], ownerID)
	}
	// The paused owner goes on to its commit.
	if err := os.Remove(paused); err != nil {
		t.Fatal(err)
	}
	owner.cmd.Process.Signal(syscall.SIGCONT)
	want := "no longer owns cluster " + cl
	deadline = time.Now().Add(20 * time.Second)
	for !owner.logged(want) {
		if time.Now().After(deadline) {
			t.Errorf("%s did not log %q after it ran again", ownerID, want)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Its next reconcile (every interval, skipped or not) ends too.
	if !owner.waitLogged(reconcileLine, owner.logLines()) {
		t.Errorf("%s logged no reconcile after its refused commit", ownerID)
	}
	if st, err := e.ReadState(ctx); err != nil || st.Clusters[cl].Serial != record.Serial {
		t.Errorf("cluster %s changed after its paused owner %s ran again: %+v (was %+v), %v", cl, ownerID, st.Clusters[cl], record, err)
	}
}
