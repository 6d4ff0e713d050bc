package render

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/capabilities"
	"github.com/fuelsync/fuelsync/loader"
)

// Walked is one cluster as Walk hands it over.
type Walked struct {
	Cluster *loader.Cluster
	// Model is the cluster's merged model; nil when it has errors (or its
	// release is not found).
	Model *Model
	// Rendered is the cluster resolved onto its nodes; nil when its
	// diagnostics have errors, and when the walk only validates.
	Rendered *Rendered
	// Diagnostics are the cluster's own (its model, its resource registry,
	// its graphs), sorted.
	Diagnostics hcl.Diagnostics
}

// Walk builds and resolves the clusters of repo (opts.Clusters, or every
// cluster) one by one and hands each to f, which may keep what it needs and
// drops the rest: Walk keeps nothing of a cluster once f has returned. The
// clusters go largest first, at most GOMAXPROCS at once, each one's graphs
// resolved on every core: a repository of many clusters needs the memory of a
// few of them, whatever their number. f is called from several goroutines at
// once, once per cluster asked for.
//
// With validate set, the graphs are only checked (resolved onto one node of
// each class of nodes, as Validate does) and Walked.Rendered stays nil; the
// diagnostics are the same.
//
// It returns the diagnostics of the repository's data (Each.Data), sorted, and
// the errors f returned; the first one stops the walk (the clusters already in
// hand are finished).
func Walk(repo *loader.Repo, opts Options, validate bool, f func(*Walked) error) (hcl.Diagnostics, error) {
	b := newBuilder(repo)
	b.state = opts.State
	b.checkData()
	var list []*loader.Cluster
	for _, c := range repo.Clusters {
		if len(opts.Clusters) == 0 || slices.Contains(opts.Clusters, c.Name) {
			list = append(list, c)
		}
	}
	// Largest clusters first, so that the last to finish is a small one.
	slices.SortStableFunc(list, func(a, c *loader.Cluster) int { return cmp.Compare(len(c.Nodes), len(a.Nodes)) })
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		stop atomic.Bool
	)
	at := workers(len(list))
	if opts.OneAtATime {
		at = 1
	}
	slots := make(chan struct{}, at)
	// The clusters of a walk share one encoding cache: those of a release
	// encode its definitions once, not once a cluster.
	encoding := opts.Encoding
	if encoding == nil {
		encoding = NewEncodeCache()
	}
	for _, c := range list {
		slots <- struct{}{}
		if stop.Load() {
			<-slots
			break
		}
		// The models are built here, one after the other (they share the
		// builder's caches); their graphs are resolved on the workers.
		m, d := b.build(c)
		reg, rd := resolveRegistry(repo, c)
		wk := &Walked{Cluster: c, Diagnostics: append(d, rd...)}
		if m != nil && !d.HasErrors() && !rd.HasErrors() {
			wk.Model = m
		}
		wg.Go(func() {
			defer func() { <-slots }()
			walkOne(wk, reg, validate)
			if wk.Rendered != nil {
				wk.Rendered.encoding = encoding
			}
			if err := f(wk); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				stop.Store(true)
			}
		})
	}
	wg.Wait()
	return loader.SortDiagnostics(b.data), errors.Join(errs...)
}

// walkOne resolves the graphs of wk's model (checks them, validating).
func walkOne(wk *Walked, reg *capabilities.Registry, validate bool) {
	if wk.Model != nil {
		graphs, d := renderAll([]*Model{wk.Model}, validate)
		wk.Diagnostics = append(wk.Diagnostics, d...)
		if !validate && !wk.Diagnostics.HasErrors() {
			wk.Rendered = &Rendered{Model: wk.Model, Graphs: graphs[0], Registry: reg}
		}
	}
	wk.Diagnostics = loader.SortDiagnostics(wk.Diagnostics)
}

// StreamCluster encodes the artifact files of one rendered cluster (Stream's,
// without manifest.json) and hands each to put as it is made, on every core,
// as Stream does (with the EncodeCache of the walk that rendered it);
// it returns the first error.
func StreamCluster(r *Rendered, put func(name string, data []byte) error) error {
	return StreamClusterSums(r, withoutSum(put))
}

// StreamClusterSums is StreamCluster handing put each file's digest too (hex
// sha256, as manifest.json has it), which the encoding works out anyway.
func StreamClusterSums(r *Rendered, put func(name string, data []byte, sum string) error) error {
	return StreamClusterExcept(r, nil, put)
}

// StreamClusterExcept is StreamClusterSums leaving out the files named in
// except, not encoded.
func StreamClusterExcept(r *Rendered, except map[string]bool, put func(name string, data []byte, sum string) error) error {
	units, err := clusterUnits(r, FormatCatalogue)
	if err != nil {
		return err
	}
	if len(except) > 0 {
		units = slices.DeleteFunc(units, func(u unit) bool { return except[u.name] })
	}
	_, err = encodeUnits(units, r.blocks(), put)
	return err
}

// blocks are the encoded blocks of definitions r's encoding shares: those of
// the walk that rendered it, else its own.
func (r *Rendered) blocks() *defBlocks {
	if r.encoding != nil {
		return &r.encoding.blocks
	}
	return &defBlocks{}
}
