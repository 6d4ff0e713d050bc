package examples

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
)

// TestQuickstartHCLForEachComment: the commented `node` block with for_each at the
// end of quickstart's HCL cluster is valid once uncommented, and adds the nodes its
// comment promises (compute-a, id 7, and compute-b, id 8).
func TestQuickstartHCLForEachComment(t *testing.T) {
	const file = "clusters/demo-hcl.hcl"
	src, err := os.ReadFile(filepath.Join("quickstart", file))
	if err != nil {
		t.Fatal(err)
	}
	// The block is the run of comment lines from `# node "` to the `# }` closing it;
	// uncommenting removes "# " and keeps the indentation.
	block := regexp.MustCompile(`(?m)^(\s*)# (node "[^\n]*\{\n(?:\s*#   [^\n]*\n)*)\s*# \}\n`)
	loc := block.FindSubmatchIndex(src)
	if loc == nil {
		t.Fatalf("%s: no commented node block found", file)
	}
	commented := string(src[loc[0]:loc[1]])
	var uncommented strings.Builder
	for _, line := range strings.SplitAfter(commented, "\n") {
		uncommented.WriteString(strings.Replace(line, "# ", "", 1))
	}
	if !strings.Contains(uncommented.String(), "for_each") {
		t.Fatalf("the commented block has no for_each:\n%s", commented)
	}
	edited := string(src[:loc[0]]) + uncommented.String() + string(src[loc[1]:])

	dir := filepath.Join(t.TempDir(), "quickstart")
	if err := os.CopyFS(dir, os.DirFS("quickstart")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, file), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	repo, diags := loader.Load(os.DirFS(dir), loader.Options{})
	_, more := render.Render(repo, render.Options{})
	if diags = append(diags, more...); len(diags) > 0 {
		t.Fatalf("the uncommented block does not validate:\n%s\n%v", uncommented.String(), diags)
	}
	var got []string
	for _, c := range repo.Clusters {
		if c.Name != "demo-hcl" {
			continue
		}
		for _, n := range c.Nodes {
			if strings.HasPrefix(n.Name, "compute-") {
				got = append(got, fmt.Sprintf("%s id %d", n.Name, n.ID))
			}
		}
	}
	if diff := cmp.Diff([]string{"compute-a id 7", "compute-b id 8"}, got); diff != "" {
		t.Errorf("nodes made by the for_each block (-want +got):\n%s", diff)
	}
}
