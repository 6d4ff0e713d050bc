package render

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// RenderStream is Render followed by Stream (StreamExpanded with expanded set),
// one cluster at a time (Walk): a cluster's graphs are resolved, its files
// encoded and handed to put, and then its graphs are dropped. At most GOMAXPROCS
// clusters are in hand at once, so a repository of many clusters needs the
// memory of a few of them, not of all; the bytes put receives are those of
// Stream.
//
// It returns the models of the clusters rendered (without their graphs) and the
// diagnostics Render reports, sorted. Files are handed to put only while no error
// is known: after a cluster's first error diagnostic no other file and no
// manifest.json is handed to put, but the remaining clusters are still resolved so
// that every diagnostic is reported. The caller must discard what put received
// when the diagnostics have errors (render writes into a temporary directory and
// renames it into place only without errors). An error from put stops the stream
// and is returned.
func RenderStream(repo *loader.Repo, opts Options, revision, toolVersion string, expanded bool,
	put func(name string, data []byte) error) ([]*Model, hcl.Diagnostics, error) {
	format := FormatCatalogue
	if expanded {
		format = FormatExpanded
	}
	var (
		stop    atomic.Bool // an error diagnostic or a failed put: put nothing more
		mu      sync.Mutex
		entries []manifestEntry
		errs    []error
		models  []*Model
		diags   hcl.Diagnostics
	)
	data, _ := Walk(repo, opts, false, func(wk *Walked) error {
		mu.Lock()
		diags = append(diags, wk.Diagnostics...)
		if wk.Model != nil {
			models = append(models, wk.Model)
		}
		mu.Unlock()
		if wk.Rendered == nil {
			if wk.Diagnostics.HasErrors() {
				stop.Store(true)
			}
			return nil
		}
		if stop.Load() {
			return nil
		}
		units, err := clusterUnits(wk.Rendered, format)
		var e []manifestEntry
		if err == nil {
			e, err = encodeUnits(units, wk.Rendered.blocks(), func(name string, data []byte, _ string) error {
				if stop.Load() {
					return errStopped
				}
				return put(name, data)
			})
		}
		mu.Lock()
		defer mu.Unlock()
		entries = append(entries, e...)
		if err != nil && !errors.Is(err, errStopped) {
			errs = append(errs, err)
			stop.Store(true)
		}
		return nil
	})
	models = inRepoOrder(repo, models)
	diags = loader.SortDiagnostics(append(data, diags...))
	if err := errors.Join(errs...); err != nil || diags.HasErrors() {
		return models, diags, err
	}
	return models, diags, putManifest(entries, format, revision, toolVersion, put)
}

// errStopped ends a cluster's stream after another cluster failed.
var errStopped = errors.New("stopped: another cluster failed")

// inRepoOrder sorts models in the order of repo's clusters.
func inRepoOrder(repo *loader.Repo, models []*Model) []*Model {
	index := make(map[*loader.Cluster]int, len(repo.Clusters))
	for i, c := range repo.Clusters {
		index[c] = i
	}
	slices.SortFunc(models, func(a, b *Model) int { return index[a.Cluster] - index[b.Cluster] })
	return models
}
