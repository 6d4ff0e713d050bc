package server

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
)

// TestNodePageGraph: the node page draws the node's graph with the
// taskgraph package, each box a link to its focus; ?focus=TASK draws the
// task's requirements and dependents, ?failed=1 what the failed tasks
// blocked; a focus longer than a task id is refused.
func TestNodePageGraph(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) { s.AgentSecret = agentSecret })
	a.reconcile(t, operation.Applied)
	etag := a.get(t, node2Graph, nil).h.Get("ETag")
	if r := a.post(t, "demo", "node-2", reports.Token(agentSecret, "demo", "node-2"), reportBody(etag, reports.Failed)); r.code != 200 {
		t.Fatalf("node-2's report: %d %s", r.code, r.body)
	}
	const page = "/clusters/demo/nodes/node-2"
	for _, tc := range []struct {
		query  string
		code   int
		want   []string
		absent []string
	}{
		{"", 200, []string{`<svg xmlns="http://www.w3.org/2000/svg" class="taskgraph"`, `<a href="/clusters/demo/nodes/node-2?graph=default&amp;focus=keystone">`,
			`href="/clusters/demo/nodes/node-2?graph=default&amp;failed=1">the failed tasks`, "after stage deploy_start", "coloured by the last report"},
			[]string{"all tasks</a>"}},
		{"?focus=keystone", 200, []string{"keystone: the ", `stroke="#0550ae"`, `<a href="/clusters/demo/nodes/node-2?graph=default">all tasks</a>`}, nil},
		{"?failed=1", 200, []string{"The failed tasks (keystone) and the "}, []string{"<title>hiera ("}},
		{"?focus=" + strings.Repeat("x", reports.MaxTaskID+1), 400, []string{"focus: a task id is at most 256 bytes"}, nil},
	} {
		r := a.get(t, page+tc.query, nil)
		if r.code != tc.code {
			t.Errorf("%s: %d %s", tc.query, r.code, r.body)
		}
		for _, want := range tc.want {
			if !strings.Contains(string(r.body), want) {
				t.Errorf("%s lacks %q:\n%s", tc.query, want, r.body)
			}
		}
		for _, bad := range tc.absent {
			if strings.Contains(string(r.body), bad) {
				t.Errorf("%s has %q", tc.query, bad)
			}
		}
	}
}

// TestFleetPagesBrowser loads the status page, a cluster's page and a
// node's page in a real headless browser (Debian's chromium, which .ci/run
// installs; skipped without it, failed when CI=true): no script error, the
// health and converged columns, the node × state grid, the failed node's
// task graph as SVG coloured by its report; a screenshot of each page is
// written to the test's artifact directory (go test -artifacts keeps it).
func TestFleetPagesBrowser(t *testing.T) {
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		testenv.Unavailable(t, "no chromium installed (apt-get install chromium)")
	}
	a := startAPI(t, func(s *Server, _ *Limits) { s.AgentSecret = agentSecret })
	a.reconcile(t, operation.Applied)
	a.reportAll(t, reports.Success, "node-2")
	etag := a.get(t, node2Graph, nil).h.Get("ETag")
	if r := a.post(t, "demo", "node-2", reports.Token(agentSecret, "demo", "node-2"), reportBody(etag, reports.Failed)); r.code != 200 {
		t.Fatalf("node-2's report: %d %s", r.code, r.body)
	}
	out := t.ArtifactDir()
	for _, page := range []struct {
		path, shot string
		want       []string
	}{
		{"/", "status.png", []string{
			`<a href="/clusters/demo">demo</a>`, `<td><span class="badge st-degraded" title="degraded">⚠ degraded</span></td><td>5/6</td>`,
			"node node-2 failed graph default: task keystone failed: run by the test",
		}},
		{"/clusters/demo", "cluster-demo.png", []string{
			"<h1>Cluster demo</h1>", `<a href="/clusters/demo/nodes/node-2">node-2</a>`,
			`<th>converged</th><th>progressing</th><th>failed</th>`,
			`<td class="cell state-converged"></td><td class="cell state-progressing"></td><td class="cell state-failed">●</td>`,
			"failed <code>keystone</code>",
		}},
		{"/clusters/demo/nodes/node-2", "node-demo-node-2.png", []string{
			"<h1>Node node-2 of demo</h1>", `<svg xmlns="http://www.w3.org/2000/svg" class="taskgraph"`,
			"<title>hiera (puppet)", "after stage deploy_start", "<td><code>keystone</code></td><td class=\"report-failed\">failed</td>",
			`<meta http-equiv="refresh" content="10">`,
		}},
	} {
		t.Run(strings.TrimSuffix(page.shot, ".png"), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			url := a.base + page.path
			run := func(args ...string) ([]byte, string) {
				args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(),
					"--enable-logging=stderr", "--v=0"}, args...)
				cmd := exec.CommandContext(ctx, browser, append(args, url)...)
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				stdout, err := cmd.Output()
				if err != nil {
					t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
				}
				return stdout, stderr.String()
			}
			dom, logs := run("--dump-dom")
			for _, want := range page.want {
				if !strings.Contains(string(dom), want) {
					t.Errorf("%s in %s lacks %q:\n%s", page.path, filepath.Base(browser), want, dom)
				}
			}
			// A script error, or a resource the page's policy refused, is
			// logged by chromium as a console message.
			if m := regexp.MustCompile(`(?m)^.*(CONSOLE|Uncaught|Content Security Policy).*$`).FindAllString(logs, -1); m != nil {
				t.Errorf("%s: console messages:\n%s", page.path, strings.Join(m, "\n"))
			}
			shot := filepath.Join(out, page.shot)
			run("--screenshot="+shot, "--window-size=1280,1600", "--hide-scrollbars")
			if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
				t.Fatalf("screenshot %s: %v", shot, err)
			}
			t.Logf("screenshot of %s: %s", page.path, shot)
		})
	}
}
