package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/state"
)

// serveReplica is one `fuelsync serve` process of a replica set.
type serveReplica struct {
	id, wd string
	args   []string
	shard  bool     // serve --shard
	env    []string // more environment
	cmd    *exec.Cmd
	// logMu guards logs, the lines the process logged.
	logMu  sync.Mutex
	logs   []string
	base   string
	exited chan struct{}
}

func (r *serveReplica) start(t testing.TB) {
	t.Helper()
	args := append(slices.Clone(r.args), "--workdir", r.wd, "serve", "--replica-id", r.id, "--listen", "127.0.0.1:0", "--log-format", "json", "--interval", "2s")
	if r.shard {
		args = append(args, "--shard")
	}
	cmd := fuelsyncCmd(args...)
	cmd.Env = append(cmd.Env, r.env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.cmd, r.exited = cmd, make(chan struct{})
	r.base = "http://" + serveAddr(t, stderr, 10*time.Second, func(line string) {
		r.logMu.Lock()
		r.logs = append(r.logs, line)
		r.logMu.Unlock()
	}, func() {
		cmd.Wait()
		close(r.exited)
	})
}

// logged says whether the process logged a line that contains s.
func (r *serveReplica) logged(s string) bool {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return slices.ContainsFunc(r.logs, func(l string) bool { return strings.Contains(l, s) })
}

// logLines is the number of lines the process logged so far.
func (r *serveReplica) logLines() int {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	return len(r.logs)
}

// reconcileLine is in the line the loop logs at the end of each reconcile,
// skipped ones included (controller's logOutcome, --log-format json).
const reconcileLine = `"msg":"reconcile",`

// waitLogged waits up to 20 s for the process to log a line that contains s
// after its first from lines, and says whether it did.
func (r *serveReplica) waitLogged(s string, from int) bool {
	deadline := time.Now().Add(20 * time.Second)
	for {
		r.logMu.Lock()
		found := slices.ContainsFunc(r.logs[min(from, len(r.logs)):], func(l string) bool { return strings.Contains(l, s) })
		r.logMu.Unlock()
		if found {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *serveReplica) kill() {
	r.cmd.Process.Kill()
	<-r.exited
}

// status is the replica part of the process's /api/v1/status.
func (r *serveReplica) status() (*controller.ReplicaStatus, error) {
	resp, err := http.Get(r.base + "/api/v1/status")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st controller.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, err
	}
	if st.Replica == nil {
		return nil, fmt.Errorf("%s: no replica in the status", r.id)
	}
	return st.Replica, nil
}

// checkSet asserts that the work directory wd holds the applied set of st
// exactly: every file of the manifest with its sha256, nothing else.
func checkSet(t *testing.T, wd string, st *state.State) {
	t.Helper()
	w := &state.Workdir{Dir: wd}
	dir, set := w.SetDir(st.Serial), w.SetFS(st.Serial)
	found := map[string]bool{}
	err := fs.WalkDir(set, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if rel == ".state.json" || rel == ".seal" {
			return nil
		}
		data, err := fs.ReadFile(set, rel)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		if st.Artifacts[rel] != hex.EncodeToString(sum[:]) {
			t.Errorf("serial %d: %s in %s does not match the state's manifest", st.Serial, rel, wd)
		}
		found[rel] = true
		return nil
	})
	if err != nil {
		t.Fatalf("reading the applied set of serial %d in %s: %v", st.Serial, wd, err)
	}
	if len(found) != len(st.Artifacts) {
		t.Errorf("serial %d: %s holds %d files; the state names %d", st.Serial, dir, len(found), len(st.Artifacts))
	}
}

// TestEtcdReplicasLeaderKilledMidApply runs three serve processes on one
// state on etcd (lease TTL 2s) and, round after round, commits a change and
// SIGKILLs the leader at a random moment of its reconcile (0-600ms after the
// commit), then restarts it. Each time another replica takes over and the
// commit ends up applied once: the state's serial is the previous one plus
// one, the new leader's work directory holds exactly that set, and the
// serials etcd recorded over the whole run follow each other with no gap and
// no duplicate. The failover time (the kill until another replica leads) is
// logged with its median. 5 rounds; FUELSYNC_REPLICA_KILLS=20 for more.
func TestEtcdReplicasLeaderKilledMidApply(t *testing.T) {
	rounds := 5
	if n, err := strconv.Atoi(os.Getenv("FUELSYNC_REPLICA_KILLS")); err == nil && n > 0 {
		rounds = n
	}
	c := etcdtest.Start(t, 1)
	url := c.URL("fuelsync/replicas")
	dir, clusterFile, a, b := applyRepo(t)
	if _, err := gitCommit(dir, "generated"); err != nil {
		t.Fatal(err)
	}
	cfg, e := openEtcdState(t, url, 5*time.Second)
	ctx := context.Background()

	args := []string{"--state", url, "--etcd-lock-ttl", "2s", "--repo", dir}
	replicas := map[string]*serveReplica{}
	for i := 1; i <= 3; i++ {
		r := &serveReplica{id: fmt.Sprintf("r%d", i), wd: filepath.Join(t.TempDir(), "wd"), args: args}
		r.start(t)
		replicas[r.id] = r
	}
	t.Cleanup(func() {
		for _, r := range replicas {
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
				t.Fatalf("after 30s: %s (state: %+v, %v)", what, st, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	st := waitState("serial 1 applied", func(st *state.State) bool { return st.Serial == 1 })

	var failovers []time.Duration
	for round := 1; round <= rounds; round++ {
		leaderID, err := e.Leader(ctx)
		if err != nil {
			t.Fatalf("round %d: no leader: %v", round, err)
		}
		leader := replicas[leaderID]
		content := a
		if round%2 == 1 {
			content = b
		}
		if err := os.WriteFile(clusterFile, content, 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := gitCommit(dir, fmt.Sprintf("round %d", round))
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rand.IntN(600)) * time.Millisecond)
		leader.kill()
		killed := time.Now()
		committed := "before its commit"
		if st, err := e.ReadState(ctx); err == nil && st.Revision == h.String() {
			committed = "after its commit"
		}
		// Another replica leads (the killed one is not running).
		for {
			id, err := e.Leader(ctx)
			if err == nil && id != leaderID {
				failovers = append(failovers, time.Since(killed))
				break
			}
			if time.Since(killed) > 20*time.Second {
				t.Fatalf("round %d: no other leader 20s after %s was killed", round, leaderID)
			}
			time.Sleep(20 * time.Millisecond)
		}
		leader.start(t) // back, as a follower
		prev := st.Serial
		st = waitState(fmt.Sprintf("round %d: commit %s applied", round, h), func(st *state.State) bool { return st.Revision == h.String() })
		applied := time.Since(killed)
		if st.Serial != prev+1 {
			t.Fatalf("round %d: serial %d after serial %d; want %d", round, st.Serial, prev, prev+1)
		}
		newID, _ := e.Leader(ctx)
		nl := replicas[newID]
		// The leader reported the commit applied (its status names it), then
		// its work directory holds the set.
		deadline := time.Now().Add(10 * time.Second)
		for {
			rs, err := nl.status()
			if err == nil && rs.Role == controller.RoleLeader && rs.Serving >= st.Serial {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the new leader %s does not serve serial %d: %+v, %v", round, newID, st.Serial, rs, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		checkSet(t, nl.wd, st)
		t.Logf("round %d: %s killed %s, %s leads after %s, the commit in the state %s after the kill; serial %d",
			round, leaderID, committed, newID, failovers[len(failovers)-1].Round(time.Millisecond), applied.Round(time.Millisecond), st.Serial)
		if d := failovers[len(failovers)-1]; d > 2*time.Second+3*time.Second {
			t.Errorf("round %d: the failover took %s; want within the lease TTL (2s) and a reconcile", round, d)
		}
	}

	// The serials etcd recorded, in order, from the first.
	checkSerialsGapless(t, c.Endpoints(), cfg.Prefix, st.Serial)
	// Every replica keeps at most the Keep newest sets (and the current one),
	// whether it applied them or rendered them as a follower.
	if rounds > state.Keep {
		for _, r := range replicas {
			entries, _ := os.ReadDir(filepath.Join(r.wd, "artifacts"))
			sets := 0
			for _, e := range entries {
				if _, err := strconv.Atoi(e.Name()); err == nil {
					sets++
				}
			}
			if sets == 0 || sets > state.Keep+1 {
				t.Errorf("%s keeps %d applied sets; want 1 to %d", r.id, sets, state.Keep+1)
			}
		}
	}
	slices.Sort(failovers)
	t.Logf("failover over %d kills (lease TTL 2s): median %s, max %s", len(failovers), failovers[len(failovers)/2].Round(time.Millisecond), failovers[len(failovers)-1].Round(time.Millisecond))
}

// A plan saved on one replica's machine (its work directory holds the applied
// set, rendered by the follower) is refused once the leader has applied
// another commit: the state on etcd moved under it.
func TestEtcdReplicasStalePlanRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	url := c.URL("fuelsync/stale")
	dir, clusterFile, _, b := applyRepo(t)
	if _, err := gitCommit(dir, "generated"); err != nil {
		t.Fatal(err)
	}
	args := []string{"--state", url, "--etcd-lock-ttl", "2s", "--repo", dir}
	var reps []*serveReplica
	for i := 1; i <= 2; i++ {
		r := &serveReplica{id: fmt.Sprintf("r%d", i), wd: filepath.Join(t.TempDir(), "wd"), args: args}
		r.start(t)
		t.Cleanup(r.kill)
		reps = append(reps, r)
	}
	// Both serve serial 1: the leader applied it, the follower rendered it.
	var follower *serveReplica
	deadline := time.Now().Add(30 * time.Second)
	for follower == nil {
		for _, r := range reps {
			rs, err := r.status()
			if err == nil && rs.Role == controller.RoleFollower && rs.Serving == 1 && rs.Leader != "" {
				follower = r
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("after 30s: no follower serving serial 1")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// A plan of a change, in the follower's work directory, against serial 1.
	if err := os.WriteFile(clusterFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(t.TempDir(), "change.plan")
	base := append(args, "--workdir", follower.wd)
	if code, out, stderr := fuelsyncRun(t, append(base, "plan", "--out", planFile)...); code != 0 {
		t.Fatalf("plan on the follower's machine: exit %d\n%s%s", code, out, stderr)
	}
	// The change committed: the leader applies it (serial 2).
	if _, err := gitCommit(dir, "node-1 removed"); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		rs, err := follower.status()
		if err == nil && rs.Serving == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: the follower does not serve serial 2: %+v, %v", rs, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	code, out, stderr := fuelsyncRun(t, append(base, "apply", planFile)...)
	if code != 1 || !regexp.MustCompile(`stale: it was made against state serial 1, but the state is now at serial 2`).MatchString(stderr) {
		t.Fatalf("apply of the stale plan: exit %d\n%s%s", code, out, stderr)
	}
}

// --replica-id names a replica among others on a state on etcd: without
// --state it is refused at start.
func TestServeReplicaIDNeedsEtcd(t *testing.T) {
	dir, _, _, _ := applyRepo(t)
	if _, err := gitCommit(dir, "generated"); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := fuelsyncRun(t, "--repo", dir, "--workdir", filepath.Join(t.TempDir(), "wd"), "serve", "--listen", "127.0.0.1:0", "--replica-id", "r1")
	if code != 1 || !regexp.MustCompile(`--replica-id needs the state on etcd`).MatchString(stderr) {
		t.Fatalf("serve --replica-id without --state: exit %d\n%s", code, stderr)
	}
}
