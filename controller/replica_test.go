package controller_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/server"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// testReplica is one serve replica in process: a loop, its server on
// 127.0.0.1, and the count of its reconciles by outcome.
type testReplica struct {
	id     string
	w      *state.Workdir
	loop   *controller.Loop
	rep    *controller.Replica
	base   string
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	outcomes map[operation.Outcome]int
	sequence []operation.Outcome // every outcome, in order
	// logs is the replica's log (JSON).
	logs *controller.LogBuffer
}

func startReplica(t *testing.T, c *etcdtest.Cluster, dir, id string, secret []byte) *testReplica {
	return startReplicaVersion(t, c, dir, id, secret, "test")
}

func startReplicaVersion(t *testing.T, c *etcdtest.Cluster, dir, id string, secret []byte, version string) *testReplica {
	t.Helper()
	return startReplicaOn(t, etcdWorkdir(t, c, "replicas", 2*time.Second, 5*time.Second), dir, id, secret, version)
}

func startReplicaOn(t *testing.T, w *state.Workdir, dir, id string, secret []byte, version string) *testReplica {
	t.Helper()
	logs := &controller.LogBuffer{}
	loop := &controller.Loop{Workdir: w, Source: &source.LocalSource{Path: dir}, ToolVersion: version, Interval: time.Hour, Log: logs.Logger()}
	srv := server.New(loop, secret)
	tr := &testReplica{id: id, w: w, loop: loop, outcomes: map[operation.Outcome]int{}, done: make(chan struct{}), logs: logs}
	count := loop.OnReconcile
	loop.OnReconcile = func(o operation.Outcome, d time.Duration) {
		count(o, d)
		tr.mu.Lock()
		tr.outcomes[o]++
		tr.sequence = append(tr.sequence, o)
		tr.mu.Unlock()
	}
	tr.rep = &controller.Replica{Loop: loop, Etcd: w.Backend.(state.Coordinator), ID: id}
	srv.Replica = tr.rep
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go hs.Serve(ln)
	tr.base = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	tr.cancel = cancel
	go func() { tr.rep.Run(ctx); close(tr.done) }()
	t.Cleanup(func() { tr.stop(); hs.Close() })
	return tr
}

func (tr *testReplica) stop() {
	tr.cancel()
	<-tr.done
}

func (tr *testReplica) count(o operation.Outcome) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.outcomes[o]
}

func (tr *testReplica) reconciles() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for _, c := range tr.outcomes {
		n += c
	}
	return n
}

