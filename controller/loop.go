package controller

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fuelsync/fuelsync/base/redact"
	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation"
	"github.com/fuelsync/fuelsync/render"
	"github.com/fuelsync/fuelsync/reports"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// Status is what a loop reports (GET /api/v1/status, the status page).
type Status struct {
	// Version and Commit are the build's (Loop.ToolVersion, Loop.ToolCommit).
	Version string `json:"version"`
	Commit  string `json:"commit"`
	// Revision is the newest commit seen; Applied and Serial the applied state.
	Revision string `json:"revision"`
	Applied  string `json:"applied_revision"`
	Serial   int64  `json:"serial"`
	// Last is the last reconcile: when, how it ended, its change set, and the
	// problems that stopped it (file:line:col: message).
	LastReconcile time.Time         `json:"last_reconcile"`
	Outcome       operation.Outcome `json:"outcome"`
	Changes       *diff.ChangeSet   `json:"changes,omitempty"`
	Errors        []string          `json:"errors"`
	ErrorsOmitted int               `json:"errors_omitted,omitempty"` // past the first MaxProblems
	// Ready is set by the first successful reconcile. The server says
	// instead what /readyz says, and ReadyError why it is not ready.
	Ready      bool            `json:"ready"`
	ReadyError string          `json:"ready_error,omitempty"`
	Clusters   []ClusterStatus `json:"clusters"`
	// Replica is this replica's role and the leader's identity, when serve
	// runs as one of several replicas on a state on etcd.
	Replica *ReplicaStatus `json:"replica,omitempty"`
}

// ClusterStatus is a cluster as applied: its nodes with roles and tags.
type ClusterStatus struct {
	Name  string       `json:"name"`
	Nodes []NodeStatus `json:"nodes"`
}

// NodeStatus is one node of a ClusterStatus.
type NodeStatus struct {
	Name  string   `json:"name"`
	ID    int      `json:"id"`
	Roles []string `json:"roles"`
	Tags  []string `json:"tags"`
}

// Loop reconciles the work directory with the branch of Source: on every
// Trigger and every Interval. Triggers that arrive while a reconcile runs are
// coalesced into one more reconcile of the newest commit.
type Loop struct {
	Workdir  *state.Workdir
	Source   source.Source
	DryRun   bool
	Interval time.Duration
	// ToolVersion and ToolCommit are the build's version and commit: the
	// applied state records the version; the status and the metrics say both.
	ToolVersion string
	ToolCommit  string
	Log         *slog.Logger
	// Publish, when set, commits every applied set to a branch (--publish git).
	Publish *source.Publisher
	// AllowEmpty applies a revision that removes every node of a cluster, or
	// every cluster; without it (or allow_empty: true in the revision's
	// fuelsync.yaml) such a revision is held back.
	AllowEmpty bool
	// Reports, when set, keeps the nodes' reports (serve): the loop records
	// each cluster's reconciles there, and a cluster that depends_on another
	// with healthy: true waits for its health.
	Reports *reports.Store
	// OnReconcile, when set, is called after each reconcile (for metrics).
	OnReconcile func(operation.Outcome, time.Duration)
	// OnState, when set, is called after each reconcile that read the applied
	// state, with that state: after an apply, the new state, once its set is
	// committed (current switched). The artifact API wakes its waiting agents
	// from it.
	OnState func(*state.State)
	// Load tunes every load of a revision, the reconciles' and the applied
	// sets a replica makes: the loading budget (serve's and watch's
	// FUELSYNC_MAX_FILE_SIZE and FUELSYNC_MAX_REPO_SIZE) and the cache of
	// decoded files. Without a Cache the loop makes one for its life. Either
	// way the cache is swept after each reconcile, and after each applied
	// set a replica makes between reconciles: it keeps what those loads read
	// (about one revision), so that the next reconcile decodes only the
	// files its commit changed.
	Load loader.Options

	// strategy, when set, is the replica's (strategy.go): a leader's or a
	// shard's. Under mu.
	strategy strategy
	// onLoad, when set, is called before each load of a revision (tests count
	// the reconciles that load and render).
	onLoad func()
	// onRender, when set, is told the clusters each render renders.
	onRender func(clusters []string)

	once     sync.Once
	trigger  chan struct{}
	mu       sync.Mutex
	status   Status
	clusters []ClusterStatus // of the last render, under mu
	model    *loader.Repo    // the revision loaded last, under mu
	modelRev string
	// planned is the input fingerprint (loader.InputFingerprint) of the
	// revision planned last, whose model and clusters the loop holds; "" when
	// unknown. Under mu.
	planned string
	// results are every cluster's result in the last run, under mu.
	results []*operation.ClusterResult
	// again says a cluster waits for one the last run changed: the same
	// revision is reconciled once more. Under mu.
	again bool
	// tree is the tree (source.Revision.Tree) of the revision reconciled
	// last, and reconciled its commit: a commit with the same tree (a push
	// that changes nothing in the folder followed) is not reconciled again.
	// skipped says why the last reconcile was skipped. Under mu.
	tree, reconciled, skipped string
	// lastApply is when each cluster's changes were last applied by this
	// loop; approvals the clusters whose pending plan is approved (applied at
	// the next reconcile). Under mu.
	lastApply map[string]time.Time
	approvals []approval
	// recorded is each cluster's status and serial as last recorded in
	// Reports (recordReconciles). Under mu.
	recorded map[string]string
	// waitingOn are the clusters that others wait to be healthy (depends_on
	// with healthy: true) at the last run, and applied the applied state
	// after it: a report that makes one healthy reconciles the same revision
	// again (healthChanged). Under mu.
	waitingOn  map[string]bool
	applied    *state.State
	onReportMu sync.Once

	// cache is Load.Cache, or the loop's own (init). reconciling is set
	// while ReconcileOnce runs (a shard's under its lock, which its sets
	// take too): the loads of an applied set a replica makes then leave the
	// sweep to the reconcile's end.
	cache       *loader.Cache
	reconciling atomic.Bool
}

