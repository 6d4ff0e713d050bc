package render

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
)

// RenderStream is Render followed by Stream (StreamExpanded with expanded set),
// one cluster at a time: a cluster's graphs are resolved, its files encoded and
// handed to put, and then its graphs are dropped. At most GOMAXPROCS clusters are
// in hand at once, so a repository of many clusters needs the memory of a few of
// them, not of all; the bytes put receives are those of Stream.
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
	b, models, registries, diags := buildModels(repo, opts)
	if diags.HasErrors() || b.data.HasErrors() {
		// Nothing will be written: resolve as Validate does, for its diagnostics.
		_, d := renderAll(models, true)
		return models, loader.SortDiagnostics(append(b.data, append(diags, d...)...)), nil
	}
	format := FormatCatalogue
	if expanded {
		format = FormatExpanded
	}
	// Largest clusters first, so that the last to finish is a small one.
	order := make([]int, len(models))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, c int) int {
		return cmp.Compare(len(models[c].Cluster.Nodes), len(models[a].Cluster.Nodes))
	})
	clusterDiags := make([]hcl.Diagnostics, len(models))
	var (
		stop    atomic.Bool // an error diagnostic or a failed put: put nothing more
		mu      sync.Mutex
		entries []manifestEntry
		errs    []error
		wg      sync.WaitGroup
	)
	slots := make(chan struct{}, workers(len(models)))
	for _, i := range order {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			graphs, d := renderAll(models[i:i+1], false)
			clusterDiags[i] = d
			if d.HasErrors() {
				stop.Store(true)
			}
			if stop.Load() {
				return
			}
			r := &Rendered{Model: models[i], Graphs: graphs[0], Registry: registries[i]}
			units, err := clusterUnits(r, format)
			var e []manifestEntry
			if err == nil {
				e, err = encodeUnits(units, &defBlocks{}, func(name string, data []byte) error {
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
		})
	}
	wg.Wait()
	for _, d := range clusterDiags {
		diags = append(diags, d...)
	}
	diags = loader.SortDiagnostics(append(b.data, diags...))
	if err := errors.Join(errs...); err != nil || diags.HasErrors() {
		return models, diags, err
	}
	return models, diags, putManifest(entries, format, revision, toolVersion, put)
}

// errStopped ends a cluster's stream after another cluster failed.
var errStopped = errors.New("stopped: another cluster failed")
