package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/etcdtest"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// floodQuota is the etcd quota of the flood test: 64 MiB (the default is
// 2 GiB). Before the bounds, 64 reports of 1 MiB from one node filled it.
const floodQuota = 64 << 20

// etcdServe is a serve of the quickstart on a state on etcd, applied once.
type etcdServe struct {
	etcd      *etcdtest.Cluster
	dir, base string
	repo      *git.Repository
	loop      *controller.Loop
	srv       *Server
}

// startEtcdServe starts an etcd of the given quota and a serve on it
// (setup, when not nil, sets the server up before it serves), and applies
// the quickstart.
func startEtcdServe(t *testing.T, quota int, setup func(*Server)) *etcdServe {
	t.Helper()
	c := etcdtest.StartWith(t, 1, "--quota-backend-bytes", fmt.Sprint(quota))
	dir, repo := gittest.Quickstart(t)
	cfg, err := state.ParseURL(c.URL("fuelsync/serve"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 10 * time.Second
	e, err := state.OpenEtcd(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	loop := &controller.Loop{Workdir: &state.Workdir{Dir: filepath.Join(t.TempDir(), "wd"), Backend: e}, Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	srv := New(loop, nil)
	if setup != nil {
		setup(srv)
	}
	base := serveOn(t, srv.Handler(), DefaultLimits)
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		t.Fatalf("first reconcile: %s %v", o, loop.Status().Errors)
	}
	return &etcdServe{etcd: c, dir: dir, base: base, repo: repo, loop: loop, srv: srv}
}

// bigReportBody is a report body of about 1 MiB on etag: 900 tasks with a
// message of 1,000 bytes each.
func bigReportBody(etag string, run int) []byte {
	var tasks []map[string]string
	for i := range 900 {
		tasks = append(tasks, map[string]string{"id": fmt.Sprintf("task-%03d", i), "status": "failed", "message": strings.Repeat("m", 1000)})
	}
	start := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(run) * time.Minute)
	b, _ := json.Marshal(map[string]any{"graph": "default", "etag": etag, "status": "failed", "started_at": start.Format(time.RFC3339),
		"finished_at": start.Add(time.Second).Format(time.RFC3339), "tasks": tasks})
	return b
}

// TestEtcdOneNodeCannotFillEtcd: one node's token floods serve with reports
// of 1 MiB, from 8 connections, on a state on etcd with a quota of 64 MiB
// and no compaction (every overwritten version kept). serve bounds what the
// node writes: 429 with Retry-After beyond its rate, its reports kept
// without their tasks beyond its budget of bytes; etcd's database stays far
// below its quota, no alarm is raised, /readyz stays ready, and the next
// commit is applied. (265 reports of 1 MiB from one node in 9 s raised
// etcd's NOSPACE alarm on a 256 MiB quota; from then on every reconcile
// failed, "taking the lock … database space exceeded", while /readyz said
// ready.)
func TestEtcdOneNodeCannotFillEtcd(t *testing.T) {
	es := startEtcdServe(t, floodQuota, func(s *Server) { s.AgentSecret = []byte("agent-s3cret") })
	c, dir, repo, loop, srv, base := es.etcd, es.dir, es.repo, es.loop, es.srv, es.base
	resp, err := http.Get(base + "/api/v1/clusters/demo/nodes/node-2/graphs/default")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	etag := resp.Header.Get("ETag")
	token := reports.Token(srv.AgentSecret, "demo", "node-2")

	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	before, err := cli.Status(ctx, c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}

	const conns, each = 8, 12
	codes := map[int]int{}
	var retryAfter []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for g := range conns {
		wg.Go(func() {
			for i := range each {
				req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/clusters/demo/nodes/node-2/reports", bytes.NewReader(bigReportBody(etag, g*each+i)))
				req.Header.Set("Authorization", "Bearer "+token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				msg, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				codes[resp.StatusCode]++
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
					t.Errorf("a report answered %s: %s", resp.Status, msg)
				}
				if resp.StatusCode == http.StatusTooManyRequests {
					retryAfter = append(retryAfter, resp.Header.Get("Retry-After"))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	st, err := cli.Status(ctx, c.Endpoints()[0])
	if err != nil {
		t.Fatal(err)
	}
	alarms, err := cli.AlarmList(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d reports of 1 MiB in %v: answers %v; etcd's database %.1f MiB (%.1f before) of a %d MiB quota, %d alarms",
		conns*each, time.Since(start).Round(time.Millisecond), codes, float64(st.DbSize)/(1<<20), float64(before.DbSize)/(1<<20), floodQuota>>20, len(alarms.Alarms))
	if len(alarms.Alarms) > 0 || st.DbSize > floodQuota/4 {
		t.Errorf("one node's reports took etcd's database to %d bytes (%v alarms); want it bounded, far below the quota of %d", st.DbSize, alarms.Alarms, floodQuota)
	}
	if codes[http.StatusTooManyRequests] == 0 || codes[http.StatusOK] == 0 || codes[http.StatusOK]+codes[http.StatusTooManyRequests] != conns*each {
		t.Errorf("answers %v; want 200 within the node's rate, 429 beyond, nothing else", codes)
	}
	for _, ra := range retryAfter {
		if ra == "" || ra == "0" {
			t.Errorf("a 429 with Retry-After %q", ra)
			break
		}
	}
	// Reconciles go on, and serve is ready.
	gittest.EditFile(t, filepath.Join(dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	gittest.Commit(t, repo, "unassign rabbitmq")
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		t.Errorf("the reconcile after the flood: %s %v", o, loop.Status().Errors)
	}
	resp, err = http.Get(base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("/readyz after the flood: %s %s", resp.Status, body)
	}
}

// TestEtcdReadyzSaysWhenEtcdRefusesWrites: once etcd has raised its NOSPACE
// alarm (another prefix filled its quota), /readyz, the status and the page
// say serve is not ready, and why; once the space is reclaimed and the
// alarm disarmed, ready again.
func TestEtcdReadyzSaysWhenEtcdRefusesWrites(t *testing.T) {
	es := startEtcdServe(t, 16<<20, nil)
	c, base := es.etcd, es.base
	readyz := func() (int, string) { return httpGet(t, base, "/readyz") }
	if code, body := readyz(); code != 200 {
		t.Fatalf("/readyz before: %d %s", code, body)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	value := strings.Repeat("x", 1<<20)
	for i := 0; ; i++ {
		if _, err := cli.Put(ctx, fmt.Sprintf("/other/%d", i%4), value); err != nil {
			if !strings.Contains(err.Error(), "database space exceeded") {
				t.Fatal(err)
			}
			break
		}
	}
	waitReady := func(want int, says string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, body := readyz()
			if code == want && strings.Contains(body, says) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("/readyz: %d %q; want %d saying %q", code, body, want, says)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitReady(503, "NOSPACE")
	// Reclaimed: the other prefix's history compacted, the database
	// defragmented, the alarm disarmed.
	resp, err := cli.Delete(ctx, "/other/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Compact(ctx, resp.Header.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Defragment(ctx, c.Endpoints()[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AlarmDisarm(ctx, &clientv3.AlarmMember{}); err != nil {
		t.Fatal(err)
	}
	waitReady(200, "ready")
}
