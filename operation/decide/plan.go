package decide

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/fuelsync/fuelsync/diff"
	"github.com/fuelsync/fuelsync/state"
)

// PlanFormatVersion is the format_version of plan files.
const PlanFormatVersion = "1"

// Plan is the difference between the applied state of a work directory and a
// render of the configuration; saved as a plan file, it is what apply applies.
type Plan struct {
	FormatVersion string `json:"format_version"`
	// Lineage and Serial are those of the state the plan was made against: apply
	// refuses the plan once the state has moved.
	Lineage string `json:"lineage"`
	Serial  int64  `json:"serial"`
	// Revision is the source revision rendered: a commit sha, or a working
	// tree's ("<sha>+dirty.<digest>", or "working-tree": source.IsWorkingTree).
	Revision    string `json:"revision"`
	ToolVersion string `json:"tool_version"`
	// Artifacts are the digests of every desired artifact (path → sha256).
	Artifacts      map[string]string `json:"artifacts"`
	ChangesPresent bool              `json:"changes_present"`
	Changes        *diff.ChangeSet   `json:"changes"`
	// InputFiles is the loader.InputFingerprint of the rendered revision
	// (empty when unknown); apply records it in the state (State.Inputs).
	InputFiles string `json:"input_files,omitempty"`
	// ClusterFiles are the loader.ClusterFingerprints of the rendered
	// revision; apply records them in the state (State.ClusterInputs) when
	// InputFiles is known.
	ClusterFiles map[string]string `json:"cluster_files,omitempty"`
	// Targets are the clusters the plan covers (plan --cluster); empty:
	// every cluster. The others keep their artifacts and records.
	Targets []string `json:"targets,omitempty"`
	// Clusters are every cluster's record once the plan is applied: its
	// status (held, awaiting approval, ...) and why. Empty in a plan made
	// before clusters were units: every cluster synced.
	Clusters []ClusterRecord `json:"clusters,omitempty"`
	// StatusChanged says applying the plan changes a cluster's recorded
	// status even where no artifact changes (a held cluster fixed): apply
	// writes a new state for it.
	StatusChanged bool `json:"status_changed,omitempty"`
	// Again says a cluster waits for another that this plan changes: the
	// same inputs may give another plan once it is applied, so the state
	// applying it records no fingerprint of the whole inputs.
	Again bool `json:"again,omitempty"`
	// SetRevision, when set, is the revision of the set the plan applies
	// (its manifest, the state's revision) when it is not Revision: a plan
	// that changes statuses only keeps the applied set's files, manifest
	// included.
	SetRevision string `json:"set_revision,omitempty"`
}

// StaleError says a saved plan was made against another state; or, Asked,
// that the state moved while the plan shown awaited its confirmation.
type StaleError struct {
	Plan, State *state.State
	PlanFile    string
	Asked       bool
}

func (e *StaleError) Error() string {
	if e.Asked {
		now := fmt.Sprintf("serial %d", e.State.Serial)
		if e.Plan.Lineage != e.State.Lineage && e.Plan.Lineage != "" {
			now += " of another lineage (" + e.State.Lineage + ")"
		}
		return fmt.Sprintf("the state moved while the plan awaited confirmation: the plan was made against serial %d, the state is now at %s (applied revision %.12s); run apply again",
			e.Plan.Serial, now, e.State.Revision)
	}
	if e.Plan.Lineage != e.State.Lineage && e.Plan.Lineage != "" {
		return fmt.Sprintf("the plan %s is stale: it was made for state lineage %s, but the work directory's state has lineage %s; run plan again",
			e.PlanFile, e.Plan.Lineage, e.State.Lineage)
	}
	return fmt.Sprintf("the plan %s is stale: it was made against state serial %d, but the state is now at serial %d (applied revision %.12s); run plan again",
		e.PlanFile, e.Plan.Serial, e.State.Serial, e.State.Revision)
}

// CheckFresh returns a *StaleError when the state moved since the plan.
func (p *Plan) CheckFresh(st *state.State, planFile string) error {
	if p.Lineage != st.Lineage || p.Serial != st.Serial {
		return &StaleError{Plan: &state.State{Lineage: p.Lineage, Serial: p.Serial}, State: st, PlanFile: planFile}
	}
	return nil
}

// SetRev is the revision of the set p applies.
func (p *Plan) SetRev() string {
	if p.SetRevision != "" {
		return p.SetRevision
	}
	return p.Revision
}

// UnchangedPlan is the plan of a revision whose inputs are those of the
// applied state st (st.Unchanged): no changes, made without rendering. It
// cannot be applied (there is nothing to apply) nor saved for apply.
func UnchangedPlan(st *state.State, revision, toolVersion, files string) *Plan {
	return &Plan{
		FormatVersion: PlanFormatVersion,
		Lineage:       st.Lineage,
		Serial:        st.Serial,
		Revision:      revision,
		ToolVersion:   toolVersion,
		Artifacts:     st.Artifacts,
		Changes:       &diff.ChangeSet{},
		InputFiles:    files,
	}
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

// Record returns the plan's record of cluster name, or nil.
func (p *Plan) Record(name string) *ClusterRecord {
	for i := range p.Clusters {
		if p.Clusters[i].Name == name {
			return &p.Clusters[i]
		}
	}
	return nil
}

// StatusChanged says whether applying p changes a cluster's recorded status
// (or its problems, or its pending plan) even where no artifact changes.
func StatusChanged(st *state.State, p *Plan) bool {
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

// PendingOf is the pending plan of cluster name, rendered to digests with
// change (nil: none) against st, of revision rev.
func PendingOf(st *state.State, digests map[string]string, change *diff.ClusterChange, name, rev string) *state.Pending {
	pd := &state.Pending{Revision: rev, Digest: ArtifactsDigest(digests, name), Base: ArtifactsDigest(st.Artifacts, name)}
	if change != nil {
		pd.Summary = diff.Summarize([]*diff.ClusterChange{change})
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

// SamePlan says how the plan p, made again from a saved plan's revision,
// differs from the saved plan ("" when it does not).
func SamePlan(saved, p *Plan) string {
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
			was := saved.Record(rec.Name)
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

// ParsePlan reads the plan file data (JSON) read from path: a plan of
// another format_version, or without artifacts, is refused.
func ParsePlan(data []byte, path string) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%s is not a fuelsync plan file: %w", path, err)
	}
	if p.FormatVersion != PlanFormatVersion || p.Artifacts == nil {
		return nil, fmt.Errorf("%s is not a fuelsync plan file of format_version %s", path, PlanFormatVersion)
	}
	return &p, nil
}

// Encode is the plan file of p (indented JSON, a last newline).
func (p *Plan) Encode() ([]byte, error) {
	data, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// Settle completes the plan p, made against st, once its records are in:
// whether applying it changes a recorded status; and, when it changes no
// artifact, the applied set's files, manifest and revision, kept as they
// are.
func Settle(st *state.State, p *Plan) {
	p.StatusChanged = StatusChanged(st, p)
	if !p.ChangesPresent && st.Serial > 0 {
		p.Artifacts, p.SetRevision = st.Artifacts, st.Revision
	}
}
