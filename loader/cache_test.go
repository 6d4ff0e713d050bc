package loader_test

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// cacheExtras are added to the generated repository so that every kind of file the
// cache holds is in it: fuelsync.hcl, an HCL plugin whose default graph is loaded
// through tasks_path, a YAML `_path` key, and a file with a warning.
var cacheExtras = map[string]string{
	"fuelsync.hcl": "interval = \"5m\"\nfeature_groups = [\"experimental\"]\n",
	"plugins/hcl-ext/plugin.hcl": `plugin "hcl-ext" {
  title           = "HCL extension"
  version         = "1.0.0"
  package_version = "4.0.0"
  description     = "A plugin written in HCL"
  fuel_version    = ["9.0"]
  licenses        = ["MIT"]
  authors         = ["me"]
  homepage        = "https://example.org"
  groups          = []
  is_hotpluggable = false
  releases        = [{ os = "ubuntu", version = "gen-1.0", mode = ["ha"] }]
}

graph "default" {
  tasks_path = "tasks.yaml"
}
`,
	"plugins/hcl-ext/tasks.yaml": "- id: hcl-ext-task\n  type: shell\n  version: 2.1.0\n  roles: [controller]\n  requires: [deploy_start]\n  required_for: [deploy_end]\n  parameters: {cmd: 'true'}\n",
}

// cacheRepo is a generated repository with cacheExtras (a new map every call).
func cacheRepo(t testing.TB) fstest.MapFS {
	t.Helper()
	fsys := repogen.Generate(repogen.Spec{Plugins: 4, Tasks: 200, Nodes: 20, Clusters: 3, Seed: 1})
	for name, src := range cacheExtras {
		fsys[name] = &fstest.MapFile{Data: []byte(src), Mode: 0o644}
	}
	fsys["plugins/hcl-ext"] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	// A duplicate key: a warning of a shared file, which both loads must report.
	meta := fsys["plugins/ext-01/metadata.yaml"]
	meta.Data = append([]byte("title: first\n"), meta.Data...)
	return fsys
}

// withFile returns a copy of fsys with name's content replaced by edit(old).
func withFile(t testing.TB, fsys fstest.MapFS, name string, edit func(string) string) fstest.MapFS {
	t.Helper()
	out := maps.Clone(fsys)
	f, ok := fsys[name]
	if !ok {
		t.Fatalf("no file %s", name)
	}
	src := edit(string(f.Data))
	if src == string(f.Data) {
		t.Fatalf("editing %s changed nothing", name)
	}
	out[name] = &fstest.MapFile{Data: []byte(src), Mode: f.Mode}
	return out
}

// decodedFiles counts the files a load decodes: YAML, JSON and HCL.
func decodedFiles(fsys fstest.MapFS) int {
	n := 0
	for name, f := range fsys {
		switch filepath.Ext(name) {
		case ".yaml", ".yml", ".json", ".hcl":
			if f.Mode.IsRegular() {
				n++
			}
		}
	}
	return n
}

// fullDiagText shows diagnostics with everything a renderer uses: severity, the
// whole subject range (bytes included), summary and detail.
func fullDiagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "%d ", d.Severity)
		if s := d.Subject; s != nil {
			fmt.Fprintf(&b, "%s:%d.%d(%d)-%d.%d(%d) ", s.Filename, s.Start.Line, s.Start.Column, s.Start.Byte, s.End.Line, s.End.Column, s.End.Byte)
		}
		fmt.Fprintf(&b, "%s | %s\n", d.Summary, d.Detail)
	}
	return b.String()
}

// sourceBytes returns the bytes a load recorded for snippets, by file.
func sourceBytes(repo *loader.Repo) map[string]string {
	out := map[string]string{}
	for name, f := range repo.Sources.Files() {
		out[name] = string(f.Bytes)
	}
	return out
}

// sameLoad reports how a load with a cache differs from one without: the model, the
// diagnostics, and the source bytes recorded. The models are compared with
// reflect.DeepEqual (cmp.Diff takes minutes on these graphs of shared trees); on a
// difference, the plugins and clusters that differ are named.
func sameLoad(t *testing.T, what string, want, got *loader.Repo, wantDiags, gotDiags hcl.Diagnostics) {
	t.Helper()
	if diff := cmp.Diff(fullDiagText(wantDiags), fullDiagText(gotDiags)); diff != "" {
		t.Errorf("%s: diagnostics (-without cache +with):\n%s", what, diff)
	}
	w, g := *want, *got
	w.Sources, w.FS, g.Sources, g.FS = nil, nil, nil, nil
	if !reflect.DeepEqual(w, g) {
		t.Errorf("%s: the repository differs from a load without the cache", what)
		if len(w.Plugins) != len(g.Plugins) || len(w.Clusters) != len(g.Clusters) {
			t.Errorf("%s: %d plugins and %d clusters, want %d and %d", what, len(g.Plugins), len(g.Clusters), len(w.Plugins), len(w.Clusters))
		} else {
			for i := range w.Plugins {
				if !reflect.DeepEqual(w.Plugins[i], g.Plugins[i]) {
					t.Errorf("%s: plugin %s differs", what, w.Plugins[i].Dir)
				}
			}
			for i := range w.Clusters {
				if !reflect.DeepEqual(w.Clusters[i], g.Clusters[i]) {
					t.Errorf("%s: cluster %s differs", what, w.Clusters[i].File)
				}
			}
		}
	}
	if diff := cmp.Diff(sourceBytes(want), sourceBytes(got)); diff != "" {
		t.Errorf("%s: sources (-without cache +with):\n%s", what, diff)
	}
}

