package operation

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"regexp"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation/decide"
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
	// manifest is the manifest.json the plan of an apply encoded, which
	// its publish uses (checked against the plan's digest) rather than
	// encoding it again; dropped once published.
	manifest []byte
	// repos are the applied revisions loaded.
	repos *revisionRepos
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
	if err != nil || !res.needsApply() {
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
	st, err := o.Workdir.ReadStateUnder(lock)
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
	src := setSource{stage: stage, staged: map[string]string{}, unreadable: res.unreadable, manifest: res.manifest}
	res.manifest = nil
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
	decide.MarkApplied(res.Clusters, p)
	res.Outcome = decide.OutcomeOf(res.heldAll, p.ChangesPresent, res.Clusters, true, p.ChangesPresent)
	return res, nil
}

func (o *Operation) leading() error {
	if o.Leading == nil {
		return nil
	}
	return o.Leading()
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
