package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/api"
	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/internal/gittest"
	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/runs"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// The pages in a real browser, with real content: every page is loaded in
// headless chromium (skipped without it, failed when CI=true) twice:
// through a test proxy that adds a script measuring where every text is
// drawn (the page's Content-Security-Policy lets that script run, nothing
// else), failing on a console message (a script error, or anything the
// policy refused), a missing text, or two texts that overlap; then as
// served, for a screenshot written to the test's artifact directory. Before
// the browser, each page must be answered 200 and whole.

// browserPage is a page to check: its path, its screenshot's name, and
// texts its DOM must hold.
type browserPage struct {
	path, shot string
	want       []string
}

// TestPagesBrowserFleet: the status page, and the pages of clusters held,
// suspended and awaiting approval, beside a healthy one and a degraded one
// with reconciles and reports.
func TestPagesBrowserFleet(t *testing.T) {
	browser := findBrowser(t)
	a := fleetWithStatuses(t)
	checkPages(t, browser, a.base, []browserPage{
		{"/", "fleet-status.png", []string{
			`<table class="clusters">`, `title="held">✖ held</span>`, `title="suspended">‖ suspended</span>`,
			`title="awaiting_approval">⌛ awaiting_approval</span>`, `title="degraded">⚠ degraded</span>`,
			"<th>pending roles</th>", "Last change set",
		}},
		{"/clusters/demo", "fleet-demo.png", []string{"<h1>Cluster demo</h1>", "<h2>Reconciles</h2>", "failed <code>keystone</code>", "</table>"}},
		{"/clusters/gated", "fleet-gated.png", []string{"<h2>Pending change set</h2>", `<pre class="pending">`, "fuelsync approve --cluster gated"}},
		{"/clusters/paused", "fleet-paused.png", []string{`title="suspended">‖ suspended</span>`, "<th>applied roles</th>"}},
		{"/clusters/broken", "fleet-broken.png", []string{`title="held">✖ held</span>`, `<ul class="error">`}},
		{"/clusters/demo/nodes/node-2", "fleet-node-2.png", []string{"<h1>Node node-2 of demo</h1>", "<svg"}},
	})
}

