package server

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fuelsync/fuelsync/controller"
	"github.com/fuelsync/fuelsync/operation"
)

// objectEntries reads an objects answer: each entry's digest and size.
func objectEntries(t *testing.T, body []byte) (sums []string, sizes []int) {
	t.Helper()
	br := bufio.NewReader(bytes.NewReader(body))
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			return sums, sizes
		}
		if err != nil {
			t.Fatalf("the answer stops within an entry's line: %q", line)
		}
		sum, size, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		n, err := strconv.Atoi(size)
		if err != nil {
			t.Fatalf("entry line %q", line)
		}
		if _, err := io.CopyN(io.Discard, br, int64(n)); err != nil {
			t.Fatalf("the answer stops within %s", sum)
		}
		sums, sizes = append(sums, sum), append(sizes, n)
	}
}

// TestObjectsDeduplicated: POST /api/v1/objects answers each digest once,
// in the order first asked, however often the body repeats it (13 MB of one
// digest was answered with 660 MB); and the answer stops before a bound of
// bytes (the reader renders what it did not get).
func TestObjectsDeduplicated(t *testing.T) {
	a := startAPI(t, func(s *Server, _ *Limits) { s.Replica = &controller.Replica{Shard: true} })
	a.reconcile(t, operation.Applied)
	st, err := a.loop.Workdir.ReadState()
	if err != nil {
		t.Fatal(err)
	}
	manifest, node := st.Artifacts["manifest.json"], st.Artifacts["demo/nodes/node-2/default.yaml"]
	if manifest == "" || node == "" || manifest == node {
		t.Fatalf("digests %q and %q", manifest, node)
	}
	var body strings.Builder
	for range 5000 {
		body.WriteString(manifest + "\n" + node + "\n")
	}
	resp, err := http.Post(a.base+"/api/v1/objects", "text/plain", strings.NewReader(body.String()))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %s", resp.Status, answer)
	}
	sums, sizes := objectEntries(t, answer)
	if !slices.Equal(sums, []string{manifest, node}) {
		t.Errorf("10,000 digests, two of them distinct: the answer has %d entries (%d bytes); want one each, in the order asked", len(sums), len(answer))
	}

	// The bound of the answer: the entries that fit, then it stops.
	rec := httptest.NewRecorder()
	writeObjects(rec, a.loop.Workdir, []string{manifest, node}, int64(sizes[0]+100))
	if got, _ := objectEntries(t, rec.Body.Bytes()); !slices.Equal(got, []string{manifest}) {
		t.Errorf("an answer bounded to %d bytes holds %v; want the first object only", sizes[0]+100, got)
	}
}