// Model is the repository of the revision the loop loaded last (valid or not),
// and that revision; nil before the first load.
func (l *Loop) Model() (*loader.Repo, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.model, l.modelRev
}

func (l *Loop) init() {
	l.once.Do(func() {
		l.trigger = make(chan struct{}, 1)
		if l.Log == nil {
			l.Log = slog.New(slog.DiscardHandler)
		}
		l.cache = l.Load.Cache
		if l.cache == nil {
			l.cache = loader.NewCache()
		}
	})
}

// loadOptions are the options of the loop's loads: Load, with the loop's
// cache.
func (l *Loop) loadOptions() loader.Options {
	opts := l.Load
	opts.Cache = l.cache
	return opts
}

// sweepBetween sweeps the loop's cache after the loads of an applied set a
// replica made, unless a reconcile runs: it sweeps at its end (a sweep in
// its middle would drop what the reconcile's own load is about to want).
func (l *Loop) sweepBetween() {
	if !l.reconciling.Load() {
		l.cache.Sweep()
	}
}

// Trigger asks for a reconcile; it never blocks.
func (l *Loop) Trigger() {
	l.init()
	select {
	case l.trigger <- struct{}{}:
	default: // one is pending already: it will see the newest commit
	}
}

// resetSeen forgets the commit reconciled last, and its tree, so that the
// next reconcile plans against the applied state whatever commit it finds: a
// replica that leads again, after another leader may have applied; a shard
// whose clusters moved. Asked while a reconcile runs, it holds for the next
// one: the end of the run under way records its commit as seen again.
func (l *Loop) resetSeen() {
	l.mu.Lock()
	l.status.Revision, l.tree = "", ""
	l.again = true
	l.mu.Unlock()
}

// reconsider asks a reconcile that plans against the applied state whatever
// commit it finds (resetSeen): a shard's members changed, a cluster it
// could not claim yet, a dependency another shard may have applied.
func (l *Loop) reconsider() {
	l.resetSeen()
	l.Trigger()
}

// showApplied shows st in the status as the applied state, once a replica
// made its set (the artifact API's waiting agents woken, OnState); newest
// says st's revision is also the newest commit this loop knows (a follower
// fetches nothing: the leader's last applied one is).
func (l *Loop) showApplied(st *state.State, newest bool) {
	l.mu.Lock()
	l.status.Applied, l.status.Serial = st.Revision, st.Serial
	if newest {
		l.status.Revision = st.Revision
	}
	l.mu.Unlock()
	if l.OnState != nil {
		l.OnState(st)
	}
}

