package render

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// Each is what RenderEach returns: the rendered clusters, and the diagnostics
// told apart by what they concern.
type Each struct {
	// Rendered are the clusters without errors, rendered, in repo's order.
	Rendered []*Rendered
	// Clusters are the diagnostics of each cluster asked for (its model, its
	// resource registry, its graphs), by name, sorted; a cluster with an error
	// among them is not rendered.
	Clusters map[string]hcl.Diagnostics
	// Data are the problems of release and plugin data, found whether or not a
	// cluster uses it (Check's): they concern the clusters that use the file
	// they point at.
	Data hcl.Diagnostics
}

// RenderEach is Render with its diagnostics told apart by cluster, so that a
// caller can hold back the clusters with errors and go on with the others: a
// cluster with an error of its own is not rendered, and no other cluster is
// affected by it. Diagnostics of the repository's data are in Data, as they
// are reported once however many clusters meet them.
func RenderEach(repo *loader.Repo, opts Options) *Each {
	return renderEachCluster(repo, opts, false)
}

// ValidateEach is Validate with its diagnostics told apart as RenderEach's
// (Rendered is empty).
func ValidateEach(repo *loader.Repo, opts Options) *Each {
	return renderEachCluster(repo, opts, true)
}

func renderEachCluster(repo *loader.Repo, opts Options, classes bool) *Each {
	b, models, registries, built := buildEach(repo, opts)
	graphs, each := renderEach(models, classes)
	out := &Each{Clusters: map[string]hcl.Diagnostics{}, Data: loader.SortDiagnostics(b.data)}
	for c, d := range built {
		out.Clusters[c.Name] = append(out.Clusters[c.Name], d...)
	}
	for i, m := range models {
		name := m.Cluster.Name
		out.Clusters[name] = append(out.Clusters[name], each[i]...)
		if !classes && !each[i].HasErrors() {
			out.Rendered = append(out.Rendered, &Rendered{Model: m, Graphs: graphs[i], Registry: registries[i]})
		}
	}
	for name, d := range out.Clusters {
		out.Clusters[name] = loader.SortDiagnostics(d)
	}
	return out
}
