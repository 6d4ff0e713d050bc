package server

import (
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
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// apiServer is a loop and its server, on 127.0.0.1 behind serve's limits,
// following a real git repository of examples/quickstart. The loop does not run
// by itself: tests reconcile with ReconcileOnce, so every apply is theirs.
type apiServer struct {
	dir  string
	repo *git.Repository
	wd   string
	loop *controller.Loop
	srv  *Server
	base string
}

func startAPI(t testing.TB, setup func(*Server, *Limits)) *apiServer {
	t.Helper()
	dir, repo := gittest.Quickstart(t)
	wd := filepath.Join(t.TempDir(), "wd")
	loop := &controller.Loop{Workdir: state.Open(wd), Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	srv := New(loop, []byte("s3cret"))
	lim := DefaultLimits
	if setup != nil {
		setup(srv, &lim)
	}
	return &apiServer{dir: dir, repo: repo, wd: wd, loop: loop, srv: srv, base: serveOn(t, srv.Handler(), lim)}
}

// serveOn serves h on a new loopback port with lim until the test ends, and
// returns its base URL.
func serveOn(t testing.TB, h http.Handler, lim Limits) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs, limited := HTTPServer(h, ln, lim)
	go hs.Serve(limited)
	t.Cleanup(func() { hs.Close() })
	return "http://" + ln.Addr().String()
}

func (a *apiServer) reconcile(t *testing.T, want operation.Outcome) {
	t.Helper()
	if o := a.loop.ReconcileOnce(context.Background()); o != want {
		t.Fatalf("reconcile: %s, want %s (%q)", o, want, a.loop.Status().Errors)
	}
}

type apiResponse struct {
	code int
	h    http.Header
	body string
}

func (a *apiServer) get(t *testing.T, path string, header map[string]string) apiResponse {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return apiResponse{resp.StatusCode, resp.Header, string(b)}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

const node2Graph = "/api/v1/clusters/demo/nodes/node-2/graphs/default"

// expandedApplied is the expanded view of a node's graph in the current applied
// set, as render computes it.
func expandedApplied(t *testing.T, a *apiServer, cluster, node, graph string) []byte {
	t.Helper()
	data, err := render.ExpandNode(a.loop.Workdir.SetFS(a.loop.Workdir.CurrentSerial()), cluster, node, graph)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestArtifactAPIServesTheAppliedGraph: the node's graph is the expanded view of
// its file of the applied set (every task's definition inline), byte for byte,
// with its sha256 as ETag; If-None-Match with it gives 304 and no body; JSON on
// Accept, with the JSON bytes' own sha256 as ETag, and the same data.
func TestArtifactAPIServesTheAppliedGraph(t *testing.T) {
	a := startAPI(t, nil)
	if r := a.get(t, node2Graph, nil); r.code != 503 || r.h.Get("Retry-After") == "" {
		t.Errorf("before any apply: %d %q, want 503 with Retry-After", r.code, r.body)
	}
	a.reconcile(t, operation.Applied)
	file := expandedApplied(t, a, "demo", "node-2", "default")
	if !strings.Contains(string(file), "puppet_manifest:") {
		t.Fatalf("the expanded view has no definitions:\n%s", file)
	}
	r := a.get(t, node2Graph, nil)
	if r.code != 200 || r.body != string(file) {
		t.Fatalf("GET: %d, body equal to the expanded view: %v\n%.300s", r.code, r.body == string(file), r.body)
	}
	etag := `"` + sha(file) + `"`
	if r.h.Get("ETag") != etag {
		t.Errorf("ETag %s, want %s", r.h.Get("ETag"), etag)
	}
	if ct := r.h.Get("Content-Type"); ct != "application/yaml" {
		t.Errorf("Content-Type %q", ct)
	}
	if r := a.get(t, node2Graph, map[string]string{"If-None-Match": etag}); r.code != 304 || r.body != "" || r.h.Get("ETag") != etag {
		t.Errorf("If-None-Match with the ETag: %d %q ETag %s, want 304, no body", r.code, r.body, r.h.Get("ETag"))
	}
	if r := a.get(t, node2Graph, map[string]string{"If-None-Match": `"0000", W/` + etag}); r.code != 304 {
		t.Errorf("If-None-Match with a list naming the weak ETag: %d, want 304", r.code)
	}
	if r := a.get(t, node2Graph, map[string]string{"If-None-Match": `"0000"`}); r.code != 200 || r.body != string(file) {
		t.Errorf("If-None-Match with another ETag: %d, want 200 and the graph", r.code)
	}

	// JSON.
	j := a.get(t, node2Graph, map[string]string{"Accept": "application/json"})
	if j.code != 200 || j.h.Get("Content-Type") != "application/json" || j.h.Get("ETag") != `"`+sha([]byte(j.body))+`"` {
		t.Fatalf("JSON: %d %s ETag %s, want the sha256 of the JSON bytes %s", j.code, j.h.Get("Content-Type"), j.h.Get("ETag"), sha([]byte(j.body)))
	}
	var fromJSON, fromYAML any
	if err := json.Unmarshal([]byte(j.body), &fromJSON); err != nil {
		t.Fatalf("the JSON does not parse: %v\n%.300s", err, j.body)
	}
	if err := yaml.Unmarshal(file, &fromYAML); err != nil {
		t.Fatal(err)
	}
	yj, _ := json.Marshal(fromYAML)
	jj, _ := json.Marshal(fromJSON)
	if string(yj) != string(jj) {
		t.Errorf("the JSON and the YAML differ:\n%s\n%s", jj, yj)
	}
	if r := a.get(t, node2Graph, map[string]string{"Accept": "application/json", "If-None-Match": j.h.Get("ETag")}); r.code != 304 {
		t.Errorf("JSON revalidation: %d, want 304", r.code)
	}
	if r := a.get(t, node2Graph, map[string]string{"Accept": "application/json", "If-None-Match": etag}); r.code != 200 {
		t.Errorf("JSON with the YAML's ETag: %d, want 200 (they are different bytes)", r.code)
	}
	if r.h.Get("Vary") != "Accept" {
		t.Errorf("Vary: %q", r.h.Get("Vary"))
	}
}

// TestArtifactAPINotFoundAndBadNames: unknown names are 404 with a body naming
// what is unknown; names that are not the loader's path names are 400 before
// any path is built, whatever they would escape to.
func TestArtifactAPINotFoundAndBadNames(t *testing.T) {
	a := startAPI(t, nil)
	a.reconcile(t, operation.Applied)
	for path, want := range map[string]string{
		"/api/v1/clusters/nosuch/nodes/node-1/graphs/default": `no cluster "nosuch" in the applied set (serial 1`,
		"/api/v1/clusters/demo/nodes/node-9/graphs/default":   `cluster "demo" has no node "node-9" in the applied set`,
		"/api/v1/clusters/demo/nodes/node-1/graphs/nosuch":    `node "node-1" of cluster "demo" has no graph "nosuch" in the applied set (serial 1); its graphs: default`,
		"/api/v1/clusters/nosuch":                             "applied clusters: demo, demo-hcl",
	} {
		if r := a.get(t, path, nil); r.code != 404 || !strings.Contains(r.body, want) {
			t.Errorf("%s: %d %q, want 404 with %q", path, r.code, r.body, want)
		}
	}
	for _, path := range []string{
		"/api/v1/clusters/demo/nodes/node-1/graphs/..%2F..%2F.state",
		"/api/v1/clusters/demo/nodes/..%2F..%2Fdemo/graphs/default",
		"/api/v1/clusters/%2E%2E/nodes/node-1/graphs/default",
		"/api/v1/clusters/demo/nodes/.hidden/graphs/default",
		"/api/v1/clusters/Demo",
		"/api/v1/clusters/demo/nodes/node-1/graphs/default.yaml%00",
		"/api/v1/clusters/" + strings.Repeat("a", 129),
	} {
		if r := a.get(t, path, nil); r.code != 400 || !strings.Contains(r.body, "is not a valid") {
			t.Errorf("%s: %d %q, want 400", path, r.code, r.body)
		}
	}
}

// TestArtifactAPIClusterSummary: the cluster's nodes with ids, roles and each
// graph's digest (the ETag its graph is served with), and the primaries.
func TestArtifactAPIClusterSummary(t *testing.T) {
	a := startAPI(t, nil)
	a.reconcile(t, operation.Applied)
	r := a.get(t, "/api/v1/clusters/demo", nil)
	var sum ClusterSummary
	if err := json.Unmarshal([]byte(r.body), &sum); r.code != 200 || err != nil {
		t.Fatalf("%d %v\n%s", r.code, err, r.body)
	}
	if sum.Cluster != "demo" || sum.Serial != 1 || len(sum.Nodes) != 6 || sum.Nodes[1].Name != "node-2" || sum.Nodes[1].ID != 2 {
		t.Errorf("summary: %+v", sum)
	}
	g := a.get(t, node2Graph, nil)
	if got := `"` + sum.Nodes[1].Graphs["default"] + `"`; got != g.h.Get("ETag") {
		t.Errorf("node-2's default digest %s, its graph's ETag %s", got, g.h.Get("ETag"))
	}
	if len(sum.Primary) == 0 {
		t.Errorf("no primaries: %+v", sum)
	}
}

// TestArtifactAPIToken: with a token, the read API needs it (401 without, 401
// with another, 200 with it), and the probes, status and page stay open.
func TestArtifactAPIToken(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) { s.APIToken = []byte("t0ken") })
	a.reconcile(t, operation.Applied)
	for _, path := range []string{node2Graph, "/api/v1/clusters/demo", "/api/v1/releases/quickstart-1.0/components"} {
		if r := a.get(t, path, nil); r.code != 401 || r.h.Get("WWW-Authenticate") == "" || !strings.Contains(r.body, "Authorization: Bearer") {
			t.Errorf("%s without a token: %d %q", path, r.code, r.body)
		}
		if r := a.get(t, path, map[string]string{"Authorization": "Bearer t0ken-not"}); r.code != 401 {
			t.Errorf("%s with another token: %d", path, r.code)
		}
		if r := a.get(t, path, map[string]string{"Authorization": "Basic dDBrZW4="}); r.code != 401 {
			t.Errorf("%s with basic auth: %d", path, r.code)
		}
		if r := a.get(t, path, map[string]string{"Authorization": "Bearer t0ken"}); r.code != 200 {
			t.Errorf("%s with the token: %d %q", path, r.code, r.body)
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/api/v1/status", "/", "/metrics"} {
		if r := a.get(t, path, nil); r.code != 200 {
			t.Errorf("%s without a token: %d, want 200 (open as before)", path, r.code)
		}
	}
}

// waitResult is a long-poll's answer and how long it took.
type waitResult struct {
	apiResponse
	took time.Duration
}

func (a *apiServer) longPoll(t *testing.T, path, etag, wait string) <-chan waitResult {
	t.Helper()
	out := make(chan waitResult, 1)
	go func() {
		start := time.Now()
		req, _ := http.NewRequest(http.MethodGet, a.base+path+"?wait="+wait, nil)
		req.Header.Set("If-None-Match", etag)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- waitResult{apiResponse{code: -1, body: err.Error()}, time.Since(start)}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- waitResult{apiResponse{resp.StatusCode, resp.Header, string(b)}, time.Since(start)}
	}()
	return out
}

// TestArtifactAPIWaitWakesOnChange: an agent waiting with its current ETag is
// answered with the new graph as soon as an apply changes its node's artifact;
// an agent of a node the apply does not change keeps waiting and gets 304 at
// its deadline. A wait is cut to the server's maximum.
func TestArtifactAPIWaitWakesOnChange(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) { s.MaxWait = 3 * time.Second })
	a.reconcile(t, operation.Applied)
	other := "/api/v1/clusters/demo-hcl/nodes/node-2/graphs/default"
	etag2, etagOther := a.get(t, node2Graph, nil).h.Get("ETag"), a.get(t, other, nil).h.Get("ETag")

	changed := a.longPoll(t, node2Graph, etag2, "60s") // cut to 3 s
	unchanged := a.longPoll(t, other, etagOther, "2s")
	gittest.WaitFor(t, "two waiting", func() bool { return len(a.srv.waiters) == 2 })
	select {
	case r := <-changed:
		t.Fatalf("answered before any change: %d %q", r.code, r.body)
	case <-time.After(300 * time.Millisecond):
	}
	// A change of cluster demo's node-2 only; demo-hcl is another cluster.
	gittest.EditFile(t, filepath.Join(a.dir, "clusters", "demo.yaml"), "tags: {assign: [backup]}", "tags: {assign: [backup], unassign: [rabbitmq]}")
	gittest.Commit(t, a.repo, "node-2 without rabbitmq")
	applied := time.Now()
	a.reconcile(t, operation.Applied)
	r := <-changed
	file := expandedApplied(t, a, "demo", "node-2", "default")
	if r.code != 200 || r.body != string(file) || r.h.Get("ETag") == etag2 || r.h.Get("ETag") != `"`+sha(file)+`"` {
		t.Fatalf("the waiting agent of node-2: %d ETag %s (was %s)\n%.200s", r.code, r.h.Get("ETag"), etag2, r.body)
	}
	if woke := time.Since(applied); woke > 2*time.Second {
		t.Errorf("woke %v after the apply began", woke)
	}
	u := <-unchanged
	if u.code != 304 || u.h.Get("ETag") != etagOther || u.took < 2*time.Second || u.took > 2500*time.Millisecond {
		t.Errorf("the agent of an unchanged node: %d after %v, want 304 at its 2 s deadline", u.code, u.took)
	}
	// A wait past the maximum is cut to it; an unchanged artifact answers 304.
	cut := <-a.longPoll(t, node2Graph, r.h.Get("ETag"), "1h")
	if cut.code != 304 || cut.took < 3*time.Second || cut.took > 4*time.Second {
		t.Errorf("wait=1h with a 3 s maximum: %d after %v", cut.code, cut.took)
	}
	// Without the current ETag, a wait answers at once.
	if now := <-a.longPoll(t, node2Graph, etag2, "60s"); now.code != 200 || now.took > time.Second {
		t.Errorf("a wait with an old ETag: %d after %v, want 200 at once", now.code, now.took)
	}
	if bad := a.get(t, node2Graph+"?wait=soon", nil); bad.code != 400 {
		t.Errorf("wait=soon: %d", bad.code)
	}
}

