package operation

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// Operation is fuelsync's one reconcile operation, which plan, apply, approve,
// watch and serve all run (as every Terraform command runs one backend
// operation): read a revision, validate it, render the clusters it changes,
// plan against the applied state, and, when asked, apply under the lock.
//
// The cluster is the unit. An error holds the clusters it concerns (an error
// in a cluster's own spec, that cluster; in a release or a plugin, the
// clusters that use it; in fuelsync.yaml, all of them) and every other cluster
// is planned and applied: a held cluster keeps its applied artifacts and
// state. Each cluster's policy is honoured: suspend: true leaves it alone,
// sync: manual plans it and waits for approval, depends_on applies it only
// once the clusters it names are synced at the revision.
type Operation struct {
	Workdir     *state.Workdir
	ToolVersion string
	// Load tunes the load of the revision (a cache shared with another load).
	Load loader.Options
	// Guard holds back a cluster the revision would leave without any node,
	// and a revision that removes every cluster (watch and serve), unless
	// AllowEmpty or the revision's allow_empty: true.
	Guard      bool
	AllowEmpty bool
	// OpenRevision, when set, opens a commit of the repository followed: the
	// applied revision of a changed cluster is rendered again so that the
	// change set can say which tag or plugin took tasks away.
	OpenRevision func(rev string) (fs.FS, error)
	// Prepare, when set, runs under the lock with the applied state, before
	// the plan (a replica makes the applied set another leader made).
	Prepare func(ctx context.Context, st *state.State) error
	// Leading, when set, is asked before every step that writes (tidying,
	// publishing): an error (the leadership was lost) stops the operation
	// there, before anything is written.
	Leading func() error
	// Health, when set, is a cluster's health in the applied state st, from
	// its nodes' reports: a cluster that depends_on another with healthy:
	// true waits until it is healthy. Without it, no cluster is healthy.
	Health func(cluster string, st *state.State) reports.Health
	// OnLoad and OnRender are told of each load and of the clusters each
	// render renders (tests count them).
	OnLoad   func()
	OnRender func(clusters []string)
	// OnRenderApplied is told the clusters of applied revisions rendered
	// again (for causes).
	OnRenderApplied func(clusters []string)
}

// health is the health of cluster in st (unknown without o.Health).
func (o *Operation) health(cluster string, st *state.State) reports.Health {
	if o.Health == nil {
		return reports.ClusterHealth(nil, cluster, nil)
	}
	return o.Health(cluster, st)
}

// Request is one run of an Operation.
type Request struct {
	// Revision is the revision reconciled: a commit, or the working tree.
	Revision source.Revision
	// Skip are paths of the revision that are not inputs (a work directory
	// inside the working tree).
	Skip []string
	// Targets limits the operation to these clusters (--cluster): the others
	// keep their applied artifacts and their status.
	Targets []string
	// Owns, when set, limits the operation to the clusters it returns of
	// those it is given: every cluster of the run (of the revision and of the
	// applied state), sorted, once per run (a serve replica's shard, which
	// claims what it returns, controller/shard.go); with Targets, to those of
	// them targeted too. The others are untouched, as with Targets. Unlike
	// Targets it is no explicit apply (a sync: manual cluster still waits
	// for approval), and a cluster waits for a dependency it does not own
	// until the state records that dependency synced at the revision. A run
	// that owns no cluster applies nothing. A run with nothing to do (its
	// inputs are the applied state's) still gives Owns the clusters the
	// state records.
	Owns func(clusters []string) []string
	// Apply applies the plan, under the lock; without it the operation plans.
	Apply bool
	// Saved, when set, is a saved plan (plan --out) to apply exactly: the
	// revision is rendered again and must give its artifacts. SavedName
	// names it in messages.
	Saved     *Plan
	SavedName string
	// Confirm, when set, is asked before applying a plan that changes
	// something; false cancels the apply (ErrCancelled). It is asked under
	// the lock, unless Ask.
	Confirm func(*Result) bool
	// Ask says Confirm asks a person, who may take long to answer: the plan
	// is made and Confirm asked before the lock is taken, so that a
	// cancelled apply leaves nothing behind and nobody waits on the lock
	// meanwhile; under the lock, a state that moved since refuses the plan
	// (*StaleError, Asked).
	Ask bool
	// Lock names the operation in the lock's holder ("apply", "reconcile"),
	// LockTimeout how long it waits for the lock.
	Lock        string
	LockTimeout time.Duration
	// Full skips the shortcut of a revision whose inputs are those of the
	// applied state: the revision is loaded (the loop wants its model for
	// the status).
	Full bool
	// Approve, when set, applies the pending plan of the one target
	// (fuelsync approve): Revision must be its revision, and the plan made
	// again must give the pending plan's artifacts, against the applied
	// artifacts it was made against.
	Approve *state.Pending
}