// TestPagesBrowserRuns: the pages of a deployment of examples/fuel-mitaka:
// a seven-node run in which a task failed, ended, and a run going on; its
// timeline's screenshot is docs/img/run-timeline.png (FUELSYNC_UPDATE=1
// writes it).
func TestPagesBrowserRuns(t *testing.T) {
	browser := findBrowser(t)
	m := mitakaWithRuns(t)
	out := checkPages(t, browser, m.base, []browserPage{
		{"/", "runs-status.png", []string{`<a href="/clusters/mitaka-ceph/runs/1">run 1</a>`, `title="failed">✖ failed</span>`, `title="running">▶ running</span>`}},
		{"/clusters/mitaka-ceph", "runs-cluster.png", []string{"<h2>Deployment runs</h2>", `<a href="/clusters/mitaka-ceph/runs/1">1</a>`}},
		{"/clusters/mitaka-ceph/runs/1", "run-timeline.png", []string{
			`<svg xmlns="http://www.w3.org/2000/svg" class="timeline"`, "<h2>Critical path</h2>", "<h2>Failed tasks</h2>",
			`<a href="/api/v1/clusters/mitaka-ceph/runs/1/output?node=node-4&amp;task=` + m.failed + `">output</a>`,
			`fill="#d93636"`, `fill="#f0a030"`, `stroke="#111"`,
		}},
		{"/clusters/mitaka/runs/1", "run-running.png", []string{`<meta http-equiv="refresh" content="10">`, `title="running">▶ running</span>`, "<title>now</title>"}},
		{"/clusters/mitaka-ceph/nodes/node-4", "runs-node-4.png", []string{"<h1>Node node-4 of mitaka-ceph</h1>"}},
	})
	if os.Getenv("FUELSYNC_UPDATE") == "1" {
		data, err := os.ReadFile(filepath.Join(out, "run-timeline.png"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join("..", "docs", "img", "run-timeline.png"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testenv.Unavailable(t, "no chromium installed (apt-get install chromium)")
	return ""
}

// checkPages checks pages of the server at base in browser, and returns
// the directory of their screenshots.
func checkPages(t *testing.T, browser, base string, pages []browserPage) string {
	t.Helper()
	proxy := serveOn(t, measuringProxy(base), DefaultLimits)
	out := t.ArtifactDir()
	for _, page := range pages {
		t.Run(strings.TrimSuffix(page.shot, ".png"), func(t *testing.T) {
			code, body := httpGet(t, base, page.path)
			if code != 200 || !strings.HasSuffix(body, "</html>\n") {
				t.Fatalf("GET %s: %d, want 200 and the page whole; it ends %q", page.path, code, body[max(0, len(body)-200):])
			}
			dom, logs := runBrowser(t, browser, proxy+page.path, "--dump-dom")
			for _, want := range page.want {
				if !strings.Contains(dom, want) {
					t.Errorf("%s lacks %q:\n%s", page.path, want, dom)
				}
			}
			// A script error, or a resource the page's policy refused, is
			// logged by chromium as a console message.
			if m := regexp.MustCompile(`(?m)^.*(CONSOLE|Uncaught|Content Security Policy).*$`).FindAllString(logs, -1); m != nil {
				t.Errorf("%s: console messages:\n%s", page.path, strings.Join(m, "\n"))
			}
			m := regexp.MustCompile(`<pre id="fuelsync-overlaps">([^<]*)</pre>`).FindStringSubmatch(dom)
			if m == nil {
				t.Fatalf("%s: the measure did not run:\n%s", page.path, dom)
			}
			var res struct {
				Texts    int      `json:"texts"`
				Overlaps []string `json:"overlaps"`
			}
			if err := json.Unmarshal([]byte(htmlUnescape(m[1])), &res); err != nil {
				t.Fatal(err)
			}
			if res.Texts == 0 || len(res.Overlaps) > 0 {
				t.Errorf("%s: %d texts drawn, these overlap: %q", page.path, res.Texts, res.Overlaps)
			}
			shot := filepath.Join(out, page.shot)
			runBrowser(t, browser, base+page.path, "--screenshot="+shot, "--hide-scrollbars")
			if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
				t.Fatalf("screenshot %s: %v", shot, err)
			}
			t.Logf("%s: %d bytes, %d texts, none overlapping; screenshot %s", page.path, len(body), res.Texts, shot)
		})
	}
	return out
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&quot;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}

// runBrowser runs headless chromium on url with args; its stdout and its
// log.
func runBrowser(t *testing.T, browser, url string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--window-size=1400,1000"}, args...)
	cmd := exec.CommandContext(ctx, browser, append(args, url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
	}
	return string(stdout), stderr.String()
}

// measureScript finds every text drawn (a text node's boxes, line by line;
// an SVG text's box) and writes the pairs that overlap by more than 2 px
// each way into <pre id="fuelsync-overlaps">, as JSON.
const measureScript = `<script nonce="fuelsync-test">(function(){
var rects=[],w=document.createTreeWalker(document.body,NodeFilter.SHOW_TEXT),n;
while((n=w.nextNode())){
 var s=n.data.trim(),p=n.parentNode;
 if(!s||!p||p.closest('title,script,style'))continue;
 var list;
 if(p instanceof SVGElement){list=[p.getBoundingClientRect()];}
 else{var r=document.createRange();r.selectNodeContents(n);list=Array.from(r.getClientRects());}
 list.forEach(function(b){if(b.width>0&&b.height>0)rects.push({t:s.slice(0,40),x:b.left,y:b.top,w:b.width,h:b.height});});
}
rects.sort(function(a,b){return a.x-b.x;});
var out=[];
for(var i=0;i<rects.length;i++){var a=rects[i];
 for(var j=i+1;j<rects.length&&rects[j].x<a.x+a.w;j++){var b=rects[j];
  var ox=Math.min(a.x+a.w,b.x+b.w)-Math.max(a.x,b.x),oy=Math.min(a.y+a.h,b.y+b.h)-Math.max(a.y,b.y);
  if(ox>2&&oy>2&&out.length<50)out.push(a.t+" | "+b.t);}}
var pre=document.createElement('pre');pre.id='fuelsync-overlaps';
pre.textContent=JSON.stringify({texts:rects.length,overlaps:out});document.body.appendChild(pre);
})();</script>`

// measuringProxy serves the pages of base with measureScript added, their
// Content-Security-Policy letting that script run and nothing else.
func measuringProxy(base string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(base + r.URL.RequestURI())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Security-Policy", resp.Header.Get("Content-Security-Policy")+"; script-src 'nonce-fuelsync-test'")
		w.Header().Del("Content-Length")
		w.WriteHeader(resp.StatusCode)
		io.WriteString(w, strings.Replace(string(body), "</body>", measureScript+"</body>", 1))
	})
}

// fleetWithStatuses is the quickstart with three more clusters, copies of
// demo: gated (sync: manual) awaiting approval of a change, paused
// suspended with a change, broken held by an error; demo's node-2 failed
// its last report, the others succeeded.
func fleetWithStatuses(t *testing.T) *apiServer {
	a := startAPI(t, func(s *Server, _ *Limits) { s.AgentSecret = agentSecret })
	demo, err := os.ReadFile(filepath.Join(a.dir, "clusters", "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, spec string) {
		if err := os.WriteFile(filepath.Join(a.dir, "clusters", name+".yaml"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := func(name, policy, edit string) string {
		s := strings.Replace(string(demo), "cluster: demo ", "cluster: "+name+" ", 1) + policy
		return strings.Replace(s, "node-6: {id: 6, roles: [monitor]}", edit, 1)
	}
	same := "node-6: {id: 6, roles: [monitor]}"
	write("gated", spec("gated", "sync: manual\n", same))
	write("paused", spec("paused", "", same))
	write("broken", spec("broken", "", same))
	gittest.Commit(t, a.repo, "three more clusters")
	a.reconcile(t, operation.Applied) // a new cluster is applied, sync: manual or not
	a.reportAll(t, reports.Success, "node-2")
	etag := a.get(t, node2Graph, nil).h.Get("ETag")
	if r := a.post(t, "demo", "node-2", reports.Token(agentSecret, "demo", "node-2"), reportBody(etag, reports.Failed)); r.code != 200 {
		t.Fatalf("node-2's report: %d %s", r.code, r.body)
	}
	moved := "node-6: {id: 6, roles: [compute]}"
	write("gated", spec("gated", "sync: manual\n", moved))
	write("paused", spec("paused", "suspend: true\n", moved))
	write("broken", strings.Replace(spec("broken", "", moved), "release: quickstart-1.0", "release: nope-1.0", 1))
	gittest.Commit(t, a.repo, "node-6 a compute; paused suspended; broken's release unknown")
	a.reconcile(t, operation.Invalid)
	for name, want := range map[string]string{"gated": state.StatusAwaitingApproval, "paused": state.StatusSuspended, "broken": state.StatusHeld, "demo": state.StatusSynced} {
		if got := a.clusterInfo(t, name).Status; got != want {
			t.Errorf("cluster %s is %s, want %s", name, got, want)
		}
	}
	return a
}

// mitakaRuns is a serve of examples/fuel-mitaka with runs: mitaka-ceph's
// run 1 ended, task failed of node-4 failed; mitaka's run 1 goes on.
type mitakaRuns struct {
	base   string
	failed string
}

// fakeClock is the coordinator's clock, which the simulated agents move.
type fakeClock struct {
	mu sync.Mutex
	at time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.at }
func (c *fakeClock) set(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = at
}

func mitakaWithRuns(t *testing.T) *mitakaRuns {
	dir, repo := gittest.Example(t, "fuel-mitaka")
	// Runs start on demand only: the test starts them (with deploy: auto, a
	// run ending kicks a run of every cluster not deployed yet).
	if err := os.WriteFile(filepath.Join(dir, "fuelsync.yaml"), []byte("deploy: manual\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Commit(t, repo, "deploy: manual")
	loop := &controller.Loop{Workdir: state.Open(filepath.Join(t.TempDir(), "wd")), Source: &source.LocalSource{Path: dir}, ToolVersion: "test"}
	srv := New(loop, []byte("s3cret"))
	srv.AgentSecret = agentSecret
	clock := &fakeClock{at: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	coord := &runs.Coordinator{Store: runs.Open(loop.Workdir), Heartbeat: 24 * time.Hour, Now: clock.now}
	srv.EnableRuns(coord)
	base := serveOn(t, srv.Handler(), DefaultLimits)
	if o := loop.ReconcileOnce(context.Background()); o != operation.Applied {
		t.Fatalf("reconcile: %s %q", o, loop.Status().Errors)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); coord.Shutdown() }) // before the work directory goes
	if err := coord.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	m := &mitakaRuns{base: base}
	nodes := []string{render.MasterNode, "node-1", "node-2", "node-3", "node-4", "node-5", "node-6", "node-7"}
	given := 0
	fail := func(node, task string) bool {
		if node == "node-4" {
			if given++; given == 30 {
				m.failed = task
				return true
			}
		}
		return false
	}
	start := func(cluster string) string {
		h, code, err := srv.start(ctx, cluster, api.StartRun{Graph: "default"}, "request")
		if err != nil {
			t.Fatalf("starting a run of %s: %d %v", cluster, code, err)
		}
		return h.ID
	}
	id := start("mitaka-ceph")
	simulateAgents(t, ctx, coord, clock, "mitaka-ceph", id, nodes, fail, 0)
	if m.failed == "" {
		t.Fatal("node-4 did not run 30 tasks")
	}
	id = start("mitaka")
	simulateAgents(t, ctx, coord, clock, "mitaka", id, nodes[:7], nil, 60)
	return m
}

// simulateAgents runs the agents of nodes in this goroutine, at the times
// of clock: each takes its next task and reports it after its duration
// (30 s to 3 min, a fixed function of its node and id), failed when fail
// says so; after steps reports (0: none), it leaves the run going on.
func simulateAgents(t *testing.T, ctx context.Context, c *runs.Coordinator, clock *fakeClock, cluster, id string, nodes []string, fail func(node, task string) bool, steps int) {
	t.Helper()
	type busy struct {
		as   *api.Assignment
		done time.Time
	}
	running := map[string]busy{}
	idle := 0
	for step := 1; ; step++ {
		// A node's next task may come a moment after the report that let
		// it start (the sync node's no-ops settle): when no node runs one,
		// each waits a little for it, until the run ends.
		var wait time.Duration
		if len(running) == 0 {
			r, err := c.Run(ctx, cluster, id, api.TasksNone)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != api.RunRunning {
				return
			}
			if idle++; idle > 200 {
				t.Fatalf("run %s of %s: no task given for 200 rounds, and it goes on", id, cluster)
			}
			wait = 50 * time.Millisecond
		}
		for _, n := range nodes {
			if _, ok := running[n]; ok {
				continue
			}
			as, err := c.Next(ctx, cluster, n, wait)
			if err != nil {
				t.Fatal(err)
			}
			if as != nil {
				h := fnv.New32a()
				h.Write([]byte(n + "\x00" + as.Task.ID))
				running[n] = busy{as, clock.now().Add(time.Duration(30+h.Sum32()%150) * time.Second)}
				idle = 0
			}
		}
		if steps > 0 && step > steps {
			return
		}
		if len(running) == 0 {
			continue
		}
		next := slices.MinFunc(slices.Sorted(func(yield func(string) bool) {
			for n := range running {
				if !yield(n) {
					return
				}
			}
		}), func(a, b string) int { return running[a].done.Compare(running[b].done) })
		b := running[next]
		delete(running, next)
		clock.set(b.done)
		st := api.TaskSucceeded
		if fail != nil && fail(next, b.as.Task.ID) {
			st = api.TaskFailed
		}
		rep := &api.TaskReport{Task: b.as.Task.ID, Attempt: b.as.Attempt, Status: st,
			Output: fmt.Sprintf("notice: applying %s on %s\n", b.as.Task.ID, next)}
		if st == api.TaskFailed {
			rep.Message, rep.Output = "puppet exited 6", rep.Output+"Error: Could not start Service[keystone]: Execution of '/usr/sbin/service keystone start' returned 1\n"
		}
		if _, err := c.Report(ctx, cluster, next, id, rep); err != nil {
			t.Fatalf("report %s@%s: %v", b.as.Task.ID, next, err)
		}
	}
}

// TestClusterPlanAPI: GET /api/v1/clusters/<c>/plan answers the plan a
// cluster awaits approval of, with its change set; 404 for a cluster that
// awaits none, and for one that does not exist.
func TestClusterPlanAPI(t *testing.T) {
	a := fleetWithStatuses(t)
	r := a.get(t, "/api/v1/clusters/gated/plan", nil)
	var p ClusterPlan
	if err := json.Unmarshal([]byte(r.body), &p); r.code != 200 || err != nil {
		t.Fatalf("the plan of gated: %d %v %s", r.code, err, r.body)
	}
	if p.Status != state.StatusAwaitingApproval || p.Pending == nil || p.Pending.Revision == "" || p.Changes == nil ||
		!strings.Contains(p.Text, "cluster gated") || !strings.Contains(p.Text, "node-6") {
		t.Errorf("the plan of gated: %s", r.body)
	}
	for path, want := range map[string]string{"/api/v1/clusters/demo/plan": "no plan awaiting approval (its status is synced)", "/api/v1/clusters/nope/plan": "nope"} {
		if r := a.get(t, path, nil); r.code != 404 || !strings.Contains(r.body, want) {
			t.Errorf("%s: %d %q, want 404 saying %q", path, r.code, r.body, want)
		}
	}
}
