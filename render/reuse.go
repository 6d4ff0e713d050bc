package render

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// Manifest is the manifest.json Stream writes (format FormatCatalogue) for artifacts whose digests are
// digests (path → hex sha256; an entry for manifest.json itself is left out):
// a caller that keeps some clusters' artifacts from an earlier render and
// streams the others makes the manifest of the whole set with it.
func Manifest(digests map[string]string, revision, toolVersion string) ([]byte, error) {
	entries := make([]manifestEntry, 0, len(digests))
	for name, sum := range digests {
		if name != "manifest.json" {
			entries = append(entries, manifestEntry{name, sum})
		}
	}
	return manifestDoc(entries, FormatCatalogue, revision, toolVersion)
}

// Models builds the models of the clusters named (their nodes, roles, tags and
// primary tags, with opts.State) without resolving their graphs: what a
// status says of clusters whose artifacts are not rendered again. Clusters
// whose model has errors are left out; the diagnostics say why.
func Models(repo *loader.Repo, clusters []string, opts Options) ([]*Model, hcl.Diagnostics) {
	if len(clusters) == 0 {
		return nil, nil
	}
	b, models, _, diags := buildModels(repo, Options{Clusters: clusters, State: opts.State})
	return models, loader.SortDiagnostics(append(b.data, diags...))
}
