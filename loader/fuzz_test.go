package loader

import (
	"os"
	"path/filepath"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/internal/testenv"
)

// checkRanges fails when a diagnostic points outside the file it names.
func checkRanges(t *testing.T, diags hcl.Diagnostics, files map[string][]byte) {
	t.Helper()
	for _, d := range diags {
		if d.Subject == nil {
			continue
		}
		src, ok := files[d.Subject.Filename]
		if !ok {
			continue
		}
		s := d.Subject
		if s.Start.Line < 1 || s.Start.Column < 1 || s.Start.Byte < 0 || s.Start.Byte > len(src) || s.End.Byte > len(src) || s.End.Byte < s.Start.Byte {
			t.Fatalf("diagnostic %q has range %v outside the %d-byte file", d.Summary, s, len(src))
		}
	}
}

func addSeeds(f *testing.F, glob string) {
	files, _ := filepath.Glob(glob)
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
}

// FuzzDecodeYAML: any bytes decode without a panic, and every range lies inside
// the file.
func FuzzDecodeYAML(f *testing.F) {
	for _, s := range []string{"", "[]", "a: 1\na: 2\n", "b: !!pairs\n - a: 1\n", "x: &a [*a]\n", "<<: {a: 1}\n", "a: &a [1]\nb: [*a, *a]\n", "\"\\u00e9\": [1, {b: ~}]\n", "- ? a\n  : b\n"} {
		f.Add([]byte(s))
	}
	addSeeds(f, "../examples/quickstart/plugins/*/*.yaml")
	f.Fuzz(func(t *testing.T, src []byte) {
		v, diags := DecodeYAML("f.yaml", src)
		checkRanges(t, diags, map[string][]byte{"f.yaml": src})
		if v != nil {
			_ = v.Interface()
		}
	})
}

// FuzzClusterHCL: any HCL cluster spec converts and validates without a panic.
//
// An input takes about 0.2 ms, yet the target ran 0 inputs a second after its
// first seconds: the fuzzing engine minimized each input that found new
// coverage for up to a minute (quadratic in its length; the quickstart's spec
// is 1.4 KB), running no new input meanwhile. Minimizing takes at most a second
// an input unless -fuzzminimizetime says otherwise (testenv.ShortMinimize).
func FuzzClusterHCL(f *testing.F) {
	testenv.ShortMinimize(f, "1s")
	for _, s := range []string{
		"cluster \"a\" {\n  release = \"r\"\n}\n",
		"locals {\n  n = [\"a\", \"b\"]\n}\ncluster \"a\" {\n  node \"c\" {\n    for_each = toset(local.n)\n    roles = [\"compute\"]\n  }\n}\n",
		"cluster \"a\" {\n  node \"n\" {\n    tags {\n      assign = [\"x:1\"]\n    }\n  }\n}\n",
		"locals {\n  a = local.b\n  b = local.a\n}\n",
	} {
		f.Add([]byte(s))
	}
	addSeeds(f, "../examples/quickstart/clusters/*.hcl")
	f.Fuzz(func(t *testing.T, src []byte) {
		v, diags := clusterHCLToValue("c.hcl", src)
		checkRanges(t, diags, map[string][]byte{"c.hcl": src})
		if v != nil && !diags.HasErrors() {
			l := &loadCtx{r: newRepoFS(fstest.MapFS{}, 0)}
			l.paths = newPathLoader(l.r)
			_, d := l.clusterFromValue("c.hcl", v)
			checkRanges(t, d, map[string][]byte{"c.hcl": src})
		}
	})
}

// FuzzPathLoader: a fuzzed metadata.yaml whose `_path` keys point into a fixed tree
// (files, globs, a cycle, escapes) loads without a panic.
func FuzzPathLoader(f *testing.F) {
	for _, s := range []string{
		"a_path: one.yaml\n", "a_path: '*.yaml'\n", "a_path: 'dir/**/*.yaml'\n", "a_path: cyc1.yaml\n",
		"a_path: ../x.yaml\n", "a_path: /etc/passwd\n", "a_path: dir\n", "x: [{b_path: list.yaml}]\n", "a_path: mixed/*.yaml\n",
	} {
		f.Add([]byte(s))
	}
	tree := fstest.MapFS{
		"p/one.yaml":         {Data: []byte("k: v\n")},
		"p/list.yaml":        {Data: []byte("- 1\n- 2\n")},
		"p/cyc1.yaml":        {Data: []byte("n_path: cyc2.yaml\n")},
		"p/cyc2.yaml":        {Data: []byte("n_path: cyc1.yaml\n")},
		"p/dir/a/x.yaml":     {Data: []byte("- x\n")},
		"p/dir/b/y.yaml":     {Data: []byte("- y\n")},
		"p/mixed/1.yaml":     {Data: []byte("- 1\n")},
		"p/mixed/2.yaml":     {Data: []byte("a: 1\n")},
		"p/empty/empty.yaml": {Data: []byte("")},
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fsys := fstest.MapFS{}
		for k, v := range tree {
			fsys[k] = v
		}
		fsys["p/metadata.yaml"] = &fstest.MapFile{Data: src}
		r := newRepoFS(fsys, 0)
		pl := newPathLoader(r)
		_, diags := pl.expandFile("p/metadata.yaml", fileRange("p/metadata.yaml"), nil)
		files := map[string][]byte{}
		for k, v := range fsys {
			files[k] = v.Data
		}
		checkRanges(t, diags, files)
	})
}

// FuzzLoad: a whole repository whose plugin metadata and cluster spec are fuzzed
// loads without a panic.
func FuzzLoad(f *testing.F) {
	meta, _ := os.ReadFile("../examples/quickstart/plugins/quickstart/metadata.yaml")
	cluster, _ := os.ReadFile("../examples/quickstart/clusters/demo.yaml")
	f.Add(meta, cluster)
	f.Add([]byte("package_version: '9'\n"), []byte("nodes: [1]\n"))
	f.Add([]byte("releases: [{is_release: true, base_release_path: r.yaml}]\n"), []byte("release: x\nnodes: {sync: {id: 0}}\n"))
	f.Fuzz(func(t *testing.T, meta, cluster []byte) {
		fsys := fstest.MapFS{
			"plugins/p/metadata.yaml": {Data: meta},
			"plugins/p/r.yaml":        {Data: []byte("- pk: 1\n  fields: {version: v, operating_system: o}\n")},
			"plugins/p/t.yaml":        {Data: []byte("- {id: a, type: puppet}\n")},
			"clusters/c.yaml":         {Data: cluster},
		}
		repo, diags := Load(fsys, Options{})
		if repo == nil {
			t.Fatal("Load returned no repo")
		}
		checkRanges(t, diags, map[string][]byte{"plugins/p/metadata.yaml": meta, "clusters/c.yaml": cluster})
	})
}
