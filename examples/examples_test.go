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
	"github.com/fuelsync/fuelsync/render"
)

// TestExamplesValidate loads every example: no errors, and the warnings are exactly
// the ones in testdata/<example>.validate.golden.
func TestExamplesValidate(t *testing.T) {
	for _, name := range []string{"quickstart", "fuel-mitaka", "tripleo-capabilities"} {
		t.Run(name, func(t *testing.T) {
			repo, diags := loader.Load(os.DirFS(name), loader.Options{})
			// What validate runs: the loader, then the merged models and task graphs.
			rendered, more := render.Render(repo, render.Options{})
			diags = loader.SortDiagnostics(append(diags, more...))
			if diags.HasErrors() {
				t.Errorf("errors: %v", diags)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "plugins: %d, releases: %d, clusters: %d\n", len(repo.Plugins), len(repo.Releases), len(repo.Clusters))
			if len(rendered) != len(repo.Clusters) {
				t.Errorf("%d of %d clusters rendered", len(rendered), len(repo.Clusters))
			}
			for _, r := range rendered {
				b.WriteString(modelSummary(r.Model))
			}
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

// modelSummary is what the merged model of a cluster says: its plugins, roles with
// their tags, and the state of every component.
func modelSummary(m *render.Model) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s (release %s)\n", m.Cluster.Name, m.Release.Version)
	for _, p := range m.Plugins {
		fmt.Fprintf(&b, "  plugin %s", p.Plugin.Name)
		if p.Component != "" {
			fmt.Fprintf(&b, " (enabled by component %s)", p.Component)
		}
		b.WriteString("\n")
	}
	for _, r := range m.Roles {
		fmt.Fprintf(&b, "  role %s (%s): tags %s\n", r.Name, r.Owner(), strings.Join(r.Tags, ", "))
	}
	for _, s := range m.States {
		fmt.Fprintf(&b, "  component %s: %s", s.Name, s.State)
		if s.Compatible {
			b.WriteString(", compatible")
		}
		b.WriteString("\n")
	}
	return b.String()
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
	// Their merged models agree too (names aside).
	models, diags := render.Check(repo)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	y, h := models["demo"], models["demo-hcl"]
	if diff := cmp.Diff(modelSummary(y), strings.Replace(modelSummary(h), "demo-hcl", "demo", 1)); diff != "" {
		t.Errorf("merged models differ (-yaml +hcl):\n%s", diff)
	}
	if diff := cmp.Diff(y.Models["settings"], h.Models["settings"]); diff != "" {
		t.Errorf("settings differ (-yaml +hcl):\n%s", diff)
	}
}
