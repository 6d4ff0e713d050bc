package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/reports"
)

// TestEtcdAgentsReportsSurviveLeaderKill: two serve replicas on one state on
// etcd, and one report per node of demo posted to the leader (as an agent of
// its own would: the graph read, its ETag reported on). Once every agent has its answer, the leader is
// SIGKILLed: the other replica leads, and it has every node's report: demo is
// healthy there, each node's last report is the success its agent sent. A
// report is answered only once etcd holds it, so a killed leader loses none.
func TestEtcdAgentsReportsSurviveLeaderKill(t *testing.T) {
	testenv.Tool(t, "sh", "a POSIX shell: apt-get install dash")
	c := etcdtest.Start(t, 1)
	url := c.URL("fuelsync/agents")
	dir, _ := gittest.Quickstart(t)
	tmp := t.TempDir()
	secret := filepath.Join(tmp, "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, e := openEtcdState(t, url, 5*time.Second)
	ctx := context.Background()

	replicas := map[string]*serveReplica{}
	for i := 1; i <= 2; i++ {
		r := &serveReplica{id: fmt.Sprintf("r%d", i), wd: filepath.Join(t.TempDir(), "wd")}
		cmd := fuelsyncCmd("--state", url, "--etcd-lock-ttl", "2s", "--repo", dir, "--workdir", r.wd, "serve", "--replica-id", r.id,
			"--listen", "127.0.0.1:0", "--log-format", "json", "--interval", "2s", "--agent-secret-file", secret)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.cmd, r.exited = cmd, make(chan struct{})
		r.base = "http://" + serveAddr(t, stderr, 10*time.Second, nil, func() {
			cmd.Wait()
			close(r.exited)
		})
		replicas[r.id] = r
	}
	t.Cleanup(func() {
		for _, r := range replicas {
			r.kill()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	var leader *serveReplica
	for leader == nil {
		if st, err := e.ReadState(ctx); err == nil && st.Serial >= 1 {
			if id, err := e.Leader(ctx); err == nil {
				leader = replicas[id]
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("after 30s: nothing applied, or no leader")
		}
		time.Sleep(50 * time.Millisecond)
	}

	nodes := []string{"node-1", "node-2", "node-3", "node-4", "node-5", "node-6"}
	for _, n := range nodes {
		if err := reportSuccess(leader.base, "demo", n, reports.Token([]byte("s3cret"), "demo", n)); err != nil {
			t.Fatalf("the report of %s: %v", n, err)
		}
	}
	leader.kill()
	var survivor *serveReplica
	for _, r := range replicas {
		if r != leader {
			survivor = r
		}
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		id, err := e.Leader(ctx)
		if err == nil && id == survivor.id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: %s does not lead (%q, %v)", survivor.id, id, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var sum struct {
		Health         string `json:"health"`
		NodesConverged int    `json:"nodes_converged"`
	}
	getJSON := func(path string, v any) error {
		resp, err := http.Get(survivor.base + path)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("%s: %s", path, resp.Status)
		}
		return json.NewDecoder(resp.Body).Decode(v)
	}
	deadline = time.Now().Add(30 * time.Second)
	for {
		err := getJSON("/api/v1/clusters/demo", &sum)
		if err == nil && sum.Health == reports.Healthy && sum.NodesConverged == len(nodes) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s on the new leader: %+v, %v", sum, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, n := range nodes {
		var d struct {
			State string `json:"state"`
			Last  *struct {
				Status string         `json:"status"`
				Tasks  []reports.Task `json:"tasks"`
			} `json:"last"`
		}
		if err := getJSON("/api/v1/clusters/demo/nodes/"+n, &d); err != nil {
			t.Fatal(err)
		}
		if d.State != reports.Converged || d.Last == nil || d.Last.Status != reports.Success || len(d.Last.Tasks) != 1 || d.Last.Tasks[0].ID != "hiera" {
			t.Errorf("%s on the new leader: %+v", n, d)
		}
	}
}

// reportSuccess reads node's default graph from serve at base and reports a
// run of it that succeeded (its task hiera), with the node's token.
func reportSuccess(base, cluster, node, token string) error {
	req, err := http.NewRequest(http.MethodGet, base+"/api/v1/clusters/"+cluster+"/nodes/"+node+"/graphs/default", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET the graph: %s", resp.Status)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	body := fmt.Sprintf(`{"graph": "default", "etag": %q, "status": "success", "started_at": %q, "finished_at": %q, "tasks": [{"id": "hiera", "status": "success"}]}`,
		resp.Header.Get("ETag"), now, now)
	req, err = http.NewRequest(http.MethodPost, base+"/api/v1/clusters/"+cluster+"/nodes/"+node+"/reports", strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("POST the report: %s: %s", resp.Status, msg)
	}
	return nil
}
