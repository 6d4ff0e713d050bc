package decide

import (
	"fmt"
	"strings"

	"github.com/fuelsync/fuelsync/source"
	"github.com/fuelsync/fuelsync/state"
)

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

// CheckApproval checks that the plan p, made against st for the approval of
// cluster name's pending plan pd (c: the cluster's result, nil when the
// revision lacks it), is the pending plan: still the one st records (read
// under the lock: a newer commit may have replaced the one approved), made
// against the same applied artifacts, rendering the same.
func CheckApproval(st *state.State, p *Plan, name string, c *ClusterResult, pd *state.Pending) error {
	if err := CheckPending(name, st.Clusters[name], pd); err != nil {
		return err
	}
	if base := ArtifactsDigest(st.Artifacts, name); base != pd.Base {
		return &ApprovalError{Cluster: name, Why: "its applied artifacts changed since the plan was made (another apply); the next reconcile plans it again"}
	}
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
	if got := ArtifactsDigest(p.Artifacts, name); got != pd.Digest {
		return &ApprovalError{Cluster: name, Why: fmt.Sprintf("revision %s no longer renders to the plan awaiting approval (another tool version?)", source.Short(pd.Revision))}
	}
	return nil
}
