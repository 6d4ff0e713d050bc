package diff

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// checkScan fails when render.ScanNodeFile accepts data and readNodeV2 reads
// something else than yaml.v3 does.
func checkScan(t *testing.T, name string, data []byte) bool {
	t.Helper()
	if _, ok := render.ScanNodeFile(data); !ok {
		return false
	}
	got, err := readNodeV2(name, data)
	if err != nil {
		t.Fatal(err)
	}
	want, err := yamlNodeV2(name, data)
	if err != nil {
		t.Fatalf("%s: scanned, but yaml.v3 refuses it: %v\n%s", name, err, data)
	}
	if d := cmp.Diff(want, got, cmp.AllowUnexported(taskDoc{}), cmp.Comparer(func(a, b yaml.Node) bool { return sameNode(&a, &b) })); d != "" {
		t.Fatalf("%s: scanned differently from yaml.v3 (-yaml +scan):\n%s", name, d)
	}
	return true
}

// TestScanNodeV2: the line scanner (render.ScanNodeFile) reads the node files
// fuelsync writes as yaml.v3 does, on the examples and a generated repository with cross-node edges, and
// reads nearly all of them (else the fast path would be dead code).
func TestScanNodeV2(t *testing.T) {
	sides := map[string]*Side{
		"quickstart": renderSide(t, quickstart(t), nil, nil),
	}
	gen := repogen.Generate(repogen.Heavy(40))
	sides["heavy"] = renderAll(t, gen)
	for label, s := range sides {
		scanned, total := 0, 0
		for name := range s.Digests {
			if kind, _, _, _ := artifactPath(name); kind != "node" {
				continue
			}
			data, err := s.Read(name)
			if err != nil {
				t.Fatal(err)
			}
			total++
			if checkScan(t, name, data) {
				scanned++
			}
		}
		if total == 0 || scanned < total*9/10 {
			t.Errorf("%s: %d of %d node files scanned; want nearly all", label, scanned, total)
		}
	}
	for _, tc := range []struct {
		name, data string
	}{
		{"quoted id", "format_version: 2\nnode: n1\ntasks:\n  - id: \"yes\"\n"},
		{"bool id", "format_version: 2\nnode: n1\ntasks:\n  - id: yes\n"},
		{"inline definition", "format_version: 2\nnode: n1\ntasks:\n  - id: a\n    type: puppet\n"},
		{"quoted requirement", "format_version: 2\nnode: n1\ntasks:\n  - id: a\n    requires: ['b@n2']\n"},
		{"block requires", "format_version: 2\nnode: n1\ntasks:\n  - id: a\n    requires:\n      - b\n"},
		{"requires twice", "format_version: 2\nnode: n1\ntasks:\n  - id: a\n    requires: [b]\n    requires: [c]\n"},
		{"no node", "format_version: 2\ntasks:\n  - id: a\n"},
		{"no format_version", "node: n1\ntasks:\n  - id: a\n"},
		{"tasks null", "format_version: 2\nnode: n1\ntasks:\n"},
		{"comment", "format_version: 2\nnode: n1\ntasks:\n  - id: a # x\n"},
	} {
		if _, ok := render.ScanNodeFile([]byte(tc.data)); ok {
			t.Errorf("%s: scanned %q; want it left to yaml.v3", tc.name, tc.data)
		}
	}
	if !checkScan(t, "small", []byte("cluster: c\nformat_version: 2\nnode: n1\ntasks:\n  - id: a\n    requires: [b@n2, c]\n  - id: b.1\n")) {
		t.Error("a plain file was not scanned")
	}
}

// FuzzScanNodeV2: whatever the scanner accepts, yaml.v3 reads the same.
func FuzzScanNodeV2(f *testing.F) {
	f.Add([]byte("format_version: 2\nnode: n1\ntasks:\n  - id: a\n    requires: [b@n2, c]\n"))
	f.Add([]byte("cluster: c\nnode: node-1\ntasks: []\n"))
	f.Add([]byte("node: n1\ntasks:\n  - id: a\n    requires: [x@y@n2]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if strings.ContainsRune(string(data), 0) {
			return
		}
		checkScan(t, "fuzz", data)
	})
}

// renderAll renders every cluster of fsys into a side.
func renderAll(t *testing.T, fsys fs.FS) *Side {
	t.Helper()
	repo, diags := loader.Load(fsys, loader.Options{})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags.Errs())
	}
	rs, diags := render.Render(repo, render.Options{})
	if diags.HasErrors() {
		t.Fatalf("render: %v", diags.Errs())
	}
	s, err := RenderedSide(rs, "rev", "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
