package cli

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
)

// leaderProxy is what a load balancer with /leaderz as its health check
// does: it forwards every request to the replica that leads.
type leaderProxy struct {
	mu       sync.Mutex
	replicas []string
	leader   string
}

func (p *leaderProxy) pick() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.leader != "" {
		return p.leader
	}
	for _, base := range p.replicas {
		resp, err := http.Get(base + "/leaderz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				p.leader = base
				return base
			}
		}
	}
	return ""
}

func (p *leaderProxy) forget() {
	p.mu.Lock()
	p.leader = ""
	p.mu.Unlock()
}

func (p *leaderProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	base := p.pick()
	if base == "" {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "no leader", http.StatusServiceUnavailable)
		return
	}
	u, _ := url.Parse(base)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		p.forget()
		w.Header().Set("Retry-After", "1")
		http.Error(w, "the leader went away: "+err.Error(), http.StatusBadGateway)
	}
	rp.ModifyResponse = func(resp *http.Response) error {
		if resp.StatusCode == http.StatusServiceUnavailable {
			p.forget() // it follows now
		}
		return nil
	}
	rp.ServeHTTP(w, r)
}

// TestEtcdDeployLeaderKilled: two serve replicas on one state on etcd, the
// agent of node-1 behind a proxy that sends it to the leader (as a load
// balancer checking /leaderz would). The leader is SIGKILLed while the
// agent runs a task of a run of node-1: the other replica leads, resumes the
// run from etcd, takes the task's report, and the run ends, every task run
// once.
func TestEtcdDeployLeaderKilled(t *testing.T) {
	c := etcdtest.Start(t, 1)
	stateURL := c.URL("fuelsync/deploy")
	h := newDeployHarnessWith(t, manualDeploy)
	h.slow("node-1/primary-keystone")
	var reps []*deployReplica
	proxy := &leaderProxy{}
	for i := 1; i <= 2; i++ {
		r := h.startReplica(fmt.Sprintf("r%d", i), stateURL)
		reps = append(reps, r)
		proxy.replicas = append(proxy.replicas, r.base)
	}
	ps := httptest.NewServer(proxy)
	defer ps.Close()
	h.base = ps.URL
	u, _ := url.Parse(ps.URL)
	h.client = &api.Client{Base: u, Token: "tok"}
	h.startAgent("node-1")
	h.startRun(&api.StartRun{Nodes: []string{"node-1"}})
	h.waitRun("1", 3*time.Minute, func(r *api.Run) bool { return running(r, "node-1/primary-keystone") })
	leader := proxy.pick()
	for _, r := range reps {
		if r.base == leader {
			r.kill()
		}
	}
	proxy.forget()
	run := h.waitRun("1", 3*time.Minute, nil)
	if run.Status != api.RunSucceeded || run.Counts["failed"]+run.Counts["dep_failed"] > 0 {
		for _, n := range run.Nodes {
			for _, tk := range n.Tasks {
				if tk.Status == api.TaskFailed || tk.Status == "dep_failed" {
					t.Logf("%s@%s failed: %s", tk.ID, n.Name, tk.Message)
				}
			}
		}
		t.Fatalf("after the leader was killed: %s %v, stopped %q", run.Status, run.Counts, run.Reason)
	}
	for key, cl := range h.calls() {
		if cl.starts != 1 {
			t.Errorf("%s ran %d times", key, cl.starts)
		}
	}
	if tk := runTasks(run)["node-1/primary-keystone"]; tk.Status != api.TaskSucceeded || tk.Attempt != 1 {
		t.Errorf("the task running when the leader died: %s, attempt %d", tk.Status, tk.Attempt)
	}
}

// deployReplica is a serve replica of the harness on a state on etcd.
type deployReplica struct {
	base string
	kill func()
}

// startReplica starts a serve replica with its own work directory.
func (h *deployHarness) startReplica(id, stateURL string) *deployReplica {
	t := h.t
	t.Helper()
	cmd := fuelsyncCmd("--state", stateURL, "--etcd-lock-ttl", "2s", "--repo", h.repo, "--workdir", filepath.Join(h.dir, "wd-"+id),
		"serve", "--replica-id", id, "--listen", "127.0.0.1:0", "--interval", "1h", "--log-format", "json",
		"--agent-secret-file", h.secret, "--api-token-file", h.token, "--agent-heartbeat", "1s")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	base := "http://" + serveAddr(t, stderr, 30*time.Second, nil, func() { cmd.Wait(); close(exited) })
	kill := func() { cmd.Process.Kill(); <-exited }
	t.Cleanup(kill)
	return &deployReplica{base: base, kill: kill}
}