// TestArtifactAPIWaitOutlivesServeTimeouts: a wait longer than serve's read and
// write timeouts is answered (they are pushed past the wait), and while it
// waits its connection does not count against the connection cap: with a cap
// of 2 and two agents waiting, /healthz still answers.
func TestArtifactAPIWaitOutlivesServeTimeouts(t *testing.T) {
	a := startAPI(t, func(s *Server, l *Limits) {
		l.ReadTimeout, l.WriteTimeout, l.MaxConnections = time.Second, time.Second, 2
		s.writeTimeout = l.WriteTimeout
	})
	a.reconcile(t, operation.Applied)
	etag := a.get(t, node2Graph, nil).h.Get("ETag")
	w1, w2 := a.longPoll(t, node2Graph, etag, "3s"), a.longPoll(t, node2Graph, etag, "3s")
	gittest.WaitFor(t, "two waiting", func() bool { return len(a.srv.waiters) == 2 })
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(a.base + "/healthz")
	if err != nil {
		t.Fatalf("/healthz with two agents waiting and a cap of 2: %v", err)
	}
	resp.Body.Close()
	for _, w := range []<-chan waitResult{w1, w2} {
		if r := <-w; r.code != 304 || r.took < 3*time.Second {
			t.Errorf("a 3 s wait with 1 s timeouts: %d %q after %v, want 304 at 3 s", r.code, r.body, r.took)
		}
	}
}

