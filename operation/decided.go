package operation

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/fuelsync/fuelsync/loader"
	"github.com/fuelsync/fuelsync/operation/decide"
	"github.com/fuelsync/fuelsync/state"
)

// The decisions are operation/decide's (data to data); these are its names
// as the operation's callers know them.

// Plan is the difference between the applied state and a render of the
// configuration; saved as a plan file, it is what apply applies.
type Plan = decide.Plan

// ClusterRecord is a plan's word on one cluster.
type ClusterRecord = decide.ClusterRecord

// ClusterResult is one cluster's part of a Result.
type ClusterResult = decide.ClusterResult

// Outcome is how a reconcile ended, in one word.
type Outcome = decide.Outcome

// The outcomes (decide.Outcome).
const (
	Applied  = decide.Applied
	Planned  = decide.Planned
	NoChange = decide.NoChange
	Skipped  = decide.Skipped
	Held     = decide.Held
	Invalid  = decide.Invalid
	Failed   = decide.Failed
)

// PlanFormatVersion is the format_version of plan files.
const PlanFormatVersion = decide.PlanFormatVersion

// The errors of the decisions.
type (
	StaleError          = decide.StaleError
	PlanChangedError    = decide.PlanChangedError
	ApprovalError       = decide.ApprovalError
	UnknownClusterError = decide.UnknownClusterError
)

// PendingRef names a pending plan to its reviewer: decide.PendingRef.
func PendingRef(pd *state.Pending) string { return decide.PendingRef(pd) }

// CheckApproved says why the approval of cluster's pending plan pd that
// names ref is refused: decide.CheckApproved.
func CheckApproved(cluster string, pd *state.Pending, ref string) error {
	return decide.CheckApproved(cluster, pd, ref)
}

// CheckPending says why the plan approved is not the pending plan of
// cluster: decide.CheckPending.
func CheckPending(cluster string, cs *state.ClusterState, approved *state.Pending) error {
	return decide.CheckPending(cluster, cs, approved)
}

// ArtifactsDigest is the digest of cluster's artifacts in digests:
// decide.ArtifactsDigest.
func ArtifactsDigest(digests map[string]string, cluster string) string {
	return decide.ArtifactsDigest(digests, cluster)
}

// UnchangedPlan is the plan of a revision whose inputs are those of the
// applied state st: decide.UnchangedPlan.
func UnchangedPlan(st *state.State, revision, toolVersion, files string) *Plan {
	return decide.UnchangedPlan(st, revision, toolVersion, files)
}

// Hold tells the errors of diags (a load of repo, or release and plugin data)
// apart by the clusters they hold, as the operation does: decide.Hold.
func Hold(repo *loader.Repo, st *state.State, diags hcl.Diagnostics) (held map[string]hcl.Diagnostics, orphans hcl.Diagnostics) {
	return decide.Hold(repo, st, diags)
}

// ProblemLines formats the errors of diags as file:line:col: error: message,
// at most max of them and a last line that counts the rest: decide.ProblemLines.
func ProblemLines(diags hcl.Diagnostics, max int) []string {
	return decide.ProblemLines(diags, max)
}