// TestCacheTwoRevisions: the second revision, one cluster file changed, decodes that
// file alone, and both loads give exactly what loads without the cache give.
func TestCacheTwoRevisions(t *testing.T) {
	base := cacheRepo(t)
	head := withFile(t, base, "clusters/c-01.yaml", func(s string) string { return strings.Replace(s, "mode: ha", "mode: multinode", 1) })
	n := decodedFiles(base)

	c := loader.NewCache()
	for i, fsys := range []fstest.MapFS{base, head} {
		want, wantDiags := loader.Load(fsys, loader.Options{})
		got, gotDiags := loader.Load(fsys, loader.Options{Cache: c})
		sameLoad(t, fmt.Sprint("revision ", i), want, got, wantDiags, gotDiags)
		if !strings.Contains(fullDiagText(gotDiags), `duplicate key "title"`) {
			t.Errorf("revision %d: the duplicate key warning is missing:\n%s", i, fullDiagText(gotDiags))
		}
		if i == 0 {
			if hits, misses := c.Stats(); hits != 0 || misses != n {
				t.Errorf("after the first load: hits %d, misses %d; want 0 and %d (every file)", hits, misses, n)
			}
		}
	}
	if hits, misses := c.Stats(); hits != n-1 || misses != n+1 {
		t.Errorf("after both loads: hits %d, misses %d; want %d and %d", hits, misses, n-1, n+1)
	}
	if p := loader.CacheChanged(c, mapVersions(base, head)); len(p) > 0 {
		t.Errorf("shared trees changed:\n%s", strings.Join(p, "\n"))
	}
}

// mapVersions gives every content a file has in the revisions.
func mapVersions(revs ...fstest.MapFS) func(string) [][]byte {
	return func(name string) [][]byte {
		var out [][]byte
		for _, r := range revs {
			if f, ok := r[name]; ok {
				out = append(out, f.Data)
			}
		}
		return out
	}
}

// TestCacheSharedFilesPathLoaded: what a shared file refers to through a `_path` key
// is loaded by each load. Here metadata.yaml and plugin.hcl are the same in both
// revisions and the files their paths name differ.
func TestCacheSharedFilesPathLoaded(t *testing.T) {
	base := cacheRepo(t)
	head := withFile(t, base, "plugins/hcl-ext/tasks.yaml", func(s string) string { return strings.Replace(s, "hcl-ext-task", "hcl-ext-renamed", 1) })
	head = withFile(t, head, "plugins/gen-release/provision.yaml", func(s string) string { return s + "\n# changed\n" })
	c := loader.NewCache()
	for i, fsys := range []fstest.MapFS{base, head} {
		want, wantDiags := loader.Load(fsys, loader.Options{})
		got, gotDiags := loader.Load(fsys, loader.Options{Cache: c})
		sameLoad(t, fmt.Sprint("revision ", i), want, got, wantDiags, gotDiags)
	}
	got, _ := loader.Load(head, loader.Options{Cache: c})
	p := got.FindPlugin("hcl-ext")
	if p == nil || len(p.Graphs) == 0 || len(p.Graphs[0].Tasks) == 0 || p.Graphs[0].Tasks[0].ID != "hcl-ext-renamed" {
		t.Errorf("the head's plugin.hcl did not load the head's tasks.yaml: %+v", p)
	}
	n := decodedFiles(base)
	if hits, misses := c.Stats(); misses != n+2 || hits != 2*n-2 {
		t.Errorf("hits %d, misses %d; want %d and %d", hits, misses, 2*n-2, n+2)
	}
}