// TestArtifactAPIWaitersCapped: beyond MaxWaiting, a wait is answered 429 with
// a Retry-After of 5 to 15 seconds at once; a request without wait is still
// served.
func TestArtifactAPIWaitersCapped(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) { s.MaxWaiting = 2 })
	a.reconcile(t, operation.Applied)
	etag := a.get(t, node2Graph, nil).h.Get("ETag")
	w1, w2 := a.longPoll(t, node2Graph, etag, "2s"), a.longPoll(t, node2Graph, etag, "2s")
	gittest.WaitFor(t, "two waiting", func() bool { return len(a.srv.waiters) == 2 })
	r := <-a.longPoll(t, node2Graph, etag, "2s")
	if sec, err := strconv.Atoi(r.h.Get("Retry-After")); r.code != 429 || err != nil || sec < RetryAfterMin || sec > RetryAfterMax || r.took > time.Second || !strings.Contains(r.body, "too many waiting requests (2)") {
		t.Errorf("a third wait with a cap of 2: %d %q Retry-After %q after %v", r.code, r.body, r.h.Get("Retry-After"), r.took)
	}
	if r := a.get(t, node2Graph, map[string]string{"If-None-Match": etag}); r.code != 304 {
		t.Errorf("a revalidation without wait at the cap: %d", r.code)
	}
	for _, w := range []<-chan waitResult{w1, w2} {
		if r := <-w; r.code != 304 {
			t.Errorf("a capped-in wait: %d", r.code)
		}
	}
}