// waitsForOthers says whether a cluster of the last reconcile waits for
// another (depends_on: out of sync, with changes and problems), which
// another replica may apply.
func (l *Loop) waitsForOthers() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.results {
		if c.Status == state.StatusOutOfSync && c.Changes != nil && len(c.Problems) > 0 {
			return true
		}
	}
	return false
}

// logger is Log, or a logger that discards when it is not set.
func (l *Loop) logger() *slog.Logger {
	l.init()
	return l.Log
}

// Status returns a copy of the loop's status.
func (l *Loop) Status() Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.status
	st.Errors = slices.Clone(st.Errors)
	st.Version, st.Commit = l.ToolVersion, l.ToolCommit
	return st
}

// Run reconciles at once, then on triggers and every Interval, until ctx ends. A
// reconcile is never interrupted midway: cancelling ctx stops the loop between
// reconciles.
func (l *Loop) Run(ctx context.Context) error {
	l.init()
	// The interval with ±10% jitter, so that many daemons do not fetch in step.
	nextTick := func() <-chan time.Time {
		if l.Interval <= 0 {
			return nil
		}
		jitter := time.Duration(rand.Int64N(int64(l.Interval)/5+1)) - l.Interval/10
		return time.After(l.Interval + jitter)
	}
	tick := nextTick()
	l.Trigger()
	backoff := time.Duration(0) // after a failure (the remote unreachable): 1 s, 2 s, ... up to a minute
	var retry <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.trigger:
		case <-tick:
			tick = nextTick()
		case <-retry:
		}
		if ctx.Err() != nil { // a trigger and the end at once: the end wins
			return nil
		}
		if l.ReconcileOnce(context.WithoutCancel(ctx)) == operation.Failed {
			backoff = min(max(2*backoff, time.Second), time.Minute)
			retry = time.After(backoff)
			continue
		}
		backoff, retry = 0, nil
	}
}

// ReconcileOnce reconciles the newest commit: fetch → load and validate →
// render → plan → apply. A replica's strategy (strategy.go) begins and ends
// it, prepares its plan, says whether it may write, and which clusters it
// owns.
func (l *Loop) ReconcileOnce(ctx context.Context) operation.Outcome {
	l.init()
	if s := l.currentStrategy(); s != nil {
		defer s.begin()()
	}
	start := time.Now()
	l.reconciling.Store(true)
	outcome, rev, cs, errs, st := l.reconcile(ctx)
	// The cache keeps what this reconcile's loads read (nothing is dropped
	// when it loaded nothing).
	l.cache.Sweep()
	l.reconciling.Store(false)
	for i, e := range errs {
		errs[i] = redact.Text(e) // an error may quote the remote's URL
	}
	l.mu.Lock()
	if rev != "" {
		l.status.Revision = rev
	}
	if outcome != operation.Skipped {
		l.status.LastReconcile, l.status.Outcome = start, outcome
		l.status.Errors, l.status.ErrorsOmitted = capProblems(errs)
		if cs != nil || outcome == operation.NoChange {
			l.status.Changes = cs
		}
	}
	if st != nil {
		l.status.Applied, l.status.Serial = st.Revision, st.Serial
		l.applied = st
	}
	if outcome == operation.Applied || outcome == operation.NoChange || outcome == operation.Planned {
		l.status.Ready = true
	}
	if cl := l.clusters; cl != nil {
		l.status.Clusters = cl
	}
	l.mu.Unlock()
	if st != nil && l.OnState != nil {
		l.OnState(st)
	}
	l.logOutcome(outcome, rev, time.Since(start), cs, errs)
	if l.OnReconcile != nil {
		l.OnReconcile(outcome, time.Since(start))
	}
	return outcome
}

