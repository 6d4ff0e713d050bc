package server

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestStatusPagePaginated: 300 cluster specs that do not validate, beside
// the quickstart's two clusters: the status page lists at most
// maxPageClusters clusters a page, says how many there are, and links to
// the next and previous pages; and the reconcile history keeps directories
// only for clusters applied (10,000 broken specs gave a 3.4 MB page and
// 10,002 history directories, one per cluster named, applied or not).
func TestStatusPagePaginated(t *testing.T) {
	const n = 300
	srv, wd := withSpecs(t, n, nil, func(i int) (string, string) {
		return fmt.Sprintf("broken-%03d.yaml", i), fmt.Sprintf("name: broken-%03d\nrelease: nope\nnodes: {}\n", i)
	})
	base := serveOn(t, srv.Handler(), DefaultLimits)
	get := func(path string) (int, string) { return httpGet(t, base, path) }
	rows := regexp.MustCompile(`<tr><td><a href="/clusters/([^"]+)">`)
	code, page := get("/")
	clusters := rows.FindAllStringSubmatch(page, -1)
	t.Logf("the status page: %d bytes, %d cluster rows", len(page), len(clusters))
	if code != 200 || len(clusters) != maxPageClusters || !strings.Contains(page, fmt.Sprintf("Clusters 1–%d of %d", maxPageClusters, n+2)) ||
		!strings.Contains(page, `<a href="/?page=2">next</a>`) || strings.Contains(page, "previous") {
		t.Errorf("page 1: %d, %d cluster rows, the navigation: %q", code, len(clusters), regexp.MustCompile(`<p class="pages">.*</p>`).FindString(page))
	}
	if len(clusters) > 0 && clusters[0][1] != "broken-000" || strings.Contains(page, "<h3>demo</h3>") {
		t.Errorf("page 1 starts with %v, and shows demo's nodes: %t", clusters[:1], strings.Contains(page, "<h3>demo</h3>"))
	}
	code, page = get(fmt.Sprintf("/?page=%d", (n+2+maxPageClusters-1)/maxPageClusters))
	clusters = rows.FindAllStringSubmatch(page, -1)
	if code != 200 || len(clusters) == 0 || clusters[len(clusters)-1][1] != "demo-hcl" || !strings.Contains(page, "previous</a>") || strings.Contains(page, ">next<") {
		t.Errorf("the last page: %d, %d rows, the last %v", code, len(clusters), clusters[len(clusters)-1:])
	}
	if !strings.Contains(page, "<td>node-2</td>") {
		t.Error("the last page does not list demo's nodes")
	}
	for _, bad := range []string{"?page=0", "?page=x", "?page=99"} {
		if code, body := get("/" + bad); code != 400 || !strings.Contains(body, "the status page has pages 1 to 4 (302 clusters, 100 a page)") {
			t.Errorf("/%s: %d %.200q; want 400 saying which pages there are", bad, code, body)
		}
	}
	entries, err := os.ReadDir(filepath.Join(wd, "reports", "reconciles"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("%d reconcile history directories; want 2, one per cluster applied (demo, demo-hcl)", len(entries))
	}
}