// TestArtifactAPIRefusesAFileThatIsNotTheApplied: a graph file changed by hand
// in the applied set (its sha256 no longer the state's) is answered 500 and
// never served.
func TestArtifactAPIRefusesAFileThatIsNotTheApplied(t *testing.T) {
	a := startAPI(t, nil)
	a.reconcile(t, operation.Applied)
	p := filepath.Join(a.wd, "artifacts", "current", "demo", "nodes", "node-2", "default.yaml")
	if err := os.WriteFile(p, []byte("tasks: [rm -rf /]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, accept := range []string{"application/yaml", "application/json"} {
		r := a.get(t, node2Graph, map[string]string{"Accept": accept})
		if r.code != 500 || strings.Contains(r.body, "rm -rf") || !strings.Contains(r.body, "does not match the state's digest") {
			t.Errorf("%s of a file changed by hand: %d %q, want 500", accept, r.code, r.body)
		}
	}
	// The task catalogue the view is computed from is checked too.
	cat := filepath.Join(a.wd, "artifacts", "current", "demo", "tasks", "default.yaml")
	data, err := os.ReadFile(cat)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cat, []byte(strings.Replace(string(data), "puppet_manifest:", "puppet_manifest: /tmp/evil.pp\n      x:", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	other := "/api/v1/clusters/demo/nodes/node-3/graphs/default"
	if r := a.get(t, other, nil); r.code != 500 || strings.Contains(r.body, "evil") || !strings.Contains(r.body, "does not match the state's digest") {
		t.Errorf("a graph whose task catalogue was changed by hand: %d %q, want 500", r.code, r.body)
	}
}

// TestArtifactAPIWaitWakesOnDefinitionChange: a task definition edited in the
// release changes the task catalogue and no node file; an agent waiting with its
// ETag is still answered with its new graph (the view changed), and the cluster
// summary gives the new ETag.
func TestArtifactAPIWaitWakesOnDefinitionChange(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) { s.MaxWait = 5 * time.Second })
	a.reconcile(t, operation.Applied)
	before, _ := a.loop.Workdir.ReadState()
	etag := a.get(t, node2Graph, nil).h.Get("ETag")
	changed := a.longPoll(t, node2Graph, etag, "5s")
	gittest.WaitFor(t, "one waiting", func() bool { return len(a.srv.waiters) == 1 })
	gittest.EditFile(t, filepath.Join(a.dir, "plugins", "quickstart", "graphs", "deployment.yaml"),
		"globals/globals.pp\n    puppet_modules: /etc/puppet/modules\n    timeout: 120", "globals/globals.pp\n    puppet_modules: /etc/puppet/modules\n    timeout: 240")
	gittest.Commit(t, a.repo, "globals: a longer timeout")
	a.reconcile(t, operation.Applied)
	after, _ := a.loop.Workdir.ReadState()
	const nodeFile, catalogue = "demo/nodes/node-2/default.yaml", "demo/tasks/default.yaml"
	if before.Artifacts[nodeFile] != after.Artifacts[nodeFile] || before.Artifacts[catalogue] == after.Artifacts[catalogue] {
		t.Fatalf("the edit should change the task catalogue only: node file %v, catalogue %v",
			before.Artifacts[nodeFile] != after.Artifacts[nodeFile], before.Artifacts[catalogue] != after.Artifacts[catalogue])
	}
	r := <-changed
	file := expandedApplied(t, a, "demo", "node-2", "default")
	if r.code != 200 || r.body != string(file) || r.h.Get("ETag") != `"`+sha(file)+`"` || r.h.Get("ETag") == etag || r.took > 4*time.Second {
		t.Fatalf("the waiting agent of node-2: %d ETag %s (was %s) after %v\n%.200s", r.code, r.h.Get("ETag"), etag, r.took, r.body)
	}
	if !strings.Contains(r.body, "timeout: 240") {
		t.Errorf("the new graph has not the new definition:\n%s", r.body)
	}
	var sum ClusterSummary
	if err := json.Unmarshal([]byte(a.get(t, "/api/v1/clusters/demo", nil).body), &sum); err != nil {
		t.Fatal(err)
	}
	for _, n := range sum.Nodes {
		if n.Name == "node-2" && `"`+n.Graphs["default"]+`"` != r.h.Get("ETag") {
			t.Errorf("the summary's digest of node-2's default graph %s, its ETag %s", n.Graphs["default"], r.h.Get("ETag"))
		}
	}
}

// TestArtifactAPIFollowsOnlyTrees: a node's graph is served from its node
// directory, a symlink to a tree (in the cluster's nodes/ directory, itself
// shared between sets as a nodeset); a symlink planted in the set is refused
// even when it leads to the same bytes (a node directory linked to a copy of
// its tree outside the work directory's trees, a task catalogue linked to its
// own object).
func TestArtifactAPIFollowsOnlyTrees(t *testing.T) {
	a := startAPI(t, nil)
	a.reconcile(t, operation.Applied)
	cur := filepath.Join(a.wd, "artifacts", "current", "demo")
	if fi, err := os.Lstat(filepath.Join(cur, "nodes", "node-1")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("demo/nodes/node-1 is not a symlink to its tree: %v", err)
	}
	node1 := "/api/v1/clusters/demo/nodes/node-1/graphs/default"
	if r := a.get(t, node1, nil); r.code != 200 || r.body != string(expandedApplied(t, a, "demo", "node-1", "default")) {
		t.Fatalf("node-1 through its shared node directory: %d %q", r.code, r.body)
	}
	// node-2's directory linked to a copy of its tree, elsewhere.
	n2 := filepath.Join(cur, "nodes", "node-2")
	elsewhere := filepath.Join(t.TempDir(), "node-2")
	if err := os.CopyFS(elsewhere, os.DirFS(n2)); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(n2); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, n2); err != nil {
		t.Fatal(err)
	}
	if r := a.get(t, node2Graph, nil); r.code != 500 || !strings.Contains(r.body, "symlink") {
		t.Errorf("a node directory linked outside the trees: %d %q, want 500", r.code, r.body)
	}
	// The task catalogue linked to its own object: the same bytes, refused.
	cat := filepath.Join(cur, "tasks", "default.yaml")
	data, err := os.ReadFile(cat)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cat); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(a.wd, "objects", sha(data)[:2], sha(data)), cat); err != nil {
		t.Fatal(err)
	}
	node3 := "/api/v1/clusters/demo/nodes/node-3/graphs/default"
	if r := a.get(t, node3, nil); r.code != 500 || !strings.Contains(r.body, "symlink") {
		t.Errorf("a task catalogue linked to its object: %d %q, want 500", r.code, r.body)
	}
}
