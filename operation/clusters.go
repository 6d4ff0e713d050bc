package operation

import (
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation/decide"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// The plan works cluster by cluster: each cluster is rendered, compared with
// its applied artifacts and, for an apply, its new files are written to the
// object store (state.Stage); then its graphs, files and their bytes are
// dropped. What it keeps of a cluster is clusterOut: digests, its change, its
// model without graphs. So the memory of a plan or an apply follows the largest
// clusters (a few in hand at once, render.Walk), not the number of clusters.

// clusterOut is what a plan keeps of a cluster it rendered.
type clusterOut struct {
	model *render.Model // its model, without graphs
	// digests are its rendered files' (path → sha256); staged those of them
	// written to the stage (their content differs from the applied file's).
	digests map[string]string
	staged  map[string]string
	change  *diff.ClusterChange
	// emptied says the render leaves it without a node while its applied
	// state has some (the guard holds it; it was not compared).
	emptied bool
}

// StageError says writing a new file to the object store failed while the
// apply planned: nothing was switched, the applied state is unchanged.
type StageError struct{ Err error }

func (e *StageError) Error() string { return e.Err.Error() }
func (e *StageError) Unwrap() error { return e.Err }

// byCluster indexes the digests of a set (path → sha256) by cluster.
func byCluster(digests map[string]string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for name, sum := range digests {
		c := state.ClusterOf(name)
		if out[c] == nil {
			out[c] = map[string]string{}
		}
		out[c][name] = sum
	}
	return out
}

// compareCluster compares the render r of one cluster with its applied files
// (old: their digests, read from applied; unreadable: they cannot be read).
// oldRender, when not nil, gives the cluster's applied revision placed again,
// for the causes of the change; it is asked only when a cause needs it
// (diff.Side.Later).
// each, when not nil, is handed every file of the render with its digest as it
// is encoded (data valid until it returns). It returns the render's digests
// and the cluster's change (nil: none).
func compareCluster(r *render.Rendered, old map[string]string, applied fs.FS, unreadable bool,
	oldRender func() *render.Rendered, each func(name string, data []byte, sum string) error) (map[string]string, *diff.ClusterChange, error) {
	if old == nil {
		old = map[string]string{}
	}
	newSide, err := diff.RenderedClusterSide(r, old, each)
	if err != nil {
		return nil, nil, err
	}
	if maps.Equal(old, newSide.Digests) {
		return newSide.Digests, nil, nil
	}
	oldSide := diff.FSSide(applied, old)
	oldSide.Unreadable = unreadable
	if oldRender != nil {
		oldSide.Later = func(string) *render.Rendered { return oldRender() }
	}
	cc, err := clusterChange(oldSide, newSide)
	return newSide.Digests, cc, err
}

// clusterChange is the change of the one cluster two sides hold.
func clusterChange(old, new *diff.Side) (*diff.ClusterChange, error) {
	cs, err := diff.Compute(old, new)
	if err != nil || len(cs.Clusters) == 0 {
		return nil, err
	}
	return cs.Clusters[0], nil
}

// goneChange is the change of cluster c when the new set has none of its
// files (a cluster removed): old are its applied files' digests.
func goneChange(old map[string]string, applied fs.FS, unreadable bool) (*diff.ClusterChange, error) {
	oldSide := diff.FSSide(applied, old)
	oldSide.Unreadable = unreadable
	return clusterChange(oldSide, &diff.Side{Digests: map[string]string{}, Read: func(name string) ([]byte, error) {
		return nil, fmt.Errorf("%s: not in the render", name)
	}})
}

// planner renders, compares and stages the clusters of a plan one by one
// (render.Walk's callback).
type planner struct {
	st         *state.State
	old        map[string]map[string]string // the applied digests, by cluster
	applied    fs.FS
	unreadable bool
	stage      *state.Stage // nil: nothing is written (a plan)
	// guard: a cluster the render leaves without a node, whose applied state
	// has some, is not compared (the guard holds it).
	guard bool
	// oldRender renders a cluster of the applied revision again (nil: never).
	oldRender func(c string) *render.Rendered

	mu    sync.Mutex
	outs  map[string]*clusterOut
	diags map[string]hcl.Diagnostics
	errs  []error
}

func (p *planner) cluster(wk *render.Walked) error {
	name := wk.Cluster.Name
	out, err := p.compare(wk)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.diags[name] = append(p.diags[name], wk.Diagnostics...)
	if err != nil {
		return fmt.Errorf("cluster %s: %w", name, err)
	}
	if out != nil {
		p.outs[name] = out
	}
	return nil
}

// comparesApplied reports whether any of clusters has applied files to be
// compared with. The walk then hands over one cluster at a time (its graphs
// still resolved on every core): a cluster compared holds, beside its render,
// the applied side's files, catalogues and tasks, and two such clusters in hand
// (a release change: every cluster compared) peaked above a cold apply, which
// holds two renders and nothing else. A cold apply compares nothing and keeps
// two clusters in hand.
func (p *planner) comparesApplied(clusters []string) bool {
	return slices.ContainsFunc(clusters, func(c string) bool { return len(p.old[c]) > 0 })
}

func (p *planner) compare(wk *render.Walked) (*clusterOut, error) {
	r := wk.Rendered
	if r == nil {
		return nil, nil
	}
	name := r.Model.Cluster.Name
	out := &clusterOut{model: r.Model}
	if p.guard && decide.Emptied(p.st, name, len(r.Model.Cluster.Nodes)) {
		out.emptied = true
		return out, nil
	}
	old := p.old[name]
	var mu sync.Mutex
	var each func(string, []byte, string) error
	if p.stage != nil {
		out.staged = map[string]string{}
		each = func(file string, data []byte, sum string) error {
			// A file the applied set holds as it is is linked from there
			// when applied; a new content is written now, while it is here.
			if !p.unreadable && old[file] == sum {
				return nil
			}
			if _, err := p.stage.Put(data); err != nil {
				return &StageError{Err: err}
			}
			mu.Lock()
			out.staged[file] = sum
			mu.Unlock()
			return nil
		}
	}
	var oldRender func() *render.Rendered
	if p.oldRender != nil {
		oldRender = func() *render.Rendered { return p.oldRender(name) }
	}
	var err error
	out.digests, out.change, err = compareCluster(r, old, p.applied, p.unreadable, oldRender, each)
	return out, err
}

// revisionRepos loads the revisions clusters were applied at, each once, for
// the renders of the applied revisions (causes, files to write again).
type revisionRepos struct {
	open func(rev string) (fs.FS, error)
	load loader.Options // the operation's: its budget, and its cache
	mu   sync.Mutex
	revs map[string]*revisionRepo
}

type revisionRepo struct {
	once sync.Once
	repo *loader.Repo
	// held are the clusters its load's errors hold.
	held map[string]hcl.Diagnostics
	err  error
}

// get returns revision rev loaded.
func (rr *revisionRepos) get(rev string) *revisionRepo {
	rr.mu.Lock()
	if rr.revs == nil {
		rr.revs = map[string]*revisionRepo{}
	}
	r := rr.revs[rev]
	if r == nil {
		r = &revisionRepo{}
		rr.revs[rev] = r
	}
	rr.mu.Unlock()
	r.once.Do(func() {
		fsys, err := rr.open(rev)
		if err != nil {
			r.err = err
			return
		}
		var diags hcl.Diagnostics
		r.repo, diags = loader.Load(fsys, rr.load)
		r.held, _ = decide.Hold(r.repo, nil, diags)
	})
	return r
}

// renderOne renders cluster c of repo with the applied state st; nil with
// the reason when it does not render.
func renderOne(repo *loader.Repo, c string, st *state.State) (*render.Rendered, hcl.Diagnostics) {
	var out *render.Rendered
	var diags hcl.Diagnostics
	data, _ := render.Walk(repo, render.Options{Clusters: []string{c}, State: st}, false, func(wk *render.Walked) error {
		out, diags = wk.Rendered, wk.Diagnostics
		return nil
	})
	if out == nil || data.HasErrors() {
		return nil, append(diags, data...)
	}
	return out, diags
}

// oldRender places the tasks of cluster c of the revision st says its applied
// artifacts are the render of, one node a class, when OpenRevision can read it
// (a commit): the change set then says which tag or plugin took tasks away.
// nil when it cannot.
func (o *Operation) oldRender(st *state.State, repos *revisionRepos) func(c string) *render.Rendered {
	if o.OpenRevision == nil {
		return nil
	}
	return func(c string) *render.Rendered {
		rev := appliedRevision(st, c)
		if !commitSHA().MatchString(rev) {
			return nil
		}
		rr := repos.get(rev)
		if rr.err != nil || len(rr.held[c]) > 0 {
			return nil
		}
		r := placeByClass(rr.repo, c, st)
		if o.OnRenderApplied != nil {
			o.OnRenderApplied([]string{c})
		}
		return r
	}
}

// placeByClass is cluster c of repo with the applied state st, its tasks
// placed on one node of each class of nodes (render.Model.PlaceByClass): what
// the causes of a change need of the applied revision, not a second render of
// every node. nil when its model does not build.
func placeByClass(repo *loader.Repo, c string, st *state.State) *render.Rendered {
	models, diags := render.Models(repo, []string{c}, render.Options{State: st})
	if len(models) != 1 || diags.HasErrors() {
		return nil
	}
	return models[0].PlaceByClass()
}

// renderAgain hands put the files of clusters rendered again, one cluster at
// a time: those the plan of res rendered, at its revision; the others at
// the revision their applied artifacts are the render of (a kept cluster
// whose applied files are damaged or unreadable).
func (o *Operation) renderAgain(res *Result, repos *revisionRepos, clusters []string, put func(name string, data []byte) error) error {
	st := res.State
	var now, before []string
	for _, c := range clusters {
		if _, ok := res.outs[c]; ok && res.Repo != nil {
			now = append(now, c)
		} else {
			before = append(before, c)
		}
	}
	if len(now) > 0 {
		var mu sync.Mutex
		var failed []string
		_, err := render.Walk(res.Repo, render.Options{Clusters: now, State: st}, false, func(wk *render.Walked) error {
			if wk.Rendered == nil {
				mu.Lock()
				failed = append(failed, wk.Cluster.Name)
				mu.Unlock()
				return nil
			}
			return render.StreamCluster(wk.Rendered, put)
		})
		if err != nil {
			return err
		}
		if len(failed) > 0 {
			slices.Sort(failed)
			return fmt.Errorf("cluster %s does not render at revision %s", failed[0], source.Short(res.Revision))
		}
	}
	for _, c := range before {
		r, err := o.renderAt(res, repos, c)
		if err != nil {
			return err
		}
		if err := render.StreamCluster(r, put); err != nil {
			return err
		}
	}
	return nil
}

// renderAt renders cluster c at the revision its applied artifacts are the
// render of, with the applied state: the revision of res when it is that one
// (its inputs are those it was applied with), else a commit OpenRevision
// opens.
func (o *Operation) renderAt(res *Result, repos *revisionRepos, c string) (*render.Rendered, error) {
	st := res.State
	rev := appliedRevision(st, c)
	repo := res.Repo
	if rev != res.Revision || repo == nil {
		if o.OpenRevision == nil || !commitSHA().MatchString(rev) {
			return nil, fmt.Errorf("cluster %s was applied at revision %s, which cannot be read again", c, source.Short(rev))
		}
		rr := repos.get(rev)
		if rr.err != nil {
			return nil, fmt.Errorf("reading revision %s of cluster %s: %w", source.Short(rev), c, rr.err)
		}
		repo = rr.repo
	}
	r, diags := renderOne(repo, c, st)
	if r == nil || diags.HasErrors() {
		return nil, fmt.Errorf("cluster %s does not render at revision %s", c, source.Short(rev))
	}
	return r, nil
}
