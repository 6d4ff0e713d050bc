package render

import (
	"testing"

	"github.com/fuelsync/fuelsync/internal/repogen"
	"github.com/fuelsync/fuelsync/loader"
)

// BenchmarkCheckLarge merges and checks every cluster of the large generated
// repository (the one loader's BenchmarkLoadLarge loads); loading is not timed.
func BenchmarkCheckLarge(b *testing.B) {
	repo, diags := loader.Load(repogen.Generate(repogen.Spec{Plugins: 50, Tasks: 5000, Nodes: 2000, Clusters: 20, Seed: 1}), loader.Options{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, diags := Check(repo); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
	}
}
