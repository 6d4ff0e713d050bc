package operation

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation/decide"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// Run runs the operation once, as named phases: begin (the lock for an
// apply, the applied state), load (the revision, unless its inputs are the
// applied state's), attribute (errors to clusters, targets, each cluster's
// disposition), render and compare (the clusters to render, one by one, new
// files staged for an apply), decide (operation/decide: held, waiting,
// awaiting approval, what the plan applies, every status), check (a saved
// plan, an approval), confirm, publish. The decisions are data to data, in
// operation/decide; the phases here hold the effects.
func (o *Operation) Run(ctx context.Context, req Request) (*Result, error) {
	if req.Apply && req.Ask && req.Confirm != nil && req.Saved == nil {
		return o.runAsking(ctx, req)
	}
	r := &run{o: o, req: req, res: &Result{Revision: req.Revision.SHA}}
	res := r.res
	defer r.end()
	if err := r.begin(ctx); err != nil {
		return res, err
	}
	if r.unchanged() {
		return res, nil
	}
	for _, phase := range []func() error{r.load, r.attribute, r.renderAndCompare, r.decide, r.check} {
		if err := phase(); err != nil {
			return res, err
		}
	}
	if !r.req.Apply || !res.needsApply() || r.req.Owns != nil && len(res.Plan.Targets) == 0 {
		res.Outcome = decide.OutcomeOf(res.heldAll, res.Plan.ChangesPresent, res.Clusters, r.req.Apply, false)
		return res, nil
	}
	// Confirm: asked first when asked to ask; then published and recorded in
	// one switch.
	if r.req.Confirm != nil && r.req.Saved == nil && !r.req.Confirm(res) {
		return res, ErrCancelled
	}
	return o.apply(res, r.lock, r.stage)
}

// needsApply says whether applying the plan of r writes anything
// (decide.NeedsApply).
func (r *Result) needsApply() bool {
	return decide.NeedsApply(r.State, r.Plan, r.heldAll, r.unreadable)
}

// run is one Run: what its phases hand on to the next.
type run struct {
	o   *Operation
	req Request
	res *Result

	// begin
	lock  *state.Lock
	stage *state.Stage // an apply's: the new files of each cluster as it is compared
	st    *state.State
	files string // the revision's input fingerprint ("": unknown)
	// load
	repo  *loader.Repo
	diags hcl.Diagnostics
	// attribute
	attr       *decide.Attribution
	holds      map[string]hcl.Diagnostics
	names      []string
	scope      decide.Scope
	disp       map[string]decide.Disposition
	list       []string // the clusters to render
	unreadable bool
	cfiles     map[string]string // each cluster's input fingerprint
	// render and compare
	repos *revisionRepos
	pl    *planner
}

// end releases what begin took.
func (r *run) end() {
	if r.stage != nil {
		r.stage.Discard() // what no set links
	}
	if r.lock != nil {
		r.lock.Unlock()
	}
}

// begin takes the lock, for an apply (and a replica's preparation): the
// state read next is the one the apply replaces; reads the applied state,
// checks that a saved plan was made against it, and prepares (Prepare).
func (r *run) begin(ctx context.Context) error {
	o, req := r.o, r.req
	if req.Apply || o.Prepare != nil {
		l, err := o.lock(ctx, req)
		if err != nil {
			return err
		}
		r.lock = l
	}
	st, err := o.Workdir.ReadStateUnder(r.lock) // read once under the lock, by Tidy
	if err != nil {
		return err
	}
	r.st, r.res.State = st, st
	if req.Saved != nil {
		if err := req.Saved.CheckFresh(st, req.SavedName); err != nil {
			return err
		}
		r.req.Targets = req.Saved.Targets
	}
	if o.Prepare != nil {
		if err := o.Prepare(ctx, st); err != nil {
			return err
		}
	}
	r.files = inputFingerprint(req.Revision.FS, o.Load, req.Skip)
	return nil
}

// unchanged answers a revision whose inputs are those of the applied state:
// nothing to do, nothing loaded. It says whether it did.
func (r *run) unchanged() bool {
	o, req, st, res := r.o, r.req, r.st, r.res
	if req.Saved != nil || len(req.Targets) > 0 || req.Full || !st.Unchanged(r.files, o.ToolVersion) || !hasSet(o.Workdir, st) {
		return false
	}
	res.Plan = UnchangedPlan(st, req.Revision.SHA, o.ToolVersion, r.files)
	res.Outcome = NoChange
	res.Clusters = decide.RecordedClusters(st)
	if req.Owns != nil {
		// A shard still learns the clusters (another owner's commit may have
		// added or removed one, which moves owners), here those the state
		// records: the revision's, as applied.
		req.Owns(slices.Sorted(maps.Keys(st.Clusters)))
	}
	return true
}

