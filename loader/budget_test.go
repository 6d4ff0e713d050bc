package loader

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"
)

// The total budget bounds what one load reads: a repository of many files, each
// under the per-file limit, stops being read once they add up to more.
func TestLoadStopsAtTheTotalBudget(t *testing.T) {
	fsys := releaseRepo("    release_name: R on CentOS\n    operating_system: CentOS\n    version: r-1.0\n")
	var used int64
	for _, f := range fsys {
		used += int64(len(f.Data)) + FileCost
	}
	// Ten clusters of 1 KiB each (2 KiB with the cost of a file); the budget
	// leaves room for about four.
	cluster := "release: r-1.0\nnodes: {}\n# " + strings.Repeat("x", 1024) + "\n"
	for i := range 10 {
		fsys["clusters/c"+string(rune('0'+i))+".yaml"] = &fstest.MapFile{Data: []byte(cluster)}
	}
	budget := used + 4*(int64(len(cluster))+FileCost) + 100
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

// Empty files cost the load memory too (an empty cluster spec about 2.5 KiB:
// its document, its cluster, the errors that say it is empty): each file counts
// FileCost against the budget, and a listing that cannot fit at that cost fails
// at once, with one diagnostic, before any of its files is read. 400,000 empty
// cluster specs took 1 GB and printed 400,000 errors; 40,000 here.
func TestEmptyFilesCountAgainstTheBudget(t *testing.T) {
	fsys := releaseRepo("    release_name: R on CentOS\n    operating_system: CentOS\n    version: r-1.0\n")
	const n = 40_000
	for i := range n {
		fsys[fmt.Sprintf("clusters/c%06d.yaml", i)] = &fstest.MapFile{}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	repo, diags := Load(fsys, Options{})
	runtime.ReadMemStats(&after)
	if len(diags) != 1 || len(repo.Clusters) != 0 || len(repo.Plugins) != 0 {
		t.Fatalf("want one diagnostic and nothing loaded, got %d clusters, %d plugins and %d diagnostics, the first: %v",
			len(repo.Clusters), len(repo.Plugins), len(diags), diags[:min(len(diags), 3)])
	}
	d := diags[0]
	want := fmt.Sprintf("the repository holds %d cluster specs and 1 plugin directory: at 1 KiB each before their bytes, they need 39.1 MiB of the loading budget of 16 MiB (16 MiB left)", n)
	if d.Severity != hcl.DiagError || d.Summary != want || d.Subject == nil || d.Subject.Filename != "clusters" ||
		!strings.Contains(d.Detail, "FUELSYNC_MAX_REPO_SIZE") {
		t.Errorf("got %s: %q at %v (%q), want the error %q at clusters", severity(d), d.Summary, d.Subject, d.Detail, want)
	}
	// The listing itself is all the load allocates: about 300 bytes a file (the
	// test file system lists them); reading them would cost ten times more.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > n*1000 {
		t.Errorf("the load allocated %d MB for %d empty files", alloc>>20, n)
	}
	// Under a budget that fits them, the same files load (and are each an error).
	_, diags = Load(fsys, Options{MaxTotalSize: 64 << 20})
	if len(diags) < n {
		t.Errorf("a budget of 64 MiB: %d diagnostics, want one for each of the %d empty files", len(diags), n)
	}
}

// A glob's matches are admitted as one listing too.
func TestGlobMatchesCountAgainstTheBudget(t *testing.T) {
	fsys := releaseRepo("    release_name: R on CentOS\n    operating_system: CentOS\n    version: r-1.0\n    extra_path: 'many/*.yaml'\n")
	for i := range 100 {
		fsys[fmt.Sprintf("plugins/r/many/m%03d.yaml", i)] = &fstest.MapFile{Data: []byte("{}\n")}
	}
	_, diags := Load(fsys, Options{MaxTotalSize: 64 << 10})
	for _, d := range diags {
		if strings.HasPrefix(d.Summary, "extra_path: plugins/r/many/*.yaml matches 100 files: at 1 KiB each before their bytes, they need 100 KiB") &&
			d.Subject != nil && d.Subject.Filename == "plugins/r/metadata.yaml" {
			return
		}
	}
	t.Errorf("no budget error at the glob: %v", diags)
}

func severity(d *hcl.Diagnostic) string {
	if d.Severity == hcl.DiagError {
		return "error"
	}
	return "warning"
}