// TestCacheDiagnostics: the problems of a shared file are reported by every load,
// with the same ranges, and a load changing its diagnostics does not change the next
// load's.
func TestCacheDiagnostics(t *testing.T) {
	base := cacheRepo(t)
	bad := map[string]string{
		"clusters/bad-yaml.yaml":                    "cluster: bad-yaml\nrelease: gen-1.0\nnodes: {a: [1, 2}\n",
		"clusters/bad-hcl.hcl":                      "cluster \"bad-hcl\" {\n  release = \"gen-1.0\"\n  mode = local.nope\n}\nstray = 1\n",
		"clusters/bad-keys.yaml":                    "cluster: bad-keys\nrelease: gen-1.0\nmode: ha\nmode: ha\nnodez: {}\n",
		"plugins/bad-hcl/plugin.hcl":                "plugin \"bad-hcl\" {\n  version = 1\n}\nrole \"r\" {}\nrole \"r\" {}\n",
		"plugins/gen-release/graphs/99-broken.yaml": "- id: x\n  type: [\n",
		"fuelsync.hcl":                              "interval = \"5m\"\nextra {}\n",
		// Decoded once, its tasks_path loaded (and failing) by every load.
		"plugins/hcl-ext/plugin.hcl": strings.Replace(cacheExtras["plugins/hcl-ext/plugin.hcl"], "tasks.yaml", "missing.yaml", 1),
	}
	for name, src := range bad {
		base[name] = &fstest.MapFile{Data: []byte(src), Mode: 0o644}
	}
	base["plugins/bad-hcl"] = &fstest.MapFile{Mode: fs.ModeDir | 0o755}
	head := withFile(t, base, "clusters/c-02.yaml", func(s string) string { return s + "\n# changed\n" })

	_, wantDiags := loader.Load(base, loader.Options{})
	want := fullDiagText(wantDiags)
	for name := range bad {
		if !strings.Contains(want, name+":") {
			t.Errorf("no diagnostic in %s; the test needs one:\n%s", name, want)
		}
	}
	c := loader.NewCache()
	_, first := loader.Load(base, loader.Options{Cache: c})
	if diff := cmp.Diff(want, fullDiagText(first)); diff != "" {
		t.Errorf("first load (-without cache +with):\n%s", diff)
	}
	// What a caller might do to its own diagnostics.
	for _, d := range first {
		d.Summary = "changed"
		if d.Subject != nil {
			d.Subject.Start.Line = 999
		}
	}
	slices.Reverse(first)
	_, second := loader.Load(base, loader.Options{Cache: c})
	if diff := cmp.Diff(want, fullDiagText(second)); diff != "" {
		t.Errorf("second load of the same revision (-without cache +with):\n%s", diff)
	}
	_, wantHead := loader.Load(head, loader.Options{})
	_, gotHead := loader.Load(head, loader.Options{Cache: c})
	if diff := cmp.Diff(fullDiagText(wantHead), fullDiagText(gotHead)); diff != "" {
		t.Errorf("head (-without cache +with):\n%s", diff)
	}
	if hits, _ := c.Stats(); hits == 0 {
		t.Error("no cache hits")
	}
}

// artifacts loads fsys and renders it: every file rendered, and the load's and
// the render's diagnostics.
func artifacts(fsys fs.FS, opts loader.Options) [2]string {
	repo, diags := loader.Load(fsys, opts)
	rs, rdiags := render.Render(repo, render.Options{})
	files, err := render.Files(rs, "rev", "test")
	if err != nil {
		return [2]string{"", err.Error()}
	}
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintf(&b, "== %s\n%s\n", name, files[name])
	}
	return [2]string{b.String(), fullDiagText(diags) + fullDiagText(rdiags)}
}

// wantArtifacts are the artifacts of each revision loaded without a cache.
func wantArtifacts(t *testing.T, revs []fstest.MapFS) [][2]string {
	t.Helper()
	var want [][2]string
	for i, fsys := range revs {
		a := artifacts(fsys, loader.Options{})
		if a[0] == "" {
			t.Fatalf("revision %d renders nothing:\n%s", i, a[1])
		}
		want = append(want, a)
	}
	return want
}

// TestCacheConcurrent: loads of two revisions sharing a cache at once, each rendered
// as it finishes (run with -race: a write into a shared tree by the loader or by
// render is a race). The artifacts are those of loads without the cache, and the
// shared trees are unchanged afterwards.
func TestCacheConcurrent(t *testing.T) {
	base := cacheRepo(t)
	head := withFile(t, base, "clusters/c-02.yaml", func(s string) string { return strings.Replace(s, "mode: ha", "mode: multinode", 1) })
	revs := []fstest.MapFS{base, head}
	want := wantArtifacts(t, revs)

	c := loader.NewCache()
	const loads = 6
	var got [loads][2]string
	var wg sync.WaitGroup
	for i := range loads {
		wg.Go(func() { got[i] = artifacts(revs[i%2], loader.Options{Cache: c}) })
	}
	wg.Wait()
	for i := range loads {
		if got[i] != want[i%2] {
			t.Errorf("load %d (revision %d) differs from a load without the cache:\n%s", i, i%2, cmp.Diff(want[i%2], got[i]))
		}
	}
	n := decodedFiles(base)
	if hits, misses := c.Stats(); misses != n+1 || hits != loads*n-misses {
		t.Errorf("hits %d, misses %d; want %d and %d", hits, misses, loads*n-n-1, n+1)
	}
	if p := loader.CacheChanged(c, mapVersions(base, head)); len(p) > 0 {
		t.Errorf("shared trees changed:\n%s", strings.Join(p, "\n"))
	}
}