// logOutcome logs a reconcile: one line with its outcome and, when it changed
// or would change something, the plan's summary line, then one line per
// cluster changed with its counts, and one line per problem. A skipped
// reconcile (the commit already reconciled, or one with the same files,
// every interval) says why: the outcome last of that commit (Loop.seen).
func (l *Loop) logOutcome(outcome operation.Outcome, rev string, d time.Duration, cs *diff.ChangeSet, errs []string) {
	level := slog.LevelInfo
	switch outcome {
	case operation.Invalid, operation.Failed, operation.Held:
		level = slog.LevelWarn
	}
	attrs := []any{"outcome", string(outcome), "revision", rev, "duration", d.Round(time.Millisecond).String(), "errors", len(errs)}
	if outcome == operation.Skipped {
		l.mu.Lock()
		why := l.skipped
		l.mu.Unlock()
		attrs = append(attrs, "reason", why)
	}
	changed := cs != nil && !cs.Empty() && (outcome == operation.Applied || outcome == operation.Planned || outcome == operation.Held)
	if changed {
		attrs = append(attrs, "plan", cs.Summary.Line())
	}
	l.Log.Log(context.Background(), level, "reconcile", attrs...)
	if changed {
		for _, cc := range cs.Clusters {
			var changed, added, removed int
			for _, n := range cc.Nodes {
				switch n.Action {
				case diff.Create:
					added++
				case diff.Delete:
					removed++
				default:
					changed++
				}
			}
			l.Log.Info("cluster changed", "revision", rev, "cluster", cc.Name, "nodes_added", added, "nodes_changed", changed, "nodes_removed", removed)
		}
	}
	shown, more := capProblems(errs)
	for _, e := range shown {
		l.Log.Error("reconcile problem", "revision", rev, "problem", e)
	}
	if more > 0 {
		l.Log.Error("reconcile problems omitted", "revision", rev, "omitted", more, "problem", MoreProblems(more))
	}
}

func (l *Loop) reconcile(ctx context.Context) (operation.Outcome, string, *diff.ChangeSet, []string, *state.State) {
	// 1. Fetch: the newest commit.
	rev, err := l.Source.Latest(ctx)
	if err != nil {
		return operation.Failed, "", nil, []string{err.Error()}, nil
	}
	// 2. Approved plans (sync: manual) first, exactly as planned. An
	// approval refused is a problem of this reconcile, which is not skipped.
	approved, napproved := l.approve(ctx)
	if l.seen(rev, napproved+len(approved)) {
		return operation.Skipped, rev.SHA, nil, nil, nil
	}
	// 3. The operation plan and apply run: validate, render what changed,
	// plan, lock, apply (a commit that changes no input of the applied set
	// is reconciled without loading or rendering).
	req := operation.Request{Revision: rev, Lock: "reconcile", LockTimeout: time.Minute}
	if o, ok := l.currentStrategy().(owner); ok {
		req.Owns = o.owns
	}
	run := l.operation().Apply
	if l.DryRun {
		run = l.operation().Plan
	}
	res, err := run(ctx, req)
	if err == nil && res.Repo == nil && !l.holdsModel(res.Plan.InputFiles) {
		// Nothing to do, but the status wants the model of these inputs.
		req.Full = true
		res, err = run(ctx, req)
	}
	var cs *diff.ChangeSet
	if res.Plan != nil {
		cs = res.Plan.Changes
	}
	st := res.Next
	if st == nil {
		st = res.State
	}
	if err != nil {
		return operation.Failed, rev.SHA, cs, []string{err.Error()}, st
	}
	for _, w := range res.Warnings {
		l.Log.Warn("reconcile warning", "revision", rev.SHA, "warning", w)
	}
	l.mu.Lock()
	l.tree, l.reconciled = rev.Tree, rev.SHA
	l.mu.Unlock()
	l.record(res)
	l.noteApplied(res)
	l.recordReconciles(ctx, res)
	l.waitForHealth(res, st)
	problems := append(approved, resultProblems(res)...)
	if res.Again {
		// A cluster waits for one this run changed: once more, at once.
		l.mu.Lock()
		l.again = true
		l.mu.Unlock()
		l.Trigger()
	}
	if res.Outcome == operation.Applied && l.Publish != nil {
		h, err := l.Publish.Commit(ctx, l.Source, l.Workdir.SetFS(res.Next.Serial), rev.SHA, res.Next.Serial)
		if err != nil {
			// The set is applied; the branch lags until the next change.
			return operation.Applied, rev.SHA, cs, append(problems, "publishing to branch "+l.Publish.Branch+": "+err.Error()), st
		}
		if h != "" {
			l.Log.Info("published", "branch", l.Publish.Branch, "commit", h, "revision", rev.SHA)
		}
	}
	return res.Outcome, rev.SHA, cs, problems, st
}

