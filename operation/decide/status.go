package decide

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

// HasArtifacts says whether st has applied artifacts of cluster c.
func HasArtifacts(st *state.State, c string) bool {
	for name := range st.Artifacts {
		if state.ClusterOf(name) == c {
			return true
		}
	}
	return false
}

// ClusterResult is one cluster's part of an operation's result.
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

// NeedsApply says whether applying the plan p, made against st, writes
// anything: changes, statuses, a first state, or a whole set whose applied one
// is unreadable; never a revision the guard holds back whole (heldAll).
func NeedsApply(st *state.State, p *Plan, heldAll string, unreadable bool) bool {
	return heldAll == "" && (p.ChangesPresent || p.StatusChanged || st.Serial == 0 || unreadable)
}

// OutcomeOf is the outcome of a run (heldAll: the guard's reason to hold
// the whole revision; changes: its plan changes artifacts; clusters: every
// cluster's result): applied when it applied changes;
// otherwise planned (changes found, not applied), invalid (a cluster is held
// by errors), held (by the guard) or unchanged. A run that applied only
// statuses (a cluster held, or synced again without a change of its
// artifacts) is not "applied": it is what the revision is, invalid or
// unchanged.
func OutcomeOf(heldAll string, changes bool, clusters []*ClusterResult, apply, applied bool) Outcome {
	switch {
	case heldAll != "":
		return Held
	case applied:
		return Applied
	case changes && !apply:
		return Planned
	}
	guarded, deferred := false, false
	for _, c := range clusters {
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

// WaitingProblem says why cluster name waits for dep (depends_on): dep is not
// synced at revision rev yet; and when the revision suspends dep, that it
// waits until dep is resumed (nothing else moves it).
func WaitingProblem(repo *loader.Repo, name, dep, rev string) string {
	why := fmt.Sprintf("waiting for cluster %s to be synced at revision %s", dep, source.Short(rev))
	if c := repo.Cluster(dep); c != nil && repo.Suspended(c) {
		why += fmt.Sprintf(", and it is suspended (suspend: true): %s waits until %s is resumed", name, dep)
	}
	return why
}

// RecordedClusters are the clusters of st as recorded, for a run that loaded
// nothing.
func RecordedClusters(st *state.State) []*ClusterResult {
	var out []*ClusterResult
	for _, name := range slices.Sorted(maps.Keys(st.Clusters)) {
		cs := st.Clusters[name]
		out = append(out, &ClusterResult{Name: name, Status: cs.StatusOf(), Problems: slices.Clone(cs.Problems)})
	}
	return out
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

// Statuses are every cluster's result and its record in the plan of the
// decision d (once d.Changes has the changes of the clusters gone too): its
// status, why it is not synced, its pending plan.
func Statuses(in Input, d *Decision) ([]*ClusterResult, []ClusterRecord) {
	var results []*ClusterResult
	var records []ClusterRecord
	for _, name := range in.Names {
		cr, rec := status(in, d, name)
		if rec.Status == state.StatusOutOfSync || rec.Status == state.StatusAwaitingApproval {
			rec.Revision = "" // its applied artifacts stay those of its applied revision
		}
		rec.Problems = cr.Problems
		results = append(results, cr)
		records = append(records, rec)
	}
	return results, records
}

// status is cluster name's result and record (Statuses).
func status(in Input, d *Decision, name string) (*ClusterResult, ClusterRecord) {
	cr := &ClusterResult{Name: name, Changes: d.Changes[name], Diagnostics: loader.SortDiagnostics(in.Holds[name])}
	rec := ClusterRecord{Name: name, Revision: in.Revision}
	if c := in.Repo.Cluster(name); c != nil {
		rec.File = c.File
	}
	switch d.Disp[name] {
	case Render:
		switch {
		case d.Awaiting[name]:
			cr.Status = state.StatusAwaitingApproval
			out := in.Compared[name]
			rec.Pending = PendingOf(in.State, out.Digests, out.Change, name, in.Revision)
		case len(d.Waiting[name]) > 0:
			cr.Status = state.StatusOutOfSync
			for _, dep := range d.Waiting[name] {
				cr.Problems = append(cr.Problems, WaitingProblem(in.Repo, name, dep, in.Revision))
			}
			cr.Problems = append(cr.Problems, d.Unhealthy[name]...)
		case len(d.Unhealthy[name]) > 0:
			cr.Status = state.StatusOutOfSync
			cr.Problems = append(cr.Problems, d.Unhealthy[name]...)
		case d.Changes[name] != nil:
			cr.Status = state.StatusOutOfSync // synced once applied
			rec.Changed = true
		default:
			cr.Status = state.StatusSynced
		}
		rec.Status = cr.Status
		if rec.Status == state.StatusOutOfSync && rec.Changed {
			rec.Status = state.StatusSynced
		}
	case Reused:
		cr.Status, rec.Status = state.StatusSynced, state.StatusSynced
	case HeldBack:
		cr.Status, rec.Status = state.StatusHeld, state.StatusHeld
		cr.Problems = ProblemLines(cr.Diagnostics, state.MaxClusterProblems)
		if g := d.Guarded[name]; g != "" {
			cr.Problems = append(cr.Problems, g)
		}
		rec.Revision = ""
	case Suspended:
		cr.Status, rec.Status = state.StatusSuspended, state.StatusSuspended
		rec.Revision = ""
	case Untouched:
		cr.Status = in.State.Clusters[name].StatusOf()
		if cr.Status == "" {
			cr.Status = state.StatusOutOfSync
		}
		rec.Untouched = true
	case Gone:
		cr.Status = state.StatusSynced // deleted once applied
		rec.Gone = true
		rec.Changed = d.Changes[name] != nil
	}
	return cr, rec
}

// HoldAll marks held every cluster of results with applied nodes in st: the
// guard holds the whole revision.
func HoldAll(st *state.State, results []*ClusterResult) {
	for _, c := range results {
		if cs := st.Clusters[c.Name]; cs != nil && len(cs.Nodes) > 0 {
			c.Status = state.StatusHeld
		}
	}
}

// MarkApplied marks applied the clusters of results whose artifacts the plan
// p changes, once it is applied: out_of_sync (changes planned) is synced.
func MarkApplied(results []*ClusterResult, p *Plan) {
	for _, c := range results {
		if rec := p.Record(c.Name); rec != nil && rec.Changed {
			c.Applied = true
			if c.Status == state.StatusOutOfSync {
				c.Status = state.StatusSynced
			}
		}
	}
}