// blobFS is a MapFS that names its contents as a git revision does and counts the
// files read.
type blobFS struct {
	fstest.MapFS
	mu    sync.Mutex
	reads map[string]int
}

func (b *blobFS) ReadFile(name string) ([]byte, error) {
	b.mu.Lock()
	b.reads[name]++
	b.mu.Unlock()
	return b.MapFS.ReadFile(name)
}

func (b *blobFS) BlobHash(name string) (string, bool) {
	f, ok := b.MapFS[name]
	if !ok || !f.Mode.IsRegular() {
		return "", false
	}
	sum := sha1.Sum(f.Data)
	return hex.EncodeToString(sum[:]), true
}

// TestCacheBlobsReadOnce: on a file system that names blobs, a file the first load
// read is not read again by the second, yet its bytes are in the second load's
// sources.
func TestCacheBlobsReadOnce(t *testing.T) {
	base := cacheRepo(t)
	head := withFile(t, base, "clusters/c-01.yaml", func(s string) string { return s + "\n# changed\n" })
	c := loader.NewCache()
	var repos []*loader.Repo
	var reads []map[string]int
	for _, fsys := range []fstest.MapFS{base, head} {
		b := &blobFS{MapFS: fsys, reads: map[string]int{}}
		repo, _ := loader.Load(b, loader.Options{Cache: c})
		repos, reads = append(repos, repo), append(reads, b.reads)
	}
	if len(reads[0]) != decodedFiles(base) {
		t.Errorf("the first load read %d files, want %d", len(reads[0]), decodedFiles(base))
	}
	if diff := cmp.Diff(map[string]int{"clusters/c-01.yaml": 1}, reads[1]); diff != "" {
		t.Errorf("files the second load read (-want +got):\n%s", diff)
	}
	for i, fsys := range []fstest.MapFS{base, head} {
		for name, src := range sourceBytes(repos[i]) {
			if string(fsys[name].Data) != src {
				t.Errorf("revision %d: the source of %s is not the revision's", i, name)
			}
		}
		if got, want := len(repos[i].Sources.Files()), decodedFiles(base); got != want {
			t.Errorf("revision %d: %d sources, want %d", i, got, want)
		}
	}
}

// TestCacheGitRevisions: two commits of a real repository differing in one file,
// read from the object store: the second load decodes one file, and both loads give
// what loads without the cache give.
func TestCacheGitRevisions(t *testing.T) {
	base := cacheRepo(t)
	const changed = "clusters/c-03.hcl"
	head := withFile(t, base, changed, func(s string) string { return strings.Replace(s, `mode    = "ha"`, `mode    = "multinode"`, 1) })

	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	commit := func(fsys fstest.MapFS, msg string, hour int) {
		t.Helper()
		if err := repogen.WriteDir(fsys, dir); err != nil {
			t.Fatal(err)
		}
		wt, err := repo.Worktree()
		if err != nil {
			t.Fatal(err)
		}
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		sig := &object.Signature{Name: "Test", Email: "test@example.com", When: time.Date(2024, 3, 1, hour, 0, 0, 0, time.UTC)}
		if _, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig}); err != nil {
			t.Fatal(err)
		}
	}
	commit(base, "base", 1)
	commit(head, "head", 2)

	n := decodedFiles(base)
	c := loader.NewCache()
	for i, rev := range []string{"HEAD~1", "HEAD"} {
		fsys, _, err := loader.OpenRevision(dir, rev)
		if err != nil {
			t.Fatal(err)
		}
		want, wantDiags := loader.Load(fsys, loader.Options{})
		got, gotDiags := loader.Load(fsys, loader.Options{Cache: c})
		sameLoad(t, rev, want, got, wantDiags, gotDiags)
		if got, want := len(got.Sources.Files()), n; got != want {
			t.Errorf("%s: %d sources, want %d", rev, got, want)
		}
		if i == 0 {
			if hits, misses := c.Stats(); hits != 0 || misses != n {
				t.Errorf("%s: hits %d, misses %d; want 0 and %d", rev, hits, misses, n)
			}
		}
	}
	if hits, misses := c.Stats(); hits != n-1 || misses != n+1 {
		t.Errorf("after both revisions: hits %d, misses %d; want %d (files-1) and %d", hits, misses, n-1, n+1)
	}
}