// seen says whether rev needs no reconcile (and why, in l.skipped): its
// commit was reconciled already, or one with the same tree (a commit that
// changes nothing in the folder followed), with an outcome that another
// reconcile would not change, and nothing was approved (napproved) or
// asked again since. A working tree's changes are never seen.
func (l *Loop) seen(rev source.Revision, napproved int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	again := l.again
	l.again = false
	switch l.status.Outcome {
	case operation.Applied, operation.NoChange, operation.Invalid, operation.Planned, operation.Held:
	default:
		return false
	}
	if source.IsWorkingTree(rev.SHA) || again || napproved > 0 {
		return false
	}
	sameTree := rev.Tree != "" && rev.Tree == l.tree
	switch {
	case l.status.Revision == rev.SHA && l.reconciled != rev.SHA && sameTree:
		// Skipped for its tree before: l.skipped says so still.
	case l.status.Revision == rev.SHA:
		l.skipped = "this commit was reconciled already (" + string(l.status.Outcome) + ") and nothing was approved since"
	case sameTree:
		l.skipped = "this commit changes nothing in the files read since " + source.Short(l.reconciled) +
			" was reconciled (" + string(l.status.Outcome) + ")"
	default:
		return false
	}
	return true
}

// operation is the reconcile operation of the loop: the one plan and apply
// run, with the guard against emptied clusters.
func (l *Loop) operation() *operation.Operation {
	op := &operation.Operation{
		Workdir:     l.Workdir,
		ToolVersion: l.ToolVersion,
		Load:        l.loadOptions(),
		Guard:       true,
		AllowEmpty:  l.AllowEmpty,
		Health:      l.health,
		OnLoad:      l.onLoad,
		OnRender:    l.onRender,
	}
	if s := l.currentStrategy(); s != nil {
		op.Prepare, op.Leading = s.prepare, s.leading
	}
	if rs, ok := l.Source.(source.RevisionSource); ok {
		op.OpenRevision = func(rev string) (fs.FS, error) {
			r, err := rs.At(context.Background(), rev)
			return r.FS, err
		}
	}
	return op
}

// health is a cluster's health in st from the nodes' reports (unknown
// without Reports); the reports are read first when they are not yet.
func (l *Loop) health(cluster string, st *state.State) reports.Health {
	if l.Reports == nil {
		return reports.ClusterHealth(nil, cluster, nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.Reports.Load(ctx); err != nil {
		l.Log.Warn("reading the nodes' reports; every health is unknown", "error", redact.Text(err.Error()))
	}
	return l.Reports.Health(st, cluster)
}

// holdsModel says whether the loop holds the model and clusters of the inputs
// whose fingerprint is files (it loaded them last).
func (l *Loop) holdsModel(files string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return files != "" && l.planned == files && l.model != nil
}

// record keeps what the status shows of a run: every cluster's status, and
// for a run that loaded the revision its model and the clusters' nodes.
func (l *Loop) record(res *operation.Result) {
	var models []*render.Model
	if res.Repo != nil {
		models = append(models, res.Models...)
		var kept []string
		for _, c := range res.Kept {
			if res.Repo.Cluster(c) != nil {
				kept = append(kept, c)
			}
		}
		if len(kept) > 0 {
			// The status of the kept clusters: their models, without graphs.
			more, _ := render.Models(res.Repo, kept, render.Options{State: res.State})
			models = append(models, more...)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.results = res.Clusters
	if res.Repo == nil {
		l.modelRev = res.Revision // the same inputs: the same model
		return
	}
	l.model, l.modelRev, l.planned = res.Repo, res.Revision, ""
	if res.Plan != nil {
		l.planned = res.Plan.InputFiles
	}
	l.clusters = clusterStatus(res.Repo, models)
}

// Clusters are every cluster's status line, from the applied state st and the
// last reconcile.
func (l *Loop) Clusters(st *state.State) []operation.ClusterInfo {
	l.mu.Lock()
	live, head, s := l.results, l.status.Revision, l.strategy
	l.mu.Unlock()
	var infos []operation.ClusterInfo
	if s != nil {
		infos = s.clusters(st, live, head)
	} else {
		infos = operation.ClusterInfos(st, live, head)
	}
	operation.WithHealth(infos, st, l.Reports)
	return infos
}

// PendingChanges are the changes of cluster's plan awaiting approval, as
// the last reconcile planned them; nil when it left the cluster in another
// status, or this loop has not reconciled it.
func (l *Loop) PendingChanges(cluster string) *diff.ClusterChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.results {
		if c.Name == cluster && c.Status == state.StatusAwaitingApproval {
			return c.Changes
		}
	}
	return nil
}

// LastApplied is when each cluster's changes were last applied by this loop
// (since it started).
func (l *Loop) LastApplied() map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]time.Time, len(l.lastApply))
	for c, t := range l.lastApply {
		out[c] = t
	}
	return out
}