// load loads and validates the revision; an apply opens its stage, where
// the new files of each cluster are written as it goes, rather than keep
// every cluster's render until it publishes.
func (r *run) load() error {
	if r.req.Apply && r.lock != nil {
		stage, err := r.o.Workdir.NewStage(r.lock)
		if err != nil {
			return err
		}
		r.stage = stage
	}
	if r.o.OnLoad != nil {
		r.o.OnLoad()
	}
	r.repo, r.diags = loader.Load(r.req.Revision.FS, r.o.Load)
	r.res.Repo = r.repo
	return nil
}

// attribute gives each error to the clusters it holds, settles which
// clusters the run concerns (targets, a shard's own), which keep their
// applied artifacts, and which are rendered.
func (r *run) attribute() error {
	o, req, st, res := r.o, r.req, r.st, r.res
	w := o.Workdir
	r.attr = decide.NewAttribution(r.repo, st)
	r.holds = map[string]hcl.Diagnostics{}
	res.Orphans = r.attr.Attribute(r.diags, r.holds)
	r.names = decide.Names(r.attr.All(), r.holds)
	if err := decide.CheckTargets(r.names, req.Targets); err != nil {
		return err
	}
	r.scope = decide.Scope{Targets: req.Targets}
	if req.Owns != nil {
		r.scope.Sharded, r.scope.Owned = true, decide.Owned(r.names, req.Targets, req.Owns(slices.Clone(r.names)))
	}
	// An applied set that is not in the work directory and could not be made
	// again (its revision left git: history rewritten and collected): every
	// cluster that can be is rendered, the plan compares with the state's
	// digests, and the apply publishes a whole new set.
	r.unreadable = st.Serial > 0 && w.Backend != nil && !hasSet(w, st)
	if r.unreadable {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the applied set of serial %d is not in %s and cannot be made again (its revision %s cannot be read): "+
			"every cluster is rendered, what cannot be compared with the applied state is planned as changed, and the apply publishes a whole new set",
			st.Serial, w.Dir, source.Short(st.Revision)))
	}
	// The clusters whose inputs are those of the applied state keep their
	// applied artifacts (and are synced).
	var reusable []string
	if r.files != "" {
		reusable, r.cfiles = Reuse(w, st, req.Revision.FS, r.repo, o.Load, o.ToolVersion, req.Skip...)
		if r.unreadable {
			reusable = nil // their files are not here to keep
		}
	}
	r.disp, r.list = decide.Dispose(r.repo, r.names, r.scope, r.holds, reusable)
	return nil
}

// renderAndCompare renders each cluster of the list, compares it with its
// applied artifacts and, for an apply, stages its new files, one after the
// other; the graphs of each are dropped once it is done. Its errors hold it.
func (r *run) renderAndCompare() error {
	o, req, st := r.o, r.req, r.st
	r.repos = &revisionRepos{open: o.OpenRevision, load: o.Load}
	r.pl = &planner{
		st: st, old: byCluster(st.Artifacts), applied: o.Workdir.SetFS(st.Serial), unreadable: r.unreadable, stage: r.stage,
		guard:     o.Guard && !o.AllowEmpty && !r.repo.Settings.AllowEmpty,
		oldRender: o.oldRender(st, r.repos),
		outs:      map[string]*clusterOut{}, diags: map[string]hcl.Diagnostics{},
	}
	if len(r.list) > 0 {
		opts := render.Options{Clusters: r.list, State: st, OneAtATime: r.pl.comparesApplied(r.list)}
		data, err := render.Walk(r.repo, opts, false, r.pl.cluster)
		if err != nil {
			return err
		}
		if o.OnRender != nil {
			o.OnRender(r.list)
		}
		r.diags = append(r.diags, data...)
		r.res.Orphans = append(r.res.Orphans, r.attr.Attribute(data, r.holds)...)
		for _, name := range r.list {
			d := r.pl.diags[name]
			r.diags = append(r.diags, d...)
			for _, e := range d {
				if e.Severity == hcl.DiagError {
					r.holds[name] = append(r.holds[name], e)
				}
			}
		}
	}
	r.res.Diagnostics = loader.SortDiagnostics(r.diags)
	if source.IsWorkingTree(req.Revision.SHA) && r.files != "" && inputFingerprint(req.Revision.FS, o.Load, req.Skip) != r.files {
		// A working tree edited while it was loaded: its fingerprint says
		// nothing of what was rendered.
		r.files, r.cfiles = "", nil
	}
	return nil
}

