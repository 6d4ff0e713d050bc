package examples

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/internal/golden"
	"github.com/fuelsync/fuelsync/loader"
)

// TestExamplesValidate loads every example: no errors, and the warnings are exactly
// the ones in testdata/<example>.validate.golden.
func TestExamplesValidate(t *testing.T) {
	for _, name := range []string{"quickstart", "fuel-mitaka"} {
		t.Run(name, func(t *testing.T) {
			repo, diags := loader.Load(os.DirFS(name), loader.Options{})
			if diags.HasErrors() {
				t.Errorf("errors: %v", diags)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "plugins: %d, releases: %d, clusters: %d\n", len(repo.Plugins), len(repo.Releases), len(repo.Clusters))
			for _, d := range diags {
				sev := "warning"
				if d.Severity == hcl.DiagError {
					sev = "error"
				}
				fmt.Fprintf(&b, "%s:%d:%d: %s: %s\n", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, sev, d.Summary)
			}
			golden.Check(t, filepath.Join("testdata", name+".validate.golden"), []byte(b.String()))
		})
	}
}

// TestQuickstartTwins: the YAML cluster and its HCL twin decode to equal models.
func TestQuickstartTwins(t *testing.T) {
	repo, diags := loader.Load(os.DirFS("quickstart"), loader.Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	yamlC, hclC := repo.Cluster("demo"), repo.Cluster("demo-hcl")
	if yamlC == nil || hclC == nil {
		t.Fatalf("clusters demo and demo-hcl not found")
	}
	if len(yamlC.Nodes) != 6 {
		t.Fatalf("demo has %d nodes, want 6", len(yamlC.Nodes))
	}
	opts := cmp.Options{
		cmpopts.IgnoreTypes(hcl.Range{}),
		cmpopts.IgnoreFields(loader.Cluster{}, "Name", "File"),
		cmpopts.EquateEmpty(),
	}
	if diff := cmp.Diff(yamlC, hclC, opts); diff != "" {
		t.Errorf("YAML and HCL twins differ (-yaml +hcl):\n%s", diff)
	}
}