// approval is an approved plan: cluster's pending plan as it was approved.
type approval struct {
	cluster string
	plan    state.Pending
}

// Approve asks the loop to apply plan, the pending plan of cluster (sync:
// manual) as it was approved, at its next reconcile, which it triggers. A
// plan that is no longer the one pending then (a newer commit replaced it)
// is not applied: the reconcile's problems say so.
func (l *Loop) Approve(cluster string, plan state.Pending) {
	l.init()
	l.mu.Lock()
	l.approvals = slices.DeleteFunc(l.approvals, func(a approval) bool { return a.cluster == cluster })
	l.approvals = append(l.approvals, approval{cluster, plan})
	l.mu.Unlock()
	l.Trigger()
}

// approve applies the approved pending plans, one cluster at a time; the
// problems of those that cannot be applied are returned (and the approval
// dropped: approve again once planned again).
func (l *Loop) approve(ctx context.Context) (problems []string, applied int) {
	l.mu.Lock()
	approvals := l.approvals
	l.approvals = nil
	l.mu.Unlock()
	for _, a := range approvals {
		res, err := l.applyApproved(ctx, a)
		if err != nil {
			var ae *operation.ApprovalError
			if !errors.As(err, &ae) { // which says the cluster
				err = fmt.Errorf("approving cluster %s: %w", a.cluster, err)
			}
			problems = append(problems, redact.Text(err.Error()))
			continue
		}
		l.noteApplied(res)
		l.recordReconciles(ctx, res)
		applied++
		if res.Next != nil {
			if l.OnState != nil {
				l.OnState(res.Next)
			}
			l.Log.Info("approved", "cluster", a.cluster, "revision", a.plan.Revision, "serial", res.Next.Serial)
		}
	}
	return problems, applied
}

// applyApproved applies the plan a approved, when it is still the pending
// plan of its cluster (checked again under the lock).
func (l *Loop) applyApproved(ctx context.Context, a approval) (*operation.Result, error) {
	st, err := l.Workdir.ReadState()
	if err != nil {
		return nil, err
	}
	if err := operation.CheckPending(a.cluster, st.Clusters[a.cluster], &a.plan); err != nil {
		return nil, err
	}
	rs, ok := l.Source.(source.RevisionSource)
	if !ok {
		return nil, errors.New("this source cannot read revision " + source.Short(a.plan.Revision))
	}
	rev, err := rs.At(ctx, a.plan.Revision)
	if err != nil {
		return nil, err
	}
	return l.operation().Approve(ctx, operation.Request{Revision: rev, Lock: "approve", LockTimeout: time.Minute}, a.cluster, &a.plan)
}

// noteApplied records when the clusters res applied were applied.
func (l *Loop) noteApplied(res *operation.Result) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range res.Clusters {
		if c.Applied {
			if l.lastApply == nil {
				l.lastApply = map[string]time.Time{}
			}
			l.lastApply[c.Name] = now
		}
	}
}

// waitForHealth notes the clusters the clusters of res wait to be healthy,
// and st, the state after res. A report that came while res was planned
// told healthChanged too early: a dependency healthy already is reconciled
// for at once.
func (l *Loop) waitForHealth(res *operation.Result, st *state.State) {
	if l.Reports == nil {
		return
	}
	l.onReportMu.Do(func() { l.Reports.OnChange(l.healthChanged) })
	on := map[string]bool{}
	if res.Repo != nil {
		for _, name := range res.WaitingHealth {
			if c := res.Repo.Cluster(name); c != nil {
				for _, dep := range c.DependsOn {
					if dep.Healthy {
						on[dep.Cluster] = true
					}
				}
			}
		}
	}
	l.mu.Lock()
	l.waitingOn = on
	if st != nil {
		l.applied = st
	}
	l.mu.Unlock()
	for _, dep := range slices.Sorted(maps.Keys(on)) {
		l.healthChanged(dep)
	}
}