func (tr *testReplica) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(tr.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (tr *testReplica) status(t *testing.T) controller.Status {
	t.Helper()
	_, js := tr.get(t, "/api/v1/status")
	var st controller.Status
	if err := json.Unmarshal([]byte(js), &st); err != nil || st.Replica == nil {
		t.Fatalf("/api/v1/status of %s: %v\n%s", tr.id, err, js)
	}
	return st
}

// waitLong polls cond every 20ms for up to d.
func waitLong(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two serve replicas on one state on etcd: exactly one leads and applies the
// commit; both statuses name the leader and their own role; the follower does
// not reconcile, renders the applied set itself and serves the same graphs
// (then it is ready), and hands a webhook it receives to the leader, which
// applies the new commit. When the leader is gone, the follower takes
// over within the lease TTL and reconciles the next commit.
func TestEtcdReplicasOneLeaderApplies(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, repo := gittest.Quickstart(t)
	secret := []byte("s3cret")
	a := startReplica(t, c, dir, "replica-a", secret)
	b := startReplica(t, c, dir, "replica-b", secret)
	reps := []*testReplica{a, b}

	waitLong(t, 10*time.Second, "serial 1 applied by a leader", func() bool { return a.count(operation.Applied)+b.count(operation.Applied) == 1 })
	leader, follower := a, b
	if b.rep.Role() == controller.RoleLeader {
		leader, follower = b, a
	}
	if leader.rep.Role() != controller.RoleLeader || follower.rep.Role() != controller.RoleFollower {
		t.Fatalf("roles: %s %s, %s %s; want one leader", a.id, a.rep.Role(), b.id, b.rep.Role())
	}
	if n := follower.reconciles(); n != 0 {
		t.Errorf("the follower %s reconciled %d times", follower.id, n)
	}
	gittest.WaitFor(t, "the follower's status at serial 1", func() bool { return follower.loop.Status().Serial == 1 })
	for _, r := range reps {
		st := r.status(t)
		want := controller.RoleFollower
		if r == leader {
			want = controller.RoleLeader
		}
		if st.Replica.ID != r.id || st.Replica.Role != want || st.Replica.Leader != leader.id || st.Serial != 1 {
			t.Errorf("status of %s: replica %+v, serial %d; want role %s, leader %s, serial 1", r.id, *st.Replica, st.Serial, want, leader.id)
		}
	}
	if _, page := follower.get(t, "/"); !strings.Contains(page, "Replica <code>"+follower.id+"</code>: follower; leader <code>"+leader.id+"</code>") {
		t.Errorf("the follower's status page does not name its role and the leader:\n%s", page)
	}
	if code, body := leader.get(t, "/readyz"); code != 200 {
		t.Errorf("the leader's /readyz: %d %s", code, body)
	}
	gittest.WaitFor(t, "the follower ready", func() bool { code, _ := follower.get(t, "/readyz"); return code == 200 })
	// The status says what /readyz says, and the version.
	for _, r := range reps {
		if st := r.status(t); !st.Ready || st.ReadyError != "" || st.Version != "test" {
			t.Errorf("the status of %s (ready for /readyz): ready %v %q, version %q", r.id, st.Ready, st.ReadyError, st.Version)
		}
	}
	// The follower serves the applied graphs, rendered itself and checked
	// against the state's manifest: the same bytes as the leader's (the
	// expanded view of its applied set).
	st, err := leader.w.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	graphs := 0
	for name := range st.Artifacts {
		cluster, rest, _ := strings.Cut(name, "/nodes/")
		node, graph, ok := strings.Cut(rest, "/")
		if !ok || !strings.HasSuffix(graph, ".yaml") {
			continue
		}
		view, err := render.ExpandNode(leader.w.SetFS(st.Serial), cluster, node, strings.TrimSuffix(graph, ".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		viewSum := sha256.Sum256(view)
		sum := hex.EncodeToString(viewSum[:])
		graphs++
		for _, r := range reps {
			resp, err := http.Get(r.base + "/api/v1/clusters/" + cluster + "/nodes/" + node + "/graphs/" + strings.TrimSuffix(graph, ".yaml"))
			if err != nil {
				t.Fatal(err)
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			got := sha256.Sum256(data)
			if resp.StatusCode != 200 || hex.EncodeToString(got[:]) != sum {
				t.Errorf("%s from %s: %d, sha256 %x; want 200 and %s", name, r.id, resp.StatusCode, got, sum)
			}
		}
	}
	if graphs == 0 {
		t.Fatal("no graph in the applied state")
	}

	// A commit, and its webhook sent to the follower: the leader applies it.
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	second := gittest.Commit(t, repo, "unassign rabbitmq")
	body := []byte(`{"ref":"refs/heads/master","after":"` + second + `"}`)
	req, _ := http.NewRequest(http.MethodPost, follower.base+"/hooks/generic", bytes.NewReader(body))
	stamp := strconv.FormatInt(time.Now().Unix(), 10)
	for k, v := range map[string]string{"X-Fuelsync-Timestamp": stamp, "X-Fuelsync-Signature": api.Sign(secret, stamp, body)} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("webhook to the follower: %d", resp.StatusCode)
	}
	// The loop's status shows the commit before its reconcile is counted
	// (OnReconcile is called last): wait for the count.
	gittest.WaitFor(t, "the leader applied the commit of the follower's webhook", func() bool {
		return leader.loop.Status().Applied == second && leader.count(operation.Applied) == 2
	})
	if n := follower.reconciles(); n != 0 || leader.count(operation.Applied) != 2 {
		t.Errorf("after the webhook: the follower reconciled %d times, the leader applied %d times; want 0 and 2", n, leader.count(operation.Applied))
	}
	gittest.WaitFor(t, "the follower's status at serial 2", func() bool { return follower.loop.Status().Serial == 2 })
	// The follower's log: its role, the serials it took up, the delivery.
	checkLogged(t, follower, "replica: following", map[string]any{"replica": follower.id, "was": "starting"})
	checkLogged(t, follower, "replica: serving", map[string]any{"replica": follower.id, "role": "follower", "serial": 1.0, "previous_serial": 0.0})
	waitLong(t, 5*time.Second, "the follower logs serving serial 2", func() bool {
		return len(logged(t, follower, "replica: serving", map[string]any{"serial": 2.0, "revision": second, "previous_serial": 1.0})) == 1
	})
	checkLogged(t, follower, "webhook delivery", map[string]any{"provider": "generic", "result": "accepted", "status": 202.0, "level": "INFO"})
	checkLogged(t, leader, "replica: leading", map[string]any{"replica": leader.id, "was": "follower"})
	if n := len(logged(t, leader, "replica: serving", nil)); n != 0 {
		t.Errorf("the leader logged %d serials taken up; it applied them", n)
	}

	// The leader is gone without resigning (its etcd client closed: no more
	// keep-alives): the follower leads within the lease TTL.
	gone := time.Now()
	leader.w.Backend.(state.Coordinator).Close()
	var took atomic.Int64
	waitLong(t, 10*time.Second, "the follower leads", func() bool {
		if follower.rep.Role() == controller.RoleLeader {
			took.Store(int64(time.Since(gone)))
			return true
		}
		return false
	})
	t.Logf("failover: %s leads %s after %s was gone (lease TTL 2s)", follower.id, time.Duration(took.Load()).Round(time.Millisecond), leader.id)
	if d := time.Duration(took.Load()); d > 2*time.Second+3*time.Second {
		t.Errorf("failover took %s; want within the lease TTL (2s) and a few seconds", d)
	}
	gittest.WaitFor(t, "the new leader's first reconcile", func() bool { return follower.reconciles() == 1 })
	if st := follower.loop.Status(); st.Outcome != operation.NoChange {
		t.Fatalf("the new leader's first reconcile: %s %v", st.Outcome, st.Errors)
	}
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "unassign: [rabbitmq]", "unassign: []")
	third := gittest.Commit(t, repo, "rabbitmq back")
	if err := follower.rep.Trigger(); err != nil {
		t.Fatal(err)
	}
	gittest.WaitFor(t, "the new leader applied serial 3", func() bool { st := follower.loop.Status(); return st.Applied == third && st.Serial == 3 })
	if st := follower.status(t); st.Replica.Leader != follower.id || st.Replica.Role != controller.RoleLeader {
		t.Errorf("the new leader's status: %+v", *st.Replica)
	}
	checkLogged(t, follower, "replica: leading", map[string]any{"replica": follower.id, "was": "follower"})
}

// logged are the records of r's log with message msg whose attributes
// include attrs.
func logged(t *testing.T, r *testReplica, msg string, attrs map[string]any) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range r.logs.Lines(t, msg) {
		ok := true
		for k, v := range attrs {
			if rec[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, rec)
		}
	}
	return out
}

// checkLogged wants exactly one such record.
func checkLogged(t *testing.T, r *testReplica, msg string, attrs map[string]any) {
	t.Helper()
	if got := logged(t, r, msg, attrs); len(got) != 1 {
		t.Errorf("%s logged %d %q lines with %v; want 1:\n%v", r.id, len(got), msg, attrs, r.logs.Lines(t, msg))
	}
}

// A follower whose tool version renders the applied revision differently
// (here: another version in manifest.json) keeps nothing of it: its /readyz
// fails saying so, its status names the problem, and its artifact API serves
// no graph of that state.
func TestEtcdReplicaOtherToolVersionServesNothing(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, _ := gittest.Quickstart(t)
	a := startReplica(t, c, dir, "replica-a", nil)
	waitLong(t, 10*time.Second, "serial 1 applied", func() bool { return a.count(operation.Applied) == 1 })
	b := startReplicaVersion(t, c, dir, "replica-b", nil, "other")
	gittest.WaitFor(t, "the follower's problem", func() bool { _, p := b.rep.Serving(); return p != nil })
	code, body := b.get(t, "/readyz")
	if code != 503 || !strings.Contains(body, "renders") || !strings.Contains(body, "fuelsync other") || !strings.Contains(body, "fuelsync test") {
		t.Errorf("/readyz of the follower of another version: %d %s", code, body)
	}
	if st := b.status(t); st.Replica.Role != controller.RoleFollower || st.Replica.Serving != 0 || !strings.Contains(st.Replica.Problem, "differently") {
		t.Errorf("status of the follower of another version: %+v", *st.Replica)
	}
	if entries, _ := os.ReadDir(filepath.Join(b.w.Dir, "artifacts")); len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the follower kept %v", names)
	}
	st, err := a.w.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	for name := range st.Artifacts {
		cluster, rest, _ := strings.Cut(name, "/nodes/")
		node, graph, ok := strings.Cut(rest, "/")
		if !ok {
			continue
		}
		if code, body := b.get(t, "/api/v1/clusters/"+cluster+"/nodes/"+node+"/graphs/"+strings.TrimSuffix(graph, ".yaml")); code != 503 || !strings.Contains(body, "differently") {
			t.Errorf("%s from the follower of another version: %d %s; want 503 saying why", name, code, body)
		}
		break
	}
}

// cutProxy forwards TCP connections from 127.0.0.1 to target until cut: then
// it closes every connection and refuses new ones, until mended.
type cutProxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  []net.Conn
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target}
	t.Cleanup(func() { ln.Close(); p.setCut(true) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				continue
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { io.Copy(u, c); u.Close() }()
			go func() { io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
	if cut {
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
	}
}

// A leader partitioned from etcd (its connections cut, the process alive)
// loses the leadership when its lease expires: another replica leads within
// the lease TTL and applies the next commit, the partitioned one stops
// reconciling and applies nothing. When the partition heals, it follows and
// serves the new serial.
func TestEtcdReplicaLeaderPartitioned(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, repo := gittest.Quickstart(t)
	proxy := newCutProxy(t, c.Endpoints()[0])
	cfg, err := state.ParseURL("etcd://" + proxy.ln.Addr().String() + "/replicas")
	if err != nil {
		t.Fatal(err)
	}
	cfg.LockTTL, cfg.Timeout = 2*time.Second, 2*time.Second
	e, err := state.OpenEtcd(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	a := startReplicaOn(t, &state.Workdir{Dir: filepath.Join(t.TempDir(), "wd"), Backend: e}, dir, "replica-a", nil, "test")
	waitLong(t, 10*time.Second, "serial 1 applied by replica-a", func() bool { return a.count(operation.Applied) == 1 })
	b := startReplica(t, c, dir, "replica-b", nil)
	waitLong(t, 10*time.Second, "replica-b serves serial 1", func() bool { n, _ := b.rep.Serving(); return n == 1 })
	if a.rep.Role() != controller.RoleLeader || b.rep.Role() != controller.RoleFollower {
		t.Fatalf("roles: a %s, b %s", a.rep.Role(), b.rep.Role())
	}

	proxy.setCut(true)
	cut := time.Now()
	waitLong(t, 10*time.Second, "replica-b leads", func() bool { return b.rep.Role() == controller.RoleLeader })
	t.Logf("replica-b leads %s after replica-a was cut from etcd (lease TTL 2s)", time.Since(cut).Round(time.Millisecond))
	if d := time.Since(cut); d > 2*time.Second+3*time.Second {
		t.Errorf("the failover took %s; want within the lease TTL (2s) and a few seconds", d)
	}
	waitLong(t, 10*time.Second, "replica-a steps down", func() bool { return a.rep.Role() == controller.RoleFollower })
	t.Logf("replica-a stepped down %s after the cut", time.Since(cut).Round(time.Millisecond))

	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	second := gittest.Commit(t, repo, "unassign rabbitmq")
	if err := b.rep.Trigger(); err != nil {
		t.Fatal(err)
	}
	gittest.WaitFor(t, "replica-b applied serial 2", func() bool { st := b.loop.Status(); return st.Applied == second && st.Serial == 2 })
	if n := a.count(operation.Applied); n != 1 {
		t.Errorf("the partitioned replica applied %d times; want only serial 1", n)
	}

	proxy.setCut(false)
	waitLong(t, 15*time.Second, "replica-a follows and serves serial 2", func() bool { n, _ := a.rep.Serving(); return n == 2 })
	if a.rep.Role() != controller.RoleFollower || b.rep.Role() != controller.RoleLeader {
		t.Errorf("roles after the partition healed: a %s, b %s", a.rep.Role(), b.rep.Role())
	}
	if n := a.count(operation.Applied); n != 1 {
		t.Errorf("replica-a applied %d times; want 1", n)
	}
}

// Without an etcd quorum no replica applies and every replica's /readyz
// fails; nothing changes in their work directories. When the quorum is back,
// a leader applies the commit made meanwhile and both are ready again.
func TestEtcdReplicasQuorumLost(t *testing.T) {
	c := etcdtest.Start(t, 3)
	dir, repo := gittest.Quickstart(t)
	a := startReplica(t, c, dir, "replica-a", nil)
	b := startReplica(t, c, dir, "replica-b", nil)
	reps := []*testReplica{a, b}
	applied := func() int { return a.count(operation.Applied) + b.count(operation.Applied) }
	waitLong(t, 10*time.Second, "serial 1 applied", func() bool { return applied() == 1 })
	ready := func(r *testReplica) bool { code, _ := r.get(t, "/readyz"); return code == 200 }
	waitLong(t, 10*time.Second, "both replicas ready", func() bool { return ready(a) && ready(b) })

	c.Stop(1)
	c.Stop(2)
	lost := time.Now()
	for _, r := range reps {
		waitLong(t, 15*time.Second, r.id+" not ready without a quorum", func() bool {
			code, body := r.get(t, "/readyz")
			return code == 503 && strings.Contains(body, "etcd")
		})
	}
	t.Logf("both replicas not ready %s after the quorum was lost", time.Since(lost).Round(time.Millisecond))
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	second := gittest.Commit(t, repo, "unassign rabbitmq")
	for _, r := range reps {
		r.loop.Trigger()
	}
	time.Sleep(3 * time.Second)
	if n := applied(); n != 1 {
		t.Errorf("%d applies without a quorum; want none after serial 1", n-1)
	}
	for _, r := range reps {
		if n := r.w.CurrentSerial(); n > 1 {
			t.Errorf("%s switched to set %d without a quorum", r.id, n)
		}
	}

	c.Restart(1)
	c.Restart(2)
	c.WaitHealthy(30 * time.Second)
	waitLong(t, 30*time.Second, "the commit applied after the quorum came back", func() bool {
		for _, r := range reps {
			if r.rep.Role() == controller.RoleLeader {
				r.loop.Trigger()
			}
		}
		st, err := a.w.ReadState()
		return err == nil && st.Serial == 2 && st.Revision == second
	})
	waitLong(t, 15*time.Second, "both replicas ready again", func() bool { return ready(a) && ready(b) })
	// A reconcile that waited through the outage may have committed without
	// hearing the answer (reported as an error, the set kept, the next
	// reconcile finding nothing to do): at most one apply reported, never two.
	if n := applied(); n > 2 {
		t.Errorf("%d applies in all; want at most 2", n)
	}
	if st, err := a.w.ReadState(); err != nil || st.Serial != 2 {
		t.Errorf("state after the outage: %+v, %v; want serial 2", st, err)
	}
	for _, r := range reps {
		if n, problem := r.rep.Serving(); n != 2 || problem != nil {
			t.Errorf("%s (%s) serves serial %d (%v); want 2", r.id, r.rep.Role(), n, problem)
		}
	}
}

// TestEtcdFollowerAnswersReadEndpoints is issue 27's reproducer: a follower
// that /readyz called ready answered the components API 503 ("no revision
// loaded yet": only the leader's loop loads revisions). Once ready, a follower
// answers every read endpoint as the leader does: the component registry of
// the applied revision, the clusters, the graphs, the status and the page.
func TestEtcdFollowerAnswersReadEndpoints(t *testing.T) {
	c := etcdtest.Start(t, 1)
	dir, _ := gittest.Quickstart(t)
	a := startReplica(t, c, dir, "replica-a", nil)
	b := startReplica(t, c, dir, "replica-b", nil)
	waitLong(t, 10*time.Second, "serial 1 applied by a leader", func() bool { return a.count(operation.Applied)+b.count(operation.Applied) == 1 })
	leader, follower := a, b
	if b.rep.Role() == controller.RoleLeader {
		leader, follower = b, a
	}
	waitLong(t, 10*time.Second, "the follower ready", func() bool { code, _ := follower.get(t, "/readyz"); return code == 200 })
	for _, path := range []string{
		"/api/v1/releases/quickstart-1.0/components",
		"/api/v1/clusters/demo",
		"/api/v1/clusters/demo/nodes/node-1/graphs/default",
		"/api/v1/status",
		"/",
	} {
		code, body := follower.get(t, path)
		if code != 200 {
			t.Errorf("GET %s on the ready follower: %d %s", path, code, body)
			continue
		}
		if strings.HasPrefix(path, "/api/v1/releases/") || strings.HasPrefix(path, "/api/v1/clusters/") {
			if lcode, lbody := leader.get(t, path); lcode != 200 || lbody != body {
				t.Errorf("GET %s: the follower answers differently from the leader (%d):\n%s\n---\n%s", path, lcode, body, lbody)
			}
		}
	}
	if code, body := follower.get(t, "/api/v1/releases/nosuch/components"); code != 404 {
		t.Errorf("an unknown release on the follower: %d %s", code, body)
	}
}