// Result is what an operation did.
type Result struct {
	// Outcome is how it ended, in one word (see Outcome).
	Outcome Outcome
	// Revision is the revision reconciled.
	Revision string
	// Repo is the revision loaded (its sources give the diagnostics'
	// snippets); nil when the inputs were those of the applied state and
	// nothing was loaded.
	Repo *loader.Repo
	// Diagnostics are every problem of the load and the render, sorted.
	Diagnostics hcl.Diagnostics
	// Orphans are the errors that hold no cluster (a plugin no cluster uses).
	Orphans hcl.Diagnostics
	// State is the applied state the plan was made against; Next the state
	// written, nil when nothing was applied.
	State, Next *state.State
	// Plan is the plan: what applying changes, and every cluster's status
	// after it.
	Plan *Plan
	// Clusters are every cluster's result, sorted by name.
	Clusters []*ClusterResult
	// Models are the models of the clusters rendered and planned (their
	// graphs dropped once compared), in the order of their names.
	Models []*render.Model
	// Kept are the clusters whose applied artifacts were kept, not rendered.
	Kept []string
	// Again says a cluster waits for another that this run changed: the next
	// run (of the same revision) may apply it.
	Again bool
	// WaitingHealth are the clusters that wait for a dependency to be healthy
	// (depends_on with healthy: true), sorted: a run of the same revision may
	// apply them once it is (its nodes' reports say so).
	WaitingHealth []string
	// Problems are the problems of the whole revision: the guard's, when it
	// removes every cluster's nodes, and the errors that hold no cluster.
	Problems []string

	// Warnings are things worth a user's attention that did not stop it
	// (applied files found changed in place, and repaired).
	Warnings []string

	// heldAll is the guard's reason to hold the whole revision.
	heldAll string
	// outs are what the plan kept of each cluster it rendered and planned.
	outs map[string]*clusterOut
	// unreadable says the applied set could not be made again: the apply
	// publishes every file, the kept clusters' rendered again (keptStaged:
	// those staged).
	unreadable bool
	keptStaged map[string]string
	// repos are the applied revisions loaded.
	repos *revisionRepos
}

// hasArtifacts says whether st has applied artifacts of cluster c.
func hasArtifacts(st *state.State, c string) bool {
	for name := range st.Artifacts {
		if state.ClusterOf(name) == c {
			return true
		}
	}
	return false
}

// ClusterResult is one cluster's part of a Result.
type ClusterResult struct {
	Name string
	// Status is the cluster's status after the operation: synced (applied,
	// or nothing to apply), out_of_sync (changes planned, not applied),
	// held, suspended or awaiting_approval.
	Status string
	// Diagnostics are the errors that hold it; Problems every reason it is
	// not synced, as text (file:line:col: error: message).
	Diagnostics hcl.Diagnostics
	Problems    []string
	// Changes are its planned changes (nil: none), applied or not.
	Changes *diff.ClusterChange
	// Applied says its changes were applied by this run.
	Applied bool
}

// Held lists the clusters of r whose status is held, sorted.
func (r *Result) Held() []string {
	var out []string
	for _, c := range r.Clusters {
		if c.Status == state.StatusHeld {
			out = append(out, c.Name)
		}
	}
	return out
}

