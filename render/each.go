package render

import (
	"slices"
	"sync"

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
// are reported once however many clusters meet them. It holds every cluster's
// graphs at once; Walk hands them over one by one.
func RenderEach(repo *loader.Repo, opts Options) *Each {
	return renderEachCluster(repo, opts, false)
}

// ValidateEach is Validate with its diagnostics told apart as RenderEach's
// (Rendered is empty). The clusters are checked one by one (Walk).
func ValidateEach(repo *loader.Repo, opts Options) *Each {
	return renderEachCluster(repo, opts, true)
}

func renderEachCluster(repo *loader.Repo, opts Options, validate bool) *Each {
	out := &Each{Clusters: map[string]hcl.Diagnostics{}}
	var mu sync.Mutex
	out.Data, _ = Walk(repo, opts, validate, func(wk *Walked) error {
		mu.Lock()
		defer mu.Unlock()
		out.Clusters[wk.Cluster.Name] = append(out.Clusters[wk.Cluster.Name], wk.Diagnostics...)
		if wk.Rendered != nil {
			out.Rendered = append(out.Rendered, wk.Rendered)
		}
		return nil
	})
	index := map[*loader.Cluster]int{}
	for i, c := range repo.Clusters {
		index[c] = i
	}
	slices.SortFunc(out.Rendered, func(a, b *Rendered) int { return index[a.Model.Cluster] - index[b.Model.Cluster] })
	for name, d := range out.Clusters {
		out.Clusters[name] = loader.SortDiagnostics(d)
	}
	return out
}
