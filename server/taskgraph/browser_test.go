package taskgraph

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// measure is a page's script (the test's page, not the server's, whose
// policy allows none) that writes the box, in CSS pixels, of the picture,
// each of its texts and each of its boxes' rectangles, as the browser laid
// them out.
const measure = `<pre id="out"></pre><script>
const r = e => { const b = e.getBoundingClientRect(); return {x: b.x, y: b.y, w: b.width, h: b.height}; };
const svg = document.querySelector("svg");
const out = {svg: r(svg), texts: [], boxes: []};
for (const t of svg.querySelectorAll("text")) {
  out.texts.push(Object.assign(r(t), {text: t.textContent, class: t.getAttribute("class") || t.parentNode.getAttribute("class"),
    size: parseFloat(getComputedStyle(t).fontSize), frame: r(t.previousElementSibling || t)}));
}
for (const g of svg.querySelectorAll("g.task > rect")) out.boxes.push(r(g));
document.getElementById("out").textContent = JSON.stringify(out);
</script>`

type rect struct{ X, Y, W, H float64 }

func (a rect) overlaps(b rect) bool {
	return a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H
}

func (a rect) within(b rect) bool {
	return a.X >= b.X && a.Y >= b.Y && a.X+a.W <= b.X+b.W && a.Y+a.H <= b.Y+b.H
}

type measured struct {
	SVG   rect
	Texts []struct {
		rect
		Text, Class string
		Size        float64
		Frame       rect
	}
	Boxes []rect
}

// TestPictureInBrowser draws the mitaka controller's graph (whole, focused
// on one task, and the failed path of a failed run) in headless chromium
// and checks, with the boxes the browser gave each text: no text overlaps
// another, each label is inside its box and each badge's text inside its
// badge, the text is at least 10 px, and the picture is at most 1,400 px
// wide. A screenshot of each is written to the test's artifact directory;
// FUELSYNC_UPDATE=1 writes the whole graph's to docs/img (WebP, at most 300 KB).
func TestPictureInBrowser(t *testing.T) {
	browser := testenv.Browser(t)
	data, err := os.ReadFile("testdata/mitaka-controller.yaml")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Read(data)
	if err != nil {
		t.Fatal(err)
	}
	status := map[string]string{}
	for _, task := range g.Tasks {
		status[task.ID] = "success"
	}
	status["primary-database"] = "failed"
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"mitaka-controller", Options{}},
		{"mitaka-controller-focus", Options{Focus: "primary-keystone"}},
		{"mitaka-controller-failed", Options{Failed: true, Status: status}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.Node = "node-1"
			tc.o.Link = func(task string) string { return "?focus=" + task }
			p := Draw(g, tc.o)
			page := filepath.Join(t.TempDir(), tc.name+".html")
			doc := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>` + tc.name + `</title></head><body style="margin:0">` + p.SVG
			if err := os.WriteFile(page, []byte(doc+measure+"</body></html>"), 0o644); err != nil {
				t.Fatal(err)
			}
			dom := runBrowser(t, browser, "file://"+page, "--dump-dom", fmt.Sprintf("--window-size=1400,%d", p.Height))
			m := regexp.MustCompile(`<pre id="out">([^<]*)</pre>`).FindSubmatch(dom)
			if m == nil {
				t.Fatalf("no measures in the page:\n%.2000s", dom)
			}
			var got measured
			if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &got); err != nil {
				t.Fatal(err)
			}
			checkMeasured(t, &got)
			t.Logf("%d × %d px: %d texts, %d boxes", int(got.SVG.W), int(got.SVG.H), len(got.Texts), len(got.Boxes))
			if err := os.WriteFile(page, []byte(doc+"</body></html>"), 0o644); err != nil {
				t.Fatal(err)
			}
			shot := filepath.Join(t.ArtifactDir(), tc.name+".png")
			runBrowser(t, browser, "file://"+page, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", p.Width, p.Height), "--hide-scrollbars")
			t.Logf("screenshot: %s", shot)
			if tc.name == "mitaka-controller" && os.Getenv("FUELSYNC_UPDATE") == "1" {
				// The docs' picture: WebP (a PNG of it is over 500 KB).
				img := filepath.Join("..", "..", "docs", "img", "taskgraph-mitaka-controller.webp")
				runBrowser(t, browser, "file://"+page, "--screenshot="+img, fmt.Sprintf("--window-size=%d,%d", p.Width, p.Height), "--hide-scrollbars")
				if fi, err := os.Stat(img); err != nil || fi.Size() > 300<<10 {
					t.Errorf("%s: %v; at most 300 KB", img, err)
				}
			}
		})
	}
}

// checkMeasured checks the browser's boxes of a picture's texts.
func checkMeasured(t *testing.T, m *measured) {
	t.Helper()
	if m.SVG.W > 1400 || m.SVG.W < 100 {
		t.Errorf("the picture is %.0f px wide; at most 1,400", m.SVG.W)
	}
	for i, a := range m.Texts {
		if a.Size < 10 {
			t.Errorf("%q is %.0f px", a.Text, a.Size)
		}
		if (a.Class == "label" || a.Class == "badge") && !a.rect.within(a.Frame) {
			t.Errorf("%s %q (%+v) is not inside its frame %+v", a.Class, a.Text, a.rect, a.Frame)
		}
		if !a.rect.within(m.SVG) {
			t.Errorf("%q (%+v) is outside the picture %+v", a.Text, a.rect, m.SVG)
		}
		for _, b := range m.Texts[:i] {
			if a.rect.overlaps(b.rect) {
				t.Errorf("%q (%+v) overlaps %q (%+v)", a.Text, a.rect, b.Text, b.rect)
			}
		}
	}
	if len(m.Texts) < len(m.Boxes) {
		t.Errorf("%d texts for %d boxes", len(m.Texts), len(m.Boxes))
	}
}

// runBrowser runs headless chromium on url with args, returning its output.
func runBrowser(t *testing.T, browser, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir()}, args...)
	cmd := exec.CommandContext(ctx, browser, append(args, url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, stderr.String())
	}
	return out
}
