package loader

import (
	"strings"
	"testing"
	"testing/fstest"
)

// The total budget bounds what one load reads: a repository of many files, each
// under the per-file limit, stops being read once they add up to more.
func TestLoadStopsAtTheTotalBudget(t *testing.T) {
	fsys := releaseRepo("    release_name: R on CentOS\n    operating_system: CentOS\n    version: r-1.0\n")
	var used int64
	for _, f := range fsys {
		used += int64(len(f.Data))
	}
	// Ten clusters of 1 KiB each; the budget leaves room for about four.
	cluster := "release: r-1.0\nnodes: {}\n# " + strings.Repeat("x", 1024) + "\n"
	for i := range 10 {
		fsys["clusters/c"+string(rune('0'+i))+".yaml"] = &fstest.MapFile{Data: []byte(cluster)}
	}
	budget := used + 4*int64(len(cluster)) + 100
	repo, diags := Load(fsys, Options{MaxTotalSize: budget})
	var full, short int
	for _, d := range diags {
		switch {
		case strings.Contains(d.Summary, "does not fit in the loading budget"):
			full++
			if !strings.Contains(d.Detail, "FUELSYNC_MAX_REPO_SIZE") {
				t.Errorf("detail does not say how to raise the budget: %q", d.Detail)
			}
		case strings.Contains(d.Summary, "the loading budget of"):
			short++
		}
	}
	// Files are read in parallel, so which file is the first that does not fit
	// depends on the order of the reads: usually the fifth cluster, sometimes a
	// release file read after five clusters. Either way the load stops within the
	// budget: one full message, one short message for every later file.
	if full != 1 || short < 4 {
		t.Errorf("want one full and at least four short budget errors, got %d and %d:\n%v", full, short, diags)
	}
	if n := len(repo.Clusters); n < 3 || n > 5 {
		t.Errorf("loaded %d clusters within the budget, want about 4", n)
	}
	// The same repository loads whole under the default budget.
	if _, diags := Load(fsys, Options{}); diags.HasErrors() {
		t.Errorf("default budget: %v", diags)
	}
}

func TestFileSizeLimitIsConfigurable(t *testing.T) {
	fsys := releaseRepo("    release_name: R on CentOS\n    operating_system: CentOS\n    version: r-1.0\n")
	fsys["clusters/big.yaml"] = &fstest.MapFile{Data: []byte("release: r-1.0\n# " + strings.Repeat("x", 4096) + "\n")}
	_, diags := Load(fsys, Options{MaxFileSize: 4 << 10})
	for _, d := range diags {
		if d.Summary == "file clusters/big.yaml is 4114 bytes, over the 4 KiB limit" {
			return
		}
	}
	t.Errorf("got %v", diags)
}
