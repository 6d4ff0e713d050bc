package loader_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

func cacheDiagText(diags hcl.Diagnostics) string {
	var b strings.Builder
	for _, d := range diags {
		fmt.Fprintf(&b, "%s: %s: %s\n", d.Subject, d.Summary, d.Detail)
	}
	return b.String()
}

// yamlFiles counts the files a load decodes as YAML or JSON.
func yamlFiles(fsys fstest.MapFS) int {
	n := 0
	for name, f := range fsys {
		if f.Mode.IsRegular() && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml") || strings.HasSuffix(name, ".json")) {
			n++
		}
	}
	return n
}

// TestCacheTwoRevisions: the second revision, one cluster file changed, decodes
// that file alone, and both loads give what loads without the cache give,
// diagnostics included (a file with a warning is shared).
func TestCacheTwoRevisions(t *testing.T) {
	base := repogen.Generate(repogen.Spec{Plugins: 4, Tasks: 200, Nodes: 20, Clusters: 2, Seed: 1})
	// A duplicate key in a plugin file: a warning both loads must report.
	for name, f := range base {
		if strings.HasSuffix(name, "metadata.yaml") {
			base[name] = &fstest.MapFile{Data: append([]byte("title: first\n"), f.Data...)}
			break
		}
	}
	head := fstest.MapFS{}
	for k, v := range base {
		head[k] = v
	}
	src := string(head["clusters/c-01.yaml"].Data)
	head["clusters/c-01.yaml"] = &fstest.MapFile{Data: []byte(strings.Replace(src, "id: 1\n", "id: 101\n", 1))}

	c := loader.NewCache()
	for _, fsys := range []fstest.MapFS{base, head} {
		want, wantDiags := loader.Load(fsys, loader.Options{})
		got, gotDiags := loader.Load(fsys, loader.Options{Cache: c})
		if diff := cmp.Diff(cacheDiagText(wantDiags), cacheDiagText(gotDiags)); diff != "" {
			t.Errorf("diagnostics with the cache (-without +with):\n%s", diff)
		}
		if !strings.Contains(cacheDiagText(gotDiags), "title") {
			t.Errorf("the duplicate key warning is missing:\n%s", cacheDiagText(gotDiags))
		}
		if len(got.Clusters) != len(want.Clusters) || len(got.Plugins) != len(want.Plugins) {
			t.Errorf("%d clusters and %d plugins with the cache, %d and %d without", len(got.Clusters), len(got.Plugins), len(want.Clusters), len(want.Plugins))
		}
		for i := range got.Clusters {
			if got.Clusters[i].Name != want.Clusters[i].Name || len(got.Clusters[i].Nodes) != len(want.Clusters[i].Nodes) {
				t.Errorf("cluster %d differs with the cache", i)
			}
		}
	}
	hits, misses := c.Stats()
	n := int64(yamlFiles(base))
	if misses != n+1 || hits != n-1 {
		t.Errorf("hits %d, misses %d; want %d and %d", hits, misses, n-1, n+1)
	}
}

// TestCacheConcurrent: loads sharing a cache at once (run with -race).
func TestCacheConcurrent(t *testing.T) {
	fsys := repogen.Generate(repogen.Spec{Plugins: 3, Tasks: 100, Nodes: 10, Clusters: 2, Seed: 2})
	c := loader.NewCache()
	var wg sync.WaitGroup
	texts := make([]string, 4)
	for i := range texts {
		wg.Go(func() {
			repo, diags := loader.Load(fsys, loader.Options{Cache: c})
			texts[i] = fmt.Sprintf("%d clusters\n%s", len(repo.Clusters), cacheDiagText(diags))
		})
	}
	wg.Wait()
	for i := range texts {
		if texts[i] != texts[0] {
			t.Errorf("load %d differs from load 0", i)
		}
	}
	if hits, misses := c.Stats(); misses != int64(yamlFiles(fsys)) || hits != 3*misses {
		t.Errorf("hits %d, misses %d for %d files and 4 loads", hits, misses, yamlFiles(fsys))
	}
}