// input is what decide decides from: the clusters as loaded, attributed,
// rendered and compared.
func (r *run) input() decide.Input {
	o := r.o
	compared := map[string]*decide.Compared{}
	for name, out := range r.pl.outs {
		compared[name] = &decide.Compared{Cluster: out.model.Cluster, Digests: out.digests, Change: out.change, Emptied: out.emptied}
	}
	return decide.Input{
		Revision: r.req.Revision.SHA, Repo: r.repo, State: r.st,
		Names: r.names, Disp: r.disp, Holds: r.holds, Compared: compared,
		Scope: r.scope, Guard: r.pl.guard, Apply: r.req.Apply,
		Health: func(c string) reports.Health { return o.health(c, r.st) },
	}
}

// decide decides what the plan applies and every cluster's status
// (operation/decide), and makes the plan: the files of the clusters it
// applies, the applied files of those it keeps.
func (r *run) decide() error {
	o, req, st, res := r.o, r.req, r.st, r.res
	rev := req.Revision
	in := r.input()
	d := decide.Decide(in)
	res.heldAll, res.Again, res.WaitingHealth = d.HeldAll, d.Again, d.WaitingHealth
	digests := map[string]string{}
	var planned []*diff.ClusterChange
	res.outs = map[string]*clusterOut{}
	for _, name := range d.Planned {
		out := r.pl.outs[name]
		res.outs[name] = out
		res.Models = append(res.Models, out.model)
		maps.Copy(digests, out.digests)
		if out.change != nil {
			planned = append(planned, out.change)
		}
	}
	gone, manifest, err := assemble(st, r.pl.applied, r.unreadable, digests, d.Kept, rev.SHA, o.ToolVersion)
	if err != nil {
		return err
	}
	if req.Apply {
		res.manifest = manifest // for the publish
	}
	cs := changeSet(append(planned, gone...))
	for _, cc := range gone {
		d.Changes[cc.Name] = cc
	}
	p := &Plan{
		FormatVersion: PlanFormatVersion, Lineage: st.Lineage, Serial: st.Serial, Revision: rev.SHA, ToolVersion: o.ToolVersion,
		Artifacts: digests, ChangesPresent: !cs.Empty(), Changes: cs,
		InputFiles: r.files, ClusterFiles: r.cfiles, Targets: slices.Clone(req.Targets),
		// A cluster waiting for a health is not applied: the state is not the
		// outcome of these inputs (the same commit is planned again once the
		// health comes).
		Again: d.Waits(),
	}
	if req.Owns != nil {
		p.Targets = r.scope.Owned
	}
	res.Plan = p
	res.Kept = d.Kept
	if r.unreadable {
		if err := r.stageKept(d.Kept); err != nil {
			return err
		}
	}
	res.repos = r.repos
	res.Clusters, p.Clusters = decide.Statuses(in, d)
	decide.Settle(st, p)
	if res.heldAll != "" {
		res.Problems = append(res.Problems, res.heldAll)
		decide.HoldAll(st, res.Clusters)
	}
	res.Problems = append(res.Problems, decide.ProblemLines(res.Orphans, state.MaxClusterProblems)...)
	return nil
}

// stageKept renders again the clusters kept, whose applied files are not
// here (the applied set is unreadable) and must be published too: each
// where it can be, its files staged.
func (r *run) stageKept(kept []string) error {
	res, st := r.res, r.st
	res.keptStaged = map[string]string{}
	for _, c := range kept {
		if !decide.HasArtifacts(st, c) {
			continue
		}
		rd, err := r.o.renderAt(res, r.repos, c)
		if err != nil {
			return fmt.Errorf("the applied set of serial %d cannot be made again, and %w: make the cluster valid at revision %s (or push a state without it, fuelsync state push)",
				st.Serial, err, source.Short(r.req.Revision.SHA))
		}
		if r.stage != nil {
			var mu sync.Mutex
			err := render.StreamCluster(rd, func(name string, data []byte) error {
				sum, err := r.stage.Put(data)
				if err != nil {
					return &StageError{Err: err}
				}
				mu.Lock()
				res.keptStaged[name] = sum
				mu.Unlock()
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	res.unreadable = true
	return nil
}

// check refuses a saved plan the revision no longer renders to, and an
// approval that is not of the pending plan.
func (r *run) check() error {
	req, res := r.req, r.res
	if req.Saved != nil {
		if why := decide.SamePlan(req.Saved, res.Plan); why != "" {
			return &PlanChangedError{PlanFile: req.SavedName, Why: why}
		}
	}
	if req.Approve != nil {
		name := req.Targets[0]
		return decide.CheckApproval(res.State, res.Plan, name, res.Cluster(name), req.Approve)
	}
	return nil
}