// Cluster returns the result of cluster name, or nil.
func (r *Result) Cluster(name string) *ClusterResult {
	for _, c := range r.Clusters {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// ErrCancelled says Request.Confirm declined the apply; nothing was changed.
var ErrCancelled = errors.New("apply cancelled; nothing was changed")

// UnknownClusterError says a cluster asked for (--cluster) is not in the
// revision nor in the applied state.
type UnknownClusterError struct {
	Name  string
	Known []string
}

func (e *UnknownClusterError) Error() string {
	known := "none"
	if len(e.Known) > 0 {
		known = strings.Join(e.Known, ", ")
	}
	return fmt.Sprintf("no cluster %q; clusters: %s", e.Name, known)
}

// PlanChangedError says a saved plan no longer matches what its revision
// renders to with the applied state: the configuration or the tool changed.
type PlanChangedError struct {
	PlanFile string
	Why      string
}

func (e *PlanChangedError) Error() string {
	return fmt.Sprintf("the plan %s no longer matches its revision: %s; run plan again", e.PlanFile, e.Why)
}

// Run runs the operation once.
func (o *Operation) Run(ctx context.Context, req Request) (*Result, error) {
	if req.Apply && req.Ask && req.Confirm != nil && req.Saved == nil {
		return o.runAsking(ctx, req)
	}
	w := o.Workdir
	res := &Result{Revision: req.Revision.SHA}
	// 1. The lock, for an apply (and a replica's preparation): the state read
	// next is the one the apply replaces.
	var lock *state.Lock
	if req.Apply || o.Prepare != nil {
		l, err := o.lock(ctx, req)
		if err != nil {
			return res, err
		}
		defer l.Unlock()
		lock = l
	}
	// 2. The applied state.
	st, err := w.ReadState()
	if err != nil {
		return res, err
	}
	res.State = st
	if req.Saved != nil {
		if err := req.Saved.CheckFresh(st, req.SavedName); err != nil {
			return res, err
		}
		req.Targets = req.Saved.Targets
	}
	if o.Prepare != nil {
		if err := o.Prepare(ctx, st); err != nil {
			return res, err
		}
	}
	// 3. A revision whose inputs are those of the applied state: nothing to
	// do, nothing loaded.
	files := inputFingerprint(req.Revision.FS, o.Load, req.Skip)
	if req.Saved == nil && len(req.Targets) == 0 && !req.Full && st.Unchanged(files, o.ToolVersion) && hasSet(w, st) {
		res.Plan = UnchangedPlan(st, req.Revision.SHA, o.ToolVersion, files)
		res.Outcome = NoChange
		res.Clusters = recordedClusters(st)
		if req.Owns != nil {
			// A shard still learns the clusters (another owner's commit
			// may have added or removed one, which moves owners), here
			// those the state records: the revision's, as applied.
			req.Owns(slices.Sorted(maps.Keys(st.Clusters)))
		}
		return res, nil
	}
	// 4. Load, validate, render what changed, and plan; an apply writes the
	// new files of each cluster to the object store as it goes (the stage),
	// rather than keep every cluster's render until it publishes.
	var stage *state.Stage
	if req.Apply && lock != nil {
		if stage, err = w.NewStage(lock); err != nil {
			return res, err
		}
		defer stage.Discard() // what no set links
	}
	if err := o.plan(res, req, st, files, stage); err != nil {
		return res, err
	}
	p := res.Plan
	if req.Saved != nil {
		if why := samePlan(req.Saved, p); why != "" {
			return res, &PlanChangedError{PlanFile: req.SavedName, Why: why}
		}
	}
	if req.Approve != nil {
		if err := checkApproval(res, req); err != nil {
			return res, err
		}
	}
	if !req.Apply || !needsApply(res) || req.Owns != nil && len(p.Targets) == 0 {
		res.Outcome = outcomeOf(res, req.Apply, false)
		return res, nil
	}
	// 5. Apply: asked first when asked to ask, then published and recorded
	// in one switch.
	if req.Confirm != nil && req.Saved == nil && !req.Confirm(res) {
		return res, ErrCancelled
	}
	return o.apply(res, lock, stage)
}

// needsApply says whether applying the plan of res writes anything: changes,
// statuses, a first state, or a whole set whose applied one is unreadable;
// never a revision the guard holds back whole.
func needsApply(res *Result) bool {
	p := res.Plan
	return res.heldAll == "" && (p.ChangesPresent || p.StatusChanged || res.State.Serial == 0 || res.unreadable)
}

// lock takes the lock of req (the backend's, then the work directory's) and
// tidies the work directory under it.
func (o *Operation) lock(ctx context.Context, req Request) (*state.Lock, error) {
	if err := o.leading(); err != nil {
		return nil, err
	}
	name := req.Lock
	if name == "" {
		name = "apply"
	}
	l, err := o.Workdir.Lock(ctx, name, req.LockTimeout)
	if err != nil {
		return nil, err
	}
	if err := o.leading(); err == nil {
		err = o.Workdir.Tidy(l)
	}
	if err != nil {
		l.Unlock()
		return nil, err
	}
	return l, nil
}

// runAsking is an apply that asks a person first (Request.Ask): it plans without
// the lock, asks, and takes the lock only once the answer is yes. A cancelled
// apply leaves nothing behind (no lock file, no work directory it would have
// made), and nobody waits on the lock while a person reads the plan. Under
// the lock the applied state must still be the one planned against (its
// serial and lineage): otherwise nothing is applied (*StaleError, Asked).
func (o *Operation) runAsking(ctx context.Context, req Request) (*Result, error) {
	res := &Result{Revision: req.Revision.SHA}
	// Where the work directory cannot be written, before a plan is shown.
	if err := state.CheckSystem(); err != nil {
		return res, err
	}
	plan := req
	plan.Apply, plan.Confirm, plan.Ask = false, nil, false
	res, err := o.Run(ctx, plan)
	if err != nil || !needsApply(res) {
		return res, err // the outcome of a plan that applies nothing is the apply's
	}
	if !req.Confirm(res) {
		return res, ErrCancelled
	}
	lock, err := o.lock(ctx, req)
	if err != nil {
		return res, err
	}
	defer lock.Unlock()
	st, err := o.Workdir.ReadState()
	if err != nil {
		return res, err
	}
	if st.Serial != res.State.Serial || st.Lineage != res.State.Lineage {
		return res, &StaleError{Plan: res.State, State: st, Asked: true}
	}
	return o.apply(res, lock, nil)
}

// apply applies the plan of res, made against res.State, under lock: the
// files stage holds (nil: none) are linked, the others read from the applied
// set or rendered again.
func (o *Operation) apply(res *Result, lock *state.Lock, stage *state.Stage) (*Result, error) {
	w, st, p := o.Workdir, res.State, res.Plan
	if err := o.leading(); err != nil {
		return res, err
	}
	src := setSource{stage: stage, staged: map[string]string{}, unreadable: res.unreadable}
	if stage != nil {
		for _, out := range res.outs {
			maps.Copy(src.staged, out.staged)
		}
		maps.Copy(src.staged, res.keptStaged)
	}
	models := res.Models
	if !p.ChangesPresent && !res.unreadable {
		models = nil // statuses only: the applied files are kept
	}
	src.render = func(clusters []string, put func(name string, data []byte) error) error {
		return o.renderAgain(res, res.repos, clusters, put)
	}
	src.damaged = func(c string, err error) {
		// Applied files changed in place, their objects too: the cluster is
		// rendered again from its applied revision, and the apply writes
		// them anew (never wedged on them).
		if _, ok := res.outs[c]; ok {
			return // rendered by this plan: its files are written anew anyway
		}
		res.Warnings = append(res.Warnings, fmt.Sprintf("the applied files of cluster %s were changed in place (%v); they are rendered again from revision %s and written anew",
			c, err, source.Short(appliedRevision(st, c))))
	}
	next, err := publishPlan(w, lock, st, p, models, src)
	if err != nil {
		return res, err
	}
	res.Next = next
	for _, c := range res.Clusters {
		if rec := p.record(c.Name); rec != nil && rec.Changed {
			c.Applied = true
			if c.Status == state.StatusOutOfSync {
				c.Status = state.StatusSynced
			}
		}
	}
	res.Outcome = outcomeOf(res, true, p.ChangesPresent)
	return res, nil
}

func (o *Operation) leading() error {
	if o.Leading == nil {
		return nil
	}
	return o.Leading()
}

// outcomeOf is the outcome of a run: applied when it applied changes;
// otherwise planned (changes found, not applied), invalid (a cluster is held
// by errors), held (by the guard) or unchanged. A run that applied only
// statuses (a cluster held, or synced again without a change of its
// artifacts) is not "applied": it is what the revision is, invalid or
// unchanged.
func outcomeOf(res *Result, apply, applied bool) Outcome {
	switch {
	case res.heldAll != "":
		return Held
	case applied:
		return Applied
	case res.Plan.ChangesPresent && !apply:
		return Planned
	}
	guarded, deferred := false, false
	for _, c := range res.Clusters {
		if c.Status == state.StatusAwaitingApproval || c.Status == state.StatusOutOfSync && c.Changes != nil {
			deferred = true
		}
		if c.Status != state.StatusHeld {
			continue
		}
		if len(c.Diagnostics) > 0 {
			return Invalid
		}
		guarded = true
	}
	switch {
	case guarded:
		return Held
	case deferred:
		return Planned // changes wait: for approval, or for other clusters
	}
	return NoChange
}

// disposition is what the operation does with a cluster.
type disposition int

const (
	dispRender    disposition = iota // rendered and planned
	dispReused                       // its inputs are the applied state's: kept as applied
	dispHeld                         // errors, or it would lose every node: kept as applied
	dispSuspended                    // suspend: true: kept as applied
	dispUntouched                    // not a target: kept, its record too
	dispGone                         // not in the revision: its nodes are deleted
)

// plan loads and renders the revision and plans it against st, cluster by
// cluster: res gets the plan and every cluster's result.
func (o *Operation) plan(res *Result, req Request, st *state.State, files string, stage *state.Stage) error {
	w := o.Workdir
	rev := req.Revision
	if o.OnLoad != nil {
		o.OnLoad()
	}
	repo, diags := loader.Load(rev.FS, o.Load)
	res.Repo = repo
	attr := newAttribution(repo, st)
	holds := map[string]hcl.Diagnostics{}
	res.Orphans = attr.attribute(diags, holds)

	// Every cluster: of the revision, of the applied state, and those a spec
	// that no longer loads would define.
	names := slices.Clone(attr.all)
	for c := range holds {
		names = appendNew(names, c)
	}
	slices.Sort(names)
	for _, t := range req.Targets {
		if !slices.Contains(names, t) {
			return &UnknownClusterError{Name: t, Known: names}
		}
	}
	targeted := func(c string) bool { return len(req.Targets) == 0 || slices.Contains(req.Targets, c) }
	var owned []string // a shard's clusters (Owns)
	if req.Owns != nil {
		for _, name := range req.Owns(slices.Clone(names)) {
			if targeted(name) && slices.Contains(names, name) {
				owned = append(owned, name)
			}
		}
		targeted = func(c string) bool { return slices.Contains(owned, c) }
	}

	// The clusters whose inputs are those of the applied state keep their
	// applied artifacts (and are synced).
	// An applied set that is not in the work directory and could not be made
	// again (its revision left git: history rewritten and collected): every
	// cluster that can be is rendered, the plan compares with the state's
	// digests, and the apply publishes a whole new set.
	unreadable := st.Serial > 0 && w.Backend != nil && !hasSet(w, st)
	if unreadable {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the applied set of serial %d is not in %s and cannot be made again (its revision %s cannot be read): "+
			"every cluster is rendered, what cannot be compared with the applied state is planned as changed, and the apply publishes a whole new set",
			st.Serial, w.Dir, source.Short(st.Revision)))
	}
	var reusable []string
	var cfiles map[string]string
	if files != "" {
		reusable, cfiles = Reuse(w, st, rev.FS, repo, o.Load, o.ToolVersion, req.Skip...)
		if unreadable {
			reusable = nil // their files are not here to keep
		}
	}
	disp := map[string]disposition{}
	var list []string
	for _, name := range names {
		c := repo.Cluster(name)
		switch {
		case !targeted(name):
			disp[name] = dispUntouched
		case c != nil && repo.Suspended(c):
			disp[name] = dispSuspended
		case len(holds[name]) > 0:
			disp[name] = dispHeld
		case c == nil:
			disp[name] = dispGone
		case slices.Contains(reusable, name):
			disp[name] = dispReused
		default:
			disp[name] = dispRender
			list = append(list, name)
		}
	}
	// Each cluster of list is rendered, compared with its applied artifacts
	// and, for an apply, its new files staged, one after the other; the
	// graphs of each are dropped once it is done.
	repos := &revisionRepos{open: o.OpenRevision, load: o.Load}
	pl := &planner{
		st: st, old: byCluster(st.Artifacts), applied: w.SetFS(st.Serial), unreadable: unreadable, stage: stage,
		guard:     o.Guard && !o.AllowEmpty && !repo.Settings.AllowEmpty,
		oldRender: o.oldRender(st, repos),
		outs:      map[string]*clusterOut{}, diags: map[string]hcl.Diagnostics{},
	}
	if len(list) > 0 {
		data, err := render.Walk(repo, render.Options{Clusters: list, State: st}, false, pl.cluster)
		if err != nil {
			return err
		}
		if o.OnRender != nil {
			o.OnRender(list)
		}
		diags = append(diags, data...)
		res.Orphans = append(res.Orphans, attr.attribute(data, holds)...)
		for _, name := range list {
			d := pl.diags[name]
			diags = append(diags, d...)
			for _, e := range d {
				if e.Severity == hcl.DiagError {
					holds[name] = append(holds[name], e)
				}
			}
		}
	}
	res.Diagnostics = loader.SortDiagnostics(diags)
	// The clusters rendered, without errors, in the order of names.
	var rendered []string
	for _, name := range names {
		if out := pl.outs[name]; out != nil && len(holds[name]) == 0 {
			rendered = append(rendered, name)
		}
	}
	for name, d := range disp {
		if (d == dispRender || d == dispReused) && len(holds[name]) > 0 {
			disp[name] = dispHeld
		}
	}
	// The guard: a cluster left without a node is held back, and so is every
	// cluster when the revision leaves no node at all.
	guarded := map[string]string{}
	if pl.guard {
		var keptNames []string
		for name, d := range disp {
			if d != dispRender && d != dispGone {
				keptNames = append(keptNames, name)
			}
		}
		var rs []*render.Rendered
		for _, name := range rendered {
			rs = append(rs, &render.Rendered{Model: pl.outs[name].model})
		}
		if why := emptying(st, rs, keptNames); strings.HasPrefix(why, "removes every cluster") {
			// The whole revision is held: planned (the status shows what it
			// would do), never applied, nothing recorded.
			res.heldAll = fmt.Sprintf("held back: revision %s %s; it is applied only with --allow-empty, or allow_empty: true in fuelsync.yaml", source.Short(rev.SHA), why)
		}
		for _, name := range rendered {
			if pl.outs[name].emptied {
				guarded[name] = fmt.Sprintf("held back: revision %s removes every node of cluster %s (%d applied); it is applied only with --allow-empty, or allow_empty: true in fuelsync.yaml",
					source.Short(rev.SHA), name, len(st.Clusters[name].Nodes))
			}
		}
		for name := range guarded {
			disp[name] = dispHeld
		}
		rendered = slices.DeleteFunc(rendered, func(name string) bool { return guarded[name] != "" })
	}
	if source.IsWorkingTree(rev.SHA) && files != "" && inputFingerprint(rev.FS, o.Load, req.Skip) != files {
		// A working tree edited while it was loaded: its fingerprint says
		// nothing of what was rendered.
		files, cfiles = "", nil
	}

	changes := map[string]*diff.ClusterChange{}
	for _, name := range rendered {
		if cc := pl.outs[name].change; cc != nil {
			changes[name] = cc
		}
	}
	// Policy: a manual cluster's changes wait for approval; a cluster waits
	// for the clusters it depends on to be synced at this revision (their
	// applied artifacts already the revision's).
	atHead := func(name string) bool {
		switch disp[name] {
		case dispReused:
			return true
		case dispRender:
			return changes[name] == nil && guarded[name] == ""
		case dispUntouched:
			// Another shard's: synced at this revision, as its owner recorded.
			cs := st.Clusters[name]
			return req.Owns != nil && cs != nil && cs.StatusOf() == state.StatusSynced && cs.Revision == rev.SHA
		}
		return false
	}
	// A dependency with healthy: true must be healthy too: every node
	// converged on its applied artifacts, which are the revision's.
	waiting := map[string][]string{}
	unhealthy := map[string][]string{} // why each cluster waits for a dependency's health
	awaiting := map[string]bool{}
	for _, name := range rendered {
		c := pl.outs[name].model.Cluster
		if changes[c.Name] == nil {
			continue
		}
		for _, dep := range c.DependsOn {
			switch {
			case !atHead(dep.Cluster):
				waiting[c.Name] = append(waiting[c.Name], dep.Cluster)
			case dep.Healthy:
				if h := o.health(dep.Cluster, st); h.Health != reports.Healthy {
					unhealthy[c.Name] = append(unhealthy[c.Name], fmt.Sprintf("waiting for cluster %s to be healthy at revision %s (it is %s: %d of %d nodes converged)",
						dep.Cluster, source.Short(rev.SHA), h.Health, h.Converged, h.Converged+h.Progressing+h.Failed))
				}
			}
		}
		if len(waiting[c.Name])+len(unhealthy[c.Name]) == 0 && repo.SyncPolicy(c) == "manual" && len(req.Targets) == 0 {
			awaiting[c.Name] = true
		}
	}
	deferred := func(name string) bool { return awaiting[name] || len(waiting[name])+len(unhealthy[name]) > 0 }
	// Once more at once only when this run applies a cluster that another
	// waits for: else the next run of the revision plans the same (a
	// dependency suspended, held or awaiting approval waits for a commit
	// or an approval, another shard's commit triggers its own); a loop
	// reconciled such a revision again 8 times a second.
	res.Again = false
	for _, deps := range waiting {
		for _, dep := range deps {
			res.Again = res.Again || req.Apply && res.heldAll == "" && disp[dep] == dispRender && changes[dep] != nil && !deferred(dep)
		}
	}
	if len(unhealthy) > 0 {
		res.WaitingHealth = slices.Sorted(maps.Keys(unhealthy))
	}
	// The plan: the clusters rendered and not deferred; every other cluster
	// keeps its applied artifacts.
	var keptNames []string
	for _, name := range names {
		if d := disp[name]; d != dispRender && d != dispGone || deferred(name) {
			keptNames = append(keptNames, name)
		}
	}
	digests := map[string]string{}
	var planned []*diff.ClusterChange
	res.outs = map[string]*clusterOut{}
	for _, name := range rendered {
		if deferred(name) {
			continue
		}
		out := pl.outs[name]
		res.outs[name] = out
		res.Models = append(res.Models, out.model)
		maps.Copy(digests, out.digests)
		if out.change != nil {
			planned = append(planned, out.change)
		}
	}
	gone, err := assemble(st, pl.applied, unreadable, digests, keptNames, rev.SHA, o.ToolVersion)
	if err != nil {
		return err
	}
	cs := changeSet(append(planned, gone...))
	for _, cc := range gone {
		changes[cc.Name] = cc
	}
	p := &Plan{
		FormatVersion: PlanFormatVersion, Lineage: st.Lineage, Serial: st.Serial, Revision: rev.SHA, ToolVersion: o.ToolVersion,
		Artifacts: digests, ChangesPresent: !cs.Empty(), Changes: cs,
		InputFiles: files, ClusterFiles: cfiles, Targets: slices.Clone(req.Targets),
		// A cluster waiting for a health is not applied: the state is not the
		// outcome of these inputs (the same commit is planned again once the
		// health comes).
		Again: len(waiting)+len(unhealthy) > 0,
	}
	if req.Owns != nil {
		p.Targets = owned
	}
	res.Plan = p
	res.Kept = keptNames
	if unreadable {
		// The clusters kept must be published too, and their files are not
		// here: each is rendered again where it can be (and staged).
		res.keptStaged = map[string]string{}
		for _, c := range keptNames {
			if !hasArtifacts(st, c) {
				continue
			}
			r, err := o.renderAt(res, repos, c)
			if err != nil {
				return fmt.Errorf("the applied set of serial %d cannot be made again, and %w: make the cluster valid at revision %s (or push a state without it, fuelsync state push)",
					st.Serial, err, source.Short(rev.SHA))
			}
			if stage != nil {
				var mu sync.Mutex
				err := render.StreamCluster(r, func(name string, data []byte) error {
					sum, err := stage.Put(data)
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
	}
	res.repos = repos

	// Every cluster's result, and its record in the state the plan writes.
	for _, name := range names {
		cr := &ClusterResult{Name: name, Changes: changes[name], Diagnostics: loader.SortDiagnostics(holds[name])}
		rec := ClusterRecord{Name: name, Revision: rev.SHA}
		if c := repo.Cluster(name); c != nil {
			rec.File = c.File
		}
		switch disp[name] {
		case dispRender:
			switch {
			case awaiting[name]:
				cr.Status = state.StatusAwaitingApproval
				rec.Pending = pendingOf(st, pl.outs[name], name, rev.SHA)
			case len(waiting[name]) > 0:
				cr.Status = state.StatusOutOfSync
				for _, dep := range waiting[name] {
					cr.Problems = append(cr.Problems, waitingProblem(repo, name, dep, rev.SHA))
				}
				cr.Problems = append(cr.Problems, unhealthy[name]...)
			case len(unhealthy[name]) > 0:
				cr.Status = state.StatusOutOfSync
				cr.Problems = append(cr.Problems, unhealthy[name]...)
			case changes[name] != nil:
				cr.Status = state.StatusOutOfSync // synced once applied
				rec.Changed = true
			default:
				cr.Status = state.StatusSynced
			}
			rec.Status = cr.Status
			if rec.Status == state.StatusOutOfSync && rec.Changed {
				rec.Status = state.StatusSynced
			}
		case dispReused:
			cr.Status, rec.Status = state.StatusSynced, state.StatusSynced
		case dispHeld:
			cr.Status, rec.Status = state.StatusHeld, state.StatusHeld
			cr.Problems = ProblemLines(cr.Diagnostics, state.MaxClusterProblems)
			if g := guarded[name]; g != "" {
				cr.Problems = append(cr.Problems, g)
			}
			rec.Revision = ""
		case dispSuspended:
			cr.Status, rec.Status = state.StatusSuspended, state.StatusSuspended
			rec.Revision = ""
		case dispUntouched:
			cr.Status = st.Clusters[name].StatusOf()
			if cr.Status == "" {
				cr.Status = state.StatusOutOfSync
			}
			rec.Untouched = true
		case dispGone:
			cr.Status = state.StatusSynced // deleted once applied
			rec.Gone = true
			rec.Changed = changes[name] != nil
		}
		if rec.Status == state.StatusOutOfSync || rec.Status == state.StatusAwaitingApproval {
			rec.Revision = "" // its applied artifacts stay those of its applied revision
		}
		rec.Problems = cr.Problems
		res.Clusters = append(res.Clusters, cr)
		p.Clusters = append(p.Clusters, rec)
	}
	p.StatusChanged = statusChanged(st, p)
	if !p.ChangesPresent && st.Serial > 0 {
		// No artifact changes: applying it (for the statuses) keeps the
		// applied set's files as they are, its manifest and revision too.
		p.Artifacts, p.SetRevision = st.Artifacts, st.Revision
	}
	if res.heldAll != "" {
		res.Problems = append(res.Problems, res.heldAll)
		for _, c := range res.Clusters {
			if cs := st.Clusters[c.Name]; cs != nil && len(cs.Nodes) > 0 {
				c.Status = state.StatusHeld
			}
		}
	}
	res.Problems = append(res.Problems, ProblemLines(res.Orphans, state.MaxClusterProblems)...)
	return nil
}

// waitingProblem says why cluster name waits for dep (depends_on): dep is not
// synced at revision rev yet; and when the revision suspends dep, that it
// waits until dep is resumed (nothing else moves it).
func waitingProblem(repo *loader.Repo, name, dep, rev string) string {
	why := fmt.Sprintf("waiting for cluster %s to be synced at revision %s", dep, source.Short(rev))
	if c := repo.Cluster(dep); c != nil && repo.Suspended(c) {
		why += fmt.Sprintf(", and it is suspended (suspend: true): %s waits until %s is resumed", name, dep)
	}
	return why
}

// ApprovalError says a pending plan cannot be applied as approved.
type ApprovalError struct {
	Cluster string
	Why     string
}

func (e *ApprovalError) Error() string {
	return fmt.Sprintf("cannot approve the plan of cluster %s: %s; nothing was changed", e.Cluster, e.Why)
}

// PendingRef names a pending plan to its reviewer: its revision (short) and
// the first 12 hex digits of its artifacts' digest.
func PendingRef(pd *state.Pending) string {
	return fmt.Sprintf("revision %s (artifacts sha256 %s)", source.Short(pd.Revision), source.Short(pd.Digest))
}

// CheckApproved says why the approval of cluster's pending plan pd that
// names ref (approve --revision, the approve API's "revision") is refused:
// ref names another plan (pd.Matches). nil when it names pd, or nothing.
func CheckApproved(cluster string, pd *state.Pending, ref string) error {
	if ref == "" || pd.Matches(ref) {
		return nil
	}
	return &ApprovalError{Cluster: cluster, Why: fmt.Sprintf("the plan awaiting approval is of %s, not %s; a newer commit replaced the plan reviewed: review it and approve it again", PendingRef(pd), ref)}
}

// CheckPending says why the plan approved is not the pending plan of
// cluster, whose record is cs: a newer commit replaced it (or an apply
// dropped it) since it was approved. nil when it is the one pending.
func CheckPending(cluster string, cs *state.ClusterState, approved *state.Pending) error {
	if cs != nil && approved.Same(cs.Pending) {
		return nil
	}
	why := "it has no plan awaiting approval any more"
	if cs != nil && cs.Pending != nil {
		why = "the plan awaiting approval is now of " + PendingRef(cs.Pending)
	}
	return &ApprovalError{Cluster: cluster, Why: fmt.Sprintf("%s, not the plan approved, of %s: review it and approve it again", why, PendingRef(approved))}
}

// checkApproval checks that the plan res made for the approval of req is the
// pending plan: still the one the state records (read under the lock: a
// newer commit may have replaced the one approved), made against the same
// applied artifacts, rendering the same.
func checkApproval(res *Result, req Request) error {
	name := req.Targets[0]
	pd := req.Approve
	if err := CheckPending(name, res.State.Clusters[name], pd); err != nil {
		return err
	}
	if base := ArtifactsDigest(res.State.Artifacts, name); base != pd.Base {
		return &ApprovalError{Cluster: name, Why: "its applied artifacts changed since the plan was made (another apply); the next reconcile plans it again"}
	}
	c := res.Cluster(name)
	switch {
	case c == nil:
		return &ApprovalError{Cluster: name, Why: "the cluster is not in revision " + source.Short(pd.Revision)}
	case c.Status == state.StatusHeld:
		return &ApprovalError{Cluster: name, Why: "it is held: " + strings.Join(c.Problems, "; ")}
	case c.Status == state.StatusSuspended:
		return &ApprovalError{Cluster: name, Why: "it is suspended (suspend: true)"}
	case len(c.Problems) > 0:
		return &ApprovalError{Cluster: name, Why: strings.Join(c.Problems, "; ")}
	}
	if got := ArtifactsDigest(res.Plan.Artifacts, name); got != pd.Digest {
		return &ApprovalError{Cluster: name, Why: fmt.Sprintf("revision %s no longer renders to the plan awaiting approval (another tool version?)", source.Short(pd.Revision))}
	}
	return nil
}

// ClusterRecord is a plan's word on one cluster: its status once the plan is
// applied, and what its record in the state becomes.
type ClusterRecord struct {
	Name   string `json:"name"`
	Status string `json:"status,omitempty"`
	// Changed says the plan changes the cluster's artifacts.
	Changed bool `json:"changed,omitempty"`
	// Revision is the revision its artifacts are the render of once applied
	// ("": the one it had).
	Revision string   `json:"revision,omitempty"`
	Problems []string `json:"problems,omitempty"`
	File     string   `json:"file,omitempty"`
	// Pending is the plan that waits for approval (sync: manual).
	Pending *state.Pending `json:"pending,omitempty"`
	// Untouched: not a target of the plan; its record stays as it is. Gone:
	// not in the revision any more; its record is dropped.
	Untouched bool `json:"untouched,omitempty"`
	Gone      bool `json:"gone,omitempty"`
}

// record returns the plan's record of cluster name, or nil.
func (p *Plan) record(name string) *ClusterRecord {
	for i := range p.Clusters {
		if p.Clusters[i].Name == name {
			return &p.Clusters[i]
		}
	}
	return nil
}

// statusChanged says whether applying p changes a cluster's recorded status
// (or its problems, or its pending plan) even where no artifact changes.
func statusChanged(st *state.State, p *Plan) bool {
	for _, rec := range p.Clusters {
		cs := st.Clusters[rec.Name]
		switch {
		case rec.Untouched:
		case rec.Gone:
			if cs != nil && len(cs.Nodes) == 0 {
				return true // a held cluster never applied, now gone
			}
		case cs == nil:
			if rec.Status != state.StatusSynced || !rec.Changed {
				return true
			}
		case cs.StatusOf() != rec.Status, !slices.Equal(cs.Problems, rec.Problems), !samePending(cs.Pending, rec.Pending):
			return true
		}
	}
	return false
}

func samePending(a, b *state.Pending) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Revision == b.Revision && a.Digest == b.Digest && a.Base == b.Base
}

// pendingOf is the pending plan of cluster name, rendered as out against
// st, of revision rev.
func pendingOf(st *state.State, out *clusterOut, name, rev string) *state.Pending {
	pd := &state.Pending{Revision: rev, Digest: ArtifactsDigest(out.digests, name), Base: ArtifactsDigest(st.Artifacts, name)}
	if out.change != nil {
		pd.Summary = diff.Summarize([]*diff.ClusterChange{out.change})
	}
	return pd
}

// ArtifactsDigest is the digest of cluster's artifacts in digests (path →
// sha256): a sha256 of their sorted paths and digests.
func ArtifactsDigest(digests map[string]string, cluster string) string {
	var names []string
	for name := range digests {
		if state.ClusterOf(name) == cluster {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%s %s\n", digests[name], name)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// samePlan says how the plan p, made again from a saved plan's revision,
// differs from the saved plan ("" when it does not).
func samePlan(saved, p *Plan) string {
	if !maps.Equal(saved.Artifacts, p.Artifacts) {
		for name, sum := range saved.Artifacts {
			if p.Artifacts[name] != sum {
				return fmt.Sprintf("%s no longer renders as planned", name)
			}
		}
		for name := range p.Artifacts {
			if _, ok := saved.Artifacts[name]; !ok {
				return fmt.Sprintf("%s is rendered, but was not planned", name)
			}
		}
	}
	if len(saved.Clusters) > 0 {
		for _, rec := range p.Clusters {
			was := saved.record(rec.Name)
			if was == nil || was.Status != rec.Status {
				return fmt.Sprintf("cluster %s would be %s, not %s as planned", rec.Name, rec.Status, statusOrNone(was))
			}
		}
	}
	return ""
}

func statusOrNone(rec *ClusterRecord) string {
	if rec == nil {
		return "absent"
	}
	return rec.Status
}

// recordedClusters are the clusters of st as recorded, for a run that loaded
// nothing.
func recordedClusters(st *state.State) []*ClusterResult {
	var out []*ClusterResult
	for _, name := range slices.Sorted(maps.Keys(st.Clusters)) {
		cs := st.Clusters[name]
		out = append(out, &ClusterResult{Name: name, Status: cs.StatusOf(), Problems: slices.Clone(cs.Problems)})
	}
	return out
}

// inputFingerprint is loader.InputFingerprint of fsys with the load's
// budget (which the fingerprint covers), "" when it cannot be taken.
func inputFingerprint(fsys fs.FS, opts loader.Options, skip []string) string {
	files, err := loader.InputFingerprint(fsys, opts, skip...)
	if err != nil {
		return ""
	}
	return files
}

// hasSet says whether the applied set of st is in the work directory.
func hasSet(w *state.Workdir, st *state.State) bool {
	_, err := os.Stat(w.SetDir(st.Serial))
	return err == nil
}

var commitSHA = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{40}$`) })

// appliedRevision is the revision cluster c's applied artifacts are the
// render of.
func appliedRevision(st *state.State, c string) string {
	if cs := st.Clusters[c]; cs != nil && cs.Revision != "" {
		return cs.Revision
	}
	return st.Revision
}

// Outcome is how a reconcile ended: one word each, in the logs, the status and
// the metrics.
type Outcome string

const (
	Applied  Outcome = "applied"   // a new set was published
	Planned  Outcome = "planned"   // changes found, not applied (dry run)
	NoChange Outcome = "unchanged" // the applied artifacts are those of the commit
	Skipped  Outcome = "skipped"   // the commit was already reconciled: nothing done
	Held     Outcome = "held"      // it would remove every node of a cluster, or every cluster: not applied
	Invalid  Outcome = "invalid"   // the commit does not validate: not applied
	Failed   Outcome = "error"     // the source or the work directory failed
)

// emptying says how the rendered clusters rs empty the applied state st: every
// cluster gone, or clusters left without a node; "" when they do not. A cluster
// removed while others remain is not emptying (deleting a cluster's file is how
// a cluster is retired).
func emptying(st *state.State, rs []*render.Rendered, kept []string) string {
	var applied []string
	for name, cs := range st.Clusters {
		if len(cs.Nodes) > 0 {
			applied = append(applied, name)
		}
	}
	if len(applied) == 0 {
		return ""
	}
	slices.Sort(applied)
	nodes := map[string]int{}
	total := 0
	for _, r := range rs {
		nodes[r.Model.Cluster.Name] = len(r.Model.Cluster.Nodes)
		total += len(r.Model.Cluster.Nodes)
	}
	for _, c := range kept { // the same nodes as applied
		if cs := st.Clusters[c]; cs != nil {
			nodes[c] = len(cs.Nodes)
			total += len(cs.Nodes)
		}
	}
	if total == 0 {
		return fmt.Sprintf("removes every cluster's nodes (applied: %s)", strings.Join(applied, ", "))
	}
	var emptied []string
	for _, name := range applied {
		if n, ok := nodes[name]; ok && n == 0 {
			emptied = append(emptied, fmt.Sprintf("%s (%d applied)", name, len(st.Clusters[name].Nodes)))
		}
	}
	if len(emptied) == 0 {
		return ""
	}
	return "removes every node of cluster " + strings.Join(emptied, ", cluster ")
}