// healthChanged is told by Reports that nodes of cluster reported: when
// another cluster waits for it to be healthy and it now is, the same
// revision is reconciled again, at once.
func (l *Loop) healthChanged(cluster string) {
	l.mu.Lock()
	waited, st := l.waitingOn[cluster], l.applied
	l.mu.Unlock()
	if !waited || st == nil || l.Reports.Health(st, cluster).Health != reports.Healthy {
		return
	}
	l.mu.Lock()
	l.again = true
	l.mu.Unlock()
	l.Trigger()
}

// recordReconciles records in Reports each cluster res applied or whose
// status changed (since the last recorded: a restarted loop records every
// cluster's once), for the cluster's reconcile history: only the clusters
// applied or planned, not those held before anything of them was applied (a
// revision of 10,000 cluster specs that did not validate made 10,000
// histories).
func (l *Loop) recordReconciles(ctx context.Context, res *operation.Result) {
	if l.Reports == nil || l.DryRun {
		return
	}
	st := res.Next
	if st == nil {
		st = res.State
	}
	var serial int64
	if st != nil {
		serial = st.Serial
	}
	now := time.Now().UTC()
	for _, c := range res.Clusters {
		if !c.Applied && neverApplied(st, c.Name) {
			continue
		}
		key := fmt.Sprintf("%s %d", c.Status, serial)
		l.mu.Lock()
		same := l.recorded[c.Name] == key || (!c.Applied && strings.HasPrefix(l.recorded[c.Name], c.Status+" "))
		l.mu.Unlock()
		if same {
			continue
		}
		rec := &reports.Reconcile{Cluster: c.Name, At: now, Revision: res.Revision, Serial: serial, Status: c.Status, Applied: c.Applied, Problems: c.Problems}
		if c.Applied && c.Changes != nil {
			for _, n := range c.Changes.Nodes {
				switch n.Action {
				case diff.Create:
					rec.NodesAdded++
				case diff.Delete:
					rec.NodesRemoved++
				default:
					rec.NodesChanged++
				}
			}
		}
		if err := l.Reports.AddReconcile(ctx, rec); err != nil {
			l.Log.Warn("recording a reconcile in the cluster's history", "cluster", c.Name, "error", redact.Text(err.Error()))
			continue
		}
		l.mu.Lock()
		if l.recorded == nil {
			l.recorded = map[string]string{}
		}
		l.recorded[c.Name] = key
		l.mu.Unlock()
	}
}

// neverApplied says whether st has nothing of cluster applied, nor a plan
// of it awaiting approval.
func neverApplied(st *state.State, cluster string) bool {
	if st == nil || st.Clusters[cluster] == nil {
		return true
	}
	cs := st.Clusters[cluster]
	return cs.Revision == "" && cs.Serial == 0 && cs.Pending == nil
}

// resultProblems are the problems of a run: the whole revision's, then those
// of each cluster held, each once.
func resultProblems(res *operation.Result) []string {
	out := slices.Clone(res.Problems)
	for _, c := range res.Clusters {
		if c.Status != state.StatusHeld {
			continue // a cluster waiting for another is not a problem: its status says so
		}
		for _, p := range c.Problems {
			if !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// rendered tells onRender the clusters of rs.
func (l *Loop) rendered(rs []*render.Rendered) {
	if l.onRender == nil {
		return
	}
	names := []string{}
	for _, r := range rs {
		names = append(names, r.Model.Cluster.Name)
	}
	l.onRender(names)
}

// clusterStatus is the status of the clusters of models, in repo's order.
func clusterStatus(repo *loader.Repo, models []*render.Model) []ClusterStatus {
	var out []ClusterStatus
	for _, c := range repo.Clusters {
		for _, m := range models {
			if m.Cluster != c {
				continue
			}
			cs := ClusterStatus{Name: c.Name}
			for _, n := range c.Nodes {
				ns := NodeStatus{Name: n.Name, ID: n.ID}
				if nt := m.NodeTags[n.Name]; nt != nil {
					ns.Roles, ns.Tags = nt.Roles, nt.Resolution
				}
				cs.Nodes = append(cs.Nodes, ns)
			}
			out = append(out, cs)
		}
	}
	return out
}
