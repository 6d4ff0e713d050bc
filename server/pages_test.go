package server

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/testenv"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/reports"
)

// TestGraphSVGEscapes: every name in the picture is escaped, a graph over the
// bound is cut with a note, and other nodes' tasks are drawn dashed.
func TestGraphSVGEscapes(t *testing.T) {
	graph := `tasks:
  - id: "<script>alert(1)</script>"
    type: puppet
    requires:
      - {node: sync, task: deploy_start}
  - id: b&c
    type: shell
    requires:
      - {node: node-1, task: "<script>alert(1)</script>"}
`
	svg, err := graphSVG([]byte(graph), `node-1"><x`, map[string]string{"b&c": "failed"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(svg, "<script") || strings.Contains(svg, `"><x`) || strings.Contains(svg, "b&c") {
		t.Errorf("a name is not escaped:\n%s", svg)
	}
	for _, want := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "b&amp;c: failed", `fill="#f6d0d0"`, "deploy_start@sync", `stroke-dasharray="4 3"`, "<line "} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture lacks %q:\n%s", want, svg)
		}
	}
	var big strings.Builder
	big.WriteString("tasks:\n")
	for i := range maxDrawnTasks + 5 {
		big.WriteString("  - {id: t" + strings.Repeat("x", i%3) + string(rune('a'+i%26)) + "-" + strconv.Itoa(i) + ", type: shell}\n")
	}
	svg, err = graphSVG([]byte(big.String()), "node-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(svg, "<rect"); n != maxDrawnTasks || !strings.Contains(svg, "5 more tasks not drawn (at most 300 boxes are)") {
		t.Errorf("%d boxes for %d tasks; the note: %v", n, maxDrawnTasks+5, strings.Contains(svg, "more tasks not drawn"))
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
			"<title>hiera</title>", "deploy_start@sync", "<td><code>keystone</code></td><td class=\"report-failed\">failed</td>",
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

// TestGraphSVGGroupsOtherNodes: the other nodes' tasks count in the bound of
// boxes, and a task waited for on many nodes is one box ("nova-compute on
// 2,000 nodes"): one controller task waiting for three tasks of 2,000
// computes drew 6,015 boxes, 950,360 px wide, 2 MB a view.
func TestGraphSVGGroupsOtherNodes(t *testing.T) {
	var g strings.Builder
	g.WriteString("tasks:\n  - id: hiera\n    type: puppet\n  - id: openstack-controller\n    type: puppet\n    requires:\n      - {task: hiera}\n")
	for _, task := range []string{"nova-compute", "openstack-network-compute", "ceilometer-compute"} {
		for i := range 2000 {
			fmt.Fprintf(&g, "      - {node: node-%d, task: %s}\n", 100+i, task)
		}
	}
	g.WriteString("      - {node: node-2, task: database}\n")
	svg, err := graphSVG([]byte(g.String()), "node-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	boxes := strings.Count(svg, "<rect")
	t.Logf("%d boxes, %d bytes", boxes, len(svg))
	if boxes != 6 || len(svg) > 20_000 {
		t.Errorf("%d boxes, %d bytes; want 6 (2 own tasks, 3 groups of 2,000 nodes, database@node-2), a few KB", boxes, len(svg))
	}
	for _, want := range []string{"nova-compute on 2,000 nodes", "waits for nova-compute on 2,000 nodes: node-100, node-101, node-102", "database@node-2"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the picture lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`width="(\d+)"`).FindStringSubmatch(svg); m == nil || len(m[1]) > 4 {
		t.Errorf("the picture is %v px wide", m)
	}

	// 250 own tasks, each waiting for two tasks of its own on another node:
	// 750 boxes in all. At most maxDrawnTasks are drawn, own and others'
	// together, and the note counts what is left out.
	g.Reset()
	g.WriteString("tasks:\n")
	for i := range 250 {
		fmt.Fprintf(&g, "  - id: t-%03d\n    type: shell\n    requires:\n      - {node: node-%d, task: a-%d}\n      - {node: node-%d, task: b-%d}\n", i, 2+i%3, i, 2+i%3, i)
	}
	svg, err = graphSVG([]byte(g.String()), "node-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(svg, "<rect"); n > maxDrawnTasks || n < maxDrawnTasks-3 {
		t.Errorf("%d boxes; want at most (and about) %d", n, maxDrawnTasks)
	}
	if !regexp.MustCompile(`\d+ more tasks not drawn \(150 of this node's, \d+ of other nodes'\); at most 300 boxes are`).MatchString(html.UnescapeString(svg)) {
		t.Errorf("the note of what is left out: %s", regexp.MustCompile(`<text[^>]*sans-serif[^>]*>[^<]*</text>`).FindString(svg))
	}
}
